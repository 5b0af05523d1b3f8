"""Spark's own joins where they mean the same: a ``hash_join`` (``inner`` or ``left``) or a batch
``co_group`` run as a Spark join or ``groupBy`` in the JVM.

On the local executor a hash join is one vertex (`HashJoinP`) holding the broadcast build side in
a dict, and a batch co-group one vertex (`CoGroupP`) behind two edges partitioned by key. On
Spark, with ``SparkRunner(spark_joins=True)`` (off by default: measured slower than the Python
join on this machine, ``jetbench bench spark-joins``, benchmarks/README.md) and when the join can
be lowered (`why_python` says why not), its two inbound edges are cut and:

1. **Keys, in Python, before the shuffle.** In each producer stage a vertex named after the join
   vertex (`KeyItems`, so an error in the user's key function names the join) turns each item
   into ``(key, item)``; what crosses the cut is one row per item (`JoinSide`): the key as typed
   columns (`jetbench.spark.lowering.encode_key` of `join_key`), its `stable_hash` ``h``, the
   item pickled (``x``) with its sequence number (``q``), and the key pickled (``kx``) where
   Spark's scalar columns cannot give it back as it was (a tuple, or a co-group's key that
   `join_key` changed; nested columns cross from the JVM to Python slowly, so they stay there).
2. **The join, in Spark.** ``hash_join``: a full outer join of the sides on ``h`` and the key
   columns (null equal to null), its unmatched rows kept as ``how`` says; ``co_group``: ``groupBy(key columns)`` over both sides, each side's items
   ``sort_array(collect_list((q, x)))`` (in the order they were sent), the key of the group its
   first row's. Spark's rows go, pickled, to the join vertex of the consuming stage, replaced by
   `JoinedHashJoinP` / `JoinedCoGroupP`, which emits what `HashJoinP` / `CoGroupP` would.
3. **Keys Spark cannot hold, on the Python path.** A key whose typed columns would not mean
   Python's equality (`encode_key` refuses it: a huge int, NaN, a subclass, a nested tuple, a
   frozenset, ...) marks its hash ``h``: every row of *either* side with a marked ``h`` skips
   Spark's join and goes, partitioned by ``h``, to the replaced join vertex, which joins them in
   Python as the local executor does. Equal keys hash alike (`stable_hash`), so a key Spark
   cannot hold meets every key equal to it there, whatever its type.

Keys Python calls equal across types (``1 == 1.0 == True``, ``(1, "a") == (True, "a")``) meet in
Spark: `join_key` makes bools and integral floats within 64 bits ints first (also inside tuples),
so that two keys have equal typed columns exactly when Python calls them equal: after it, a key's
type is str, int, non-integral float (not NaN), bytes, None or a flat tuple of these, and no two
keys of different types among them are equal in Python. (``-0.0`` becomes ``0``; an integral
float beyond 64 bits stays a float: the only int equal to it does not fit 64 bits and takes the
Python path, and with it every row of its hash.) A co-group's key is the one the items had, not
``join_key``'s: the first row's of its group (left side first), pickled in ``kx`` when
`join_key` changed it.

Order: a hash join's pairs and a co-group's groups come in no order the local executor promises
(it has none over several instances); a co-group's lists hold each side's items in the order
they were sent (by partition, then arrival), one order the local executor can give.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pyarrow as pa

from ..core.dag import DAG, Routing, Vertex
from ..core.inbox import Inbox
from ..processors.co_group import CoGroup
from ..processors.emitter import EmittingProcessor
from ..processors.hash_join import HashJoin
from ..processors.transform import map_processor
from ._hash import stable_hash
from .lowering import KEY_FIELDS, TypedAggregation, TypedForm, decode_key, encode_key
from .stage_task import CHUNK, OUTPUT_SCHEMA, Outlet, Tagger, dumps, to_batches

__all__ = [
    "JOIN_KINDS",
    "Joined",
    "JoinedCoGroup",
    "JoinedCoGroupP",
    "JoinedHashJoin",
    "JoinedHashJoinP",
    "JoinSide",
    "KeyItems",
    "TypedJoin",
    "join_key",
    "residual_key",
    "why_python",
]

#: the join kinds that lower (their supplier classes)
JOIN_KINDS = (HashJoin, CoGroup)
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_KEYS = [name for name, _ in KEY_FIELDS]
#: the key columns of scalars (s, i, f, b, y); the last one (t) holds tuples
_SCALARS = len(KEY_FIELDS) - 1
_NO_TUPLE = (None,)


def _canonical_scalar(x: Any) -> Any:
    t = type(x)
    if t is bool:
        return int(x)
    if t is float and x.is_integer() and _I64_MIN <= x <= _I64_MAX:
        n = int(x)
        if _I64_MIN <= n <= _I64_MAX:
            return n
    return x


def join_key(key: Any) -> Any:
    """``key`` with bools and integral floats within 64 bits as ints (flat tuples' members too),
    so that equal keys of different types have equal typed columns; ``key`` itself when nothing changes.

    >>> join_key(True), join_key(2.0), join_key(-0.0), join_key(2.5), join_key((1.0, "a", False))
    (1, 2, 0, 2.5, (1, 'a', 0))
    >>> k = ("a", 1)
    >>> join_key(k) is k
    True
    """
    if type(key) is tuple:
        members = tuple(_canonical_scalar(x) for x in key)
        return key if all(a is b for a, b in zip(members, key, strict=True)) else members
    return _canonical_scalar(key)


def _signed(h: int) -> int:
    return h - (1 << 64) if h > _I64_MAX else h


def residual_key(triple: tuple[Any, Any, Any]) -> Any:
    """What the rows on the Python path, ``(h, key, item)``, are partitioned by: the key's hash."""
    return triple[0]


class Joined:
    """Spark's output of a lowered join on its way to the replaced join vertex: a list of pairs of
    pickled items (hash join; the right one None for ``how="left"`` without match) or of groups
    ``(key, [pickled items], [pickled items])`` (co-group). It travels as ``(0, None, Joined)``,
    beside the ``(h, key, item)`` triples of the Python path."""

    __slots__ = ("rows",)

    def __init__(self, rows: list[Any]):
        self.rows = rows

    def __getstate__(self) -> list[Any]:
        return self.rows

    def __setstate__(self, rows: list[Any]) -> None:
        self.rows = rows


class KeyItems:
    """The producer's map step of a lowered join side: ``item -> (key, item, stable_hash(key))``
    (an unhashable key raises here, in the vertex named after the join, as it would in the join)."""

    def __init__(self, key_fn: Callable[[Any], Hashable]):
        self.key_fn = key_fn
        self.__name__ = "join-key"

    def __call__(self, item: Any) -> tuple[Any, Any, int]:
        key = self.key_fn(item)
        return key, item, stable_hash(key)


class _ItemForm(TypedForm):
    """A join side's item columns (no aggregation: Spark joins or groups the rows)."""

    name = "items"

    def fields(self, p: str) -> list[pa.Field]:
        return [pa.field(f"{p}q", pa.int64()), pa.field(f"{p}x", pa.binary())]


@dataclass
class JoinSide(TypedAggregation):
    """One lowered input of a join (``side`` 0: probe / left, 1: build / right): the cut edge on
    ``channel``, whose producer emits one typed row per item (see the module doc)."""

    side: int = 0
    key_fn: Callable[[Any], Hashable] | None = None
    join: TypedJoin | None = None

    def names(self) -> list[str]:
        """The columns, without the channel's prefix: the key's, then h, r (Python path), q, x, kx."""
        return [f"k_{name}" for name in _KEYS] + ["h", "r", "q", "x", "kx"]

    def fields(self) -> list[pa.Field]:
        types = [t for _, t in KEY_FIELDS] + [pa.int64(), pa.bool_(), pa.int64(), pa.binary(), pa.binary()]
        return [pa.field(self.prefix + name, t) for name, t in zip(self.names(), types, strict=True)]

    def encode_pairs(self, pairs: list[Any], seq: int) -> tuple[list[list[Any]], list[Any]]:
        """`KeyItems`' ``(key, item, hash)`` triples as typed rows, every one (nothing is left for
        pickled chunks)."""
        columns: list[list[Any]] = [[] for _ in range(len(KEY_FIELDS) + 5)]
        keys = columns[:len(KEY_FIELDS)]
        hs, rs, qs, xs, kxs = columns[len(KEY_FIELDS):]
        no_key = (None,) * len(KEY_FIELDS)
        keep_key = self.join is not None and self.join.kind == "co_group"
        for key, item, h in pairs:
            canonical = join_key(key)
            typed = encode_key(canonical)
            hs.append(_signed(h))
            qs.append(seq)
            seq += 1
            xs.append(dumps(item))
            if typed is None:
                rs.append(True)
                kxs.append(dumps(key))
                typed = no_key
            else:
                rs.append(False)
                # a tuple key (its columns stay in the JVM) and, for a co-group, a key join_key changed
                kxs.append(dumps(key) if type(key) is tuple or keep_key and canonical is not key else None)
            for column, value in zip(keys, typed, strict=True):
                column.append(value)
        return columns, []

    def pre_vertex(self) -> tuple[str, Callable[[], Any]] | None:
        assert self.join is not None and self.key_fn is not None
        return self.join.vertex, map_processor(KeyItems(self.key_fn))

    def describe(self) -> str:
        assert self.join is not None
        return self.join.describe()


@dataclass
class TypedJoin:
    """A lowered join vertex: its kind (``hash_join`` or ``co_group``), ``how`` (a hash join's) and
    the channels of its two lowered inputs."""

    vertex: str
    kind: str
    how: str
    left: int
    right: int
    sides: list[JoinSide] = field(default_factory=list)

    def describe(self) -> str:
        if self.kind == "co_group":
            return "groupBy(key).agg(collect_list(left), collect_list(right))"
        return f"join(left, right, key, {self.how!r})"

    def replacement(self) -> Callable[[], Any]:
        """The supplier that runs in place of the join vertex."""
        return JoinedCoGroup() if self.kind == "co_group" else JoinedHashJoin(self.how)

    def spark_rows(self, left_rows: Any, right_rows: Any, inputs: tuple[int, int], partitions: int) -> dict[int, Any]:
        """The rows (`OUTPUT_SCHEMA`) of each input channel into the consuming stage (``inputs``:
        the stage's input ids of the left and right edge, ``partitions`` its partitions), made from
        the producers' rows of the two channels in one pass over each: both sides go through one
        shuffle by ``h`` (a window marks the hashes with a row on the Python path, ``py``), Spark
        joins the others, and one ``mapInArrow`` (`JoinOutput`) sends Spark's rows (on the left input)
        and those on the Python path (on their own inputs, partitioned by hash) on."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        keys = [f"k_{n}" for n in _KEYS]
        both = self._plain(left_rows, self.sides[0], 0).unionAll(self._plain(right_rows, self.sides[1], 1))
        # one shuffle by h marks the hashes of rows on the Python path (a window: the join's sides
        # below read that one shuffle, which Spark reuses, so the producers run once; a filter would
        # be pushed below a shuffle of its own and run them twice)
        marked = both.withColumn("py", F.max("r").over(Window.partitionBy("h")))
        rows = self._co_group(marked, keys, F) if self.kind == "co_group" else self._hash_join(marked, keys, F)
        out = rows.mapInArrow(
            JoinOutput(self.kind, Tagger(inputs[0], Routing.UNICAST, None, partitions),
                       [Tagger(i, Routing.PARTITIONED, residual_key, partitions) for i in inputs]), OUTPUT_SCHEMA)
        return {self.left: out, self.right: out.limit(0)}

    def _plain(self, rows: Any, side: JoinSide, number: int) -> Any:
        """A side's rows with its columns' unprefixed names and its number (0 left, 1 right)."""
        from pyspark.sql import functions as F

        return rows.select(*[rows[side.prefix + name].alias(name) for name in side.names()],
                           F.lit(number).alias("side"))

    def _hash_join(self, marked: Any, keys: list[str], F: Any) -> Any:
        """A full outer join: the rows on the Python path (``py``) match nothing and come out alone,
        as do unmatched left rows (``how="left"``: ``(item, None)``); other rows alone are dropped."""
        columns = [*keys, "h", "kx", "x", "py"]
        left = marked.where(F.col("side") == 0).select(*columns).alias("l")
        right = marked.where(F.col("side") == 1).select(*columns).alias("r")
        condition = [F.col("l.h") == F.col("r.h"), ~F.col("l.py"), ~F.col("r.py")] + \
            [F.col(f"l.{k}").eqNullSafe(F.col(f"r.{k}")) for k in keys]
        joined = left.join(right, condition, "full_outer")
        lone_left = F.col("l.py") | F.lit(self.how == "left")
        joined = joined.where((F.col("l.x").isNotNull() & (F.col("r.x").isNotNull() | lone_left))
                              | (F.col("l.x").isNull() & F.col("r.py")))
        left_side = F.col("l.x").isNotNull()
        python = F.coalesce(F.col("l.py"), F.lit(False)) | F.col("l.x").isNull()
        return joined.select(
            python.cast("int").alias("t"),
            *[F.when(left_side, F.col(f"l.{k}")).otherwise(F.col(f"r.{k}")).alias(k) for k in keys[:_SCALARS]],
            F.when(left_side, F.col("l.kx")).otherwise(F.col("r.kx")).alias("kx"),
            F.when(left_side, F.col("l.x")).otherwise(F.col("r.x")).alias("lx"),
            F.when(left_side, F.col("r.x")).alias("rx"),
            F.when(left_side, F.col("l.h")).otherwise(F.col("r.h")).alias("h"),
            F.when(left_side, F.lit(0)).otherwise(F.lit(1)).alias("side"))

    def _co_group(self, marked: Any, keys: list[str], F: Any) -> Any:
        """``groupBy(key)``; a row on the Python path is a group of its own (its side and ``q`` in
        the grouping), sent on alone."""
        def items(side: int) -> Any:
            return F.sort_array(F.collect_list(F.when(F.col("side") == side, F.struct("q", "x"))))

        alone = F.when(F.col("py"), F.struct("side", "q")).alias("alone")
        groups = marked.groupBy("h", *keys, "py", alone).agg(
            F.min_by("kx", F.struct("side", "q")).alias("kx"), items(0).alias("ls"), items(1).alias("rs"))
        return groups.select(F.col("py").cast("int").alias("t"), *keys[:_SCALARS], "kx",
                             F.when(F.col("py"), F.coalesce(F.get("ls", 0)["x"], F.get("rs", 0)["x"])).alias("lx"),
                             F.lit(None).cast("binary").alias("rx"), "h",
                             F.when(F.size("ls") > 0, F.lit(0)).otherwise(F.lit(1)).alias("side"),
                             *[F.transform(c, lambda e: e["x"]).alias(c) for c in ("ls", "rs")])


#: the columns of `JoinOutput`'s input: ``t`` (0: Spark's row, 1: a row on the Python path), the
#: scalar key columns (a tuple key is in ``kx``: nested columns cross to Python slowly), ``kx``,
#: ``lx``/``rx`` (a hash join's pair), ``h``, ``side``, and a co-group's lists ``ls``/``rs``
_KX, _LX, _RX, _H, _SIDE, _LS, _RS = range(1 + _SCALARS, 8 + _SCALARS)


class JoinOutput:
    """The ``mapInArrow`` function after Spark's join: Spark's rows, pickled as they are, as
    `Joined` items of the consuming stage's left input (``joined``: round-robin over its
    partitions), and the rows on the Python path as ``(h, key, item)`` triples (``python``: one
    tagger per side, partitioned by ``h``)."""

    def __init__(self, kind: str, joined: Tagger, python: list[Tagger]):
        self.kind = kind
        self.joined = joined
        self.python = python

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        outlets = [Outlet(self.joined.input_id, self.joined), *(Outlet(t.input_id, t) for t in self.python)]
        return to_batches(self._rows(outlets, batches))

    def _rows(self, outlets: list[Outlet], batches: Iterator[pa.RecordBatch]) -> Iterator[Any]:
        held = 0
        for batch in batches:
            if not batch.num_rows:
                continue
            joined, python = self._items(batch)
            if joined:
                outlets[0].add([(0, None, Joined(joined))])
            for side, triples in enumerate(python):
                if triples:
                    outlets[1 + side].add(triples)
            held += batch.num_rows
            if held >= CHUNK * 16:
                for outlet in outlets:
                    yield from outlet.rows()
                held = 0
        for outlet in outlets:
            yield from outlet.rows()

    def _items(self, batch: pa.RecordBatch) -> tuple[list[Any], list[list[Any]]]:
        columns = [c.to_pylist() for c in batch.columns]
        loads = pickle.loads
        n = 1 + _SCALARS
        joined: list[Any] = []
        python: list[list[Any]] = [[], []]
        co_group = self.kind == "co_group"
        for row in zip(*columns, strict=True):
            if row[0]:
                kx = row[_KX]
                key = loads(kx) if kx is not None else decode_key(row[1:n] + _NO_TUPLE)
                python[row[_SIDE]].append((row[_H], key, loads(row[_LX])))
            elif co_group:
                kx = row[_KX]
                key = loads(kx) if kx is not None else decode_key(row[1:n] + _NO_TUPLE)
                joined.append((key, row[_LS], row[_RS]))
            else:
                joined.append((row[_LX], row[_RX]))
        return joined, python


class _JoinedP(EmittingProcessor):
    """Base of the replaced join vertices: `Joined` items on input 0 are emitted as they come
    (room permitting), the rest is the Python path's ``(h, key, item)`` triples (`_python`)."""

    snapshot_support: ClassVar[str] = "unsupported"  # a Spark task is retried whole

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if ordinal == 1:
            self._python(1, inbox.take())
            return
        emitter = self._emitter
        room = emitter.free_room()
        while room > 0 and inbox:
            triple = inbox.poll()
            payload = triple[2]
            if type(payload) is Joined:
                out = self._joined(payload.rows)
            else:
                out = self._python(0, [triple])
            if out:
                emitter.emit(out)
                room = emitter.free_room()

    def _joined(self, rows: list[Any]) -> list[Any]:
        raise NotImplementedError

    def _python(self, ordinal: int, triples: list[Any]) -> list[Any]:
        raise NotImplementedError


class JoinedHashJoinP(_JoinedP):
    """In place of a lowered `HashJoinP`: emits Spark's pairs, and joins the Python path's rows
    (the build side's, input 1, loaded first) as `HashJoinP` does."""

    def __init__(self, how: str):
        self.how = how
        self.table: dict[Any, list[Any]] = {}

    def _joined(self, rows: list[Any]) -> list[Any]:
        loads = pickle.loads
        return [(loads(lx), None if rx is None else loads(rx)) for lx, rx in rows]

    def _python(self, ordinal: int, triples: list[Any]) -> list[Any]:
        table = self.table
        if ordinal == 1:
            for _, key, item in triples:
                matches = table.get(key)
                if matches is None:
                    table[key] = [item]
                else:
                    matches.append(item)
            return []
        miss = [None] if self.how == "left" else ()
        return [(left, right) for _, key, left in triples for right in table.get(key) or miss]


class JoinedCoGroupP(_JoinedP):
    """In place of a lowered `CoGroupP`: emits Spark's groups, and groups the Python path's rows
    as `CoGroupP` does, when both inputs complete (they share no key with Spark's groups)."""

    def __init__(self) -> None:
        self.groups: dict[Any, tuple[list[Any], list[Any]]] = {}
        self._results: Iterator[Any] | None = None

    def _joined(self, rows: list[Any]) -> list[Any]:
        loads = pickle.loads
        return [(key, [loads(x) for x in lefts], [loads(x) for x in rights]) for key, lefts, rights in rows]

    def _python(self, ordinal: int, triples: list[Any]) -> list[Any]:
        groups = self.groups
        for _, key, item in triples:
            group = groups.get(key)
            if group is None:
                group = groups[key] = ([], [])
            group[ordinal].append(item)
        return []

    def complete(self) -> bool:
        if self._results is None:
            self._results = ((k, lefts, rights) for k, (lefts, rights) in self.groups.items())
        return self._emitter.emit_from(self._results)


class JoinedHashJoin:
    """The supplier of `JoinedHashJoinP`."""

    def __init__(self, how: str):
        self.how = how

    def __call__(self) -> JoinedHashJoinP:
        return JoinedHashJoinP(self.how)


class JoinedCoGroup:
    """The supplier of `JoinedCoGroupP`."""

    def __call__(self) -> JoinedCoGroupP:
        return JoinedCoGroupP()


def why_python(dag: DAG, v: Vertex, enabled: bool, arrow_sources: Any) -> str | None:
    """Why join vertex ``v`` (a `HashJoin` or `CoGroup` supplier) keeps the Python path, or None
    if Spark can join for it (its two inputs are then cut: `cut`)."""
    spec = v.supplier
    if not enabled:
        return "Spark's joins are off (SparkRunner(spark_joins=True) turns them on)"
    if isinstance(spec, HashJoin) and spec.timestamped:
        return "its probe items are timestamped"
    edges = dag.inbound_edges(v)
    if sorted(e.destination_ordinal for e in edges) != [0, 1]:
        return "it has not exactly one edge into each input"
    for e in edges:
        if e.source.name in arrow_sources:
            return f"its input from {e.source.name!r} is read by Spark, not made in a Python stage"
    if isinstance(spec, CoGroup):
        for e in edges:
            key = spec.left_key if e.destination_ordinal == 0 else spec.right_key
            if e.routing is not Routing.PARTITIONED or e.key_fn is not key:
                return f"its input from {e.source.name!r} is not partitioned by the co-group's key"
    return None


def lower_join(dag: DAG, v: Vertex, channel: Callable[[Any], int]) -> TypedJoin:
    """The typed form of join vertex ``v`` (`why_python` said it lowers), its sides made."""
    spec = v.supplier
    assert isinstance(spec, JOIN_KINDS)
    edges = sorted(dag.inbound_edges(v), key=lambda e: e.destination_ordinal)
    kind = "co_group" if isinstance(spec, CoGroup) else "hash_join"
    join = TypedJoin(v.name, kind, getattr(spec, "how", ""), channel(edges[0]), channel(edges[1]))
    for e, key_fn in zip(edges, (spec.left_key, spec.right_key), strict=True):
        join.sides.append(JoinSide(channel(e), _ItemForm(), True, e.destination_ordinal, key_fn, join))
    return join
