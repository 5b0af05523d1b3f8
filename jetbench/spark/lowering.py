"""Spark's own aggregation where it means the same: the typed (Spark) form of a built-in keyed
aggregation's accumulators.

A keyed aggregation in a jetbench DAG is two vertices (Jet's two-stage aggregation):
``accumulate_by_key`` folds the items of each instance into one accumulator per key, and a
partitioned edge brings the ``(key, accumulator)`` pairs to ``combine_by_key``, which combines and
finishes them. On Spark the first vertex stays in the Python stage (the user's key and value
functions run there, with the batch kernels); what crosses the cut edge is then **typed Arrow
columns** (the key, and the accumulator in Spark types) whenever a pair fits them, and Spark does
the shuffle and the combining with ``groupBy(key).agg(...)`` in the JVM. Spark's combined
accumulators go on to the combine vertex (one per key), which finishes them as on the local
executor.

What lowers (`lower`, from the operation's ``recipe``; any other operation, ``top_n`` or a
hand-made one, keeps the Python path, and `lower` says why):

=============  ============================  ==============================================
operation      accumulator in Spark          Spark's combine
=============  ============================  ==============================================
counting       ``long``                      ``sum``
summing        ``long``                      ``sum`` as ``decimal(38,0)`` (exact, no overflow)
averaging      ``long`` sum, ``long`` count  ``sum`` as ``decimal(38,0)``, ``sum``
min_by/max_by  ``double`` of ``fn(acc)``,    ``min_by``/``max_by`` of the pickled item,
               a sequence number, the item   ordered by ``(value, sequence)``
to_list        a sequence number, the list   ``sort_array(collect_list(...))``: lists in order
to_set         ``array<string>``,            ``array_distinct(flatten(collect_list(...)))``
               ``array<long>``
all_of         the columns of each part      each part's
=============  ============================  ==============================================

Typing is decided **per pair, conservatively**, so that a lowered job never gives another
result than the Python path (`encode_pairs`):

- keys: exactly ``str`` (encodable as UTF-8) or exactly ``int`` within 64 bits. Python's equality
  is Spark's there; ``bool``, ``float``, subclasses (``StrEnum``, ``IntEnum``), tuples and any other
  key keep the Python path, because ``1 == 1.0 == True`` in Python and not in Spark's grouping.
- sums and averages: only accumulators that are exactly ``int`` within 64 bits; Spark adds them as
  ``decimal(38,0)``, so no sum can overflow (2**63 times fewer pairs than 10**38 allow). A float
  accumulator keeps the Python path: Spark would add floats in another order than the combine
  vertex, and float addition rounds differently in another order.
- min_by/max_by: ``fn(acc)`` exactly ``int`` within +-2**53 (exact as a double) or a ``float``
  that is not NaN (``-0.0`` taken as ``0.0``, as Python's ``<`` does); ties go to the accumulator
  sent first (by partition, then order), as the combine vertex keeps the first of equals.
- to_set: elements exactly ``str`` or exactly ``int`` within 64 bits.

A pair that does not fit (a mixed-type value, a float key, a huge int) travels pickled, as
before, to the same combine vertex, partitioned by the same key hash: there it meets Spark's
accumulator of an equal key (``1`` from Spark, ``1.0`` pickled) and the operation's own
``combine`` merges them, as on the local executor. Mixed types therefore cost speed, never the
result, and never an error the local executor would not give.

Everything here is pure but for `TypedAggregation.aggregate` (which imports pyspark when it
builds Spark's expressions); the encoders and decoders run in the Spark Python workers.
"""

from __future__ import annotations

import operator
import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa

from ..processors.aggregate_operation import AggregateOperation, adds_one, to_list, to_set

__all__ = [
    "AllOf",
    "Averaging",
    "Counting",
    "Extreme",
    "Summing",
    "ToList",
    "ToSet",
    "TypedAggregation",
    "TypedForm",
    "ddl",
    "encode_key",
    "lower",
    "spark_type",
]

_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_EXACT_DOUBLE = 1 << 53


def _fits_i64(x: Any) -> bool:
    return type(x) is int and _I64_MIN <= x <= _I64_MAX


def _fits_str(x: Any) -> bool:
    if type(x) is not str:
        return False
    if x.isascii():
        return True
    try:
        x.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: Arrow cannot hold them
        return False
    return True


def encode_key(key: Any) -> tuple[str | None, int | None] | None:
    """The key columns of ``key``, or None when Spark cannot group it as Python does.

    >>> encode_key("fox"), encode_key(7), encode_key(True), encode_key(1.0)
    (('fox', None), (None, 7), None, None)
    """
    if _fits_str(key):
        return key, None
    if _fits_i64(key):
        return None, key
    return None


class TypedForm:
    """One operation's accumulator in Spark: its columns (named after a prefix), how a Python
    accumulator becomes their values (`encode`: None when it does not fit), Spark's expressions
    that combine them (`aggregates`), and how their result becomes a Python accumulator again
    (`decode`: ``width`` result columns)."""

    name = ""
    width = 1

    def fields(self, p: str) -> list[pa.Field]:
        raise NotImplementedError

    def encode(self, acc: Any, seq: int) -> tuple[Any, ...] | None:
        raise NotImplementedError

    def aggregates(self, p: str, F: Any) -> list[Any]:
        raise NotImplementedError

    def decode(self, values: Sequence[Any]) -> Any:
        raise NotImplementedError

    def describe(self, p: str) -> str:
        return self.name


class Counting(TypedForm):
    name = "sum(count)"

    def fields(self, p: str) -> list[pa.Field]:
        return [pa.field(f"{p}n", pa.int64())]

    def encode(self, acc: Any, seq: int) -> tuple[Any, ...] | None:
        return (acc,) if _fits_i64(acc) else None

    def aggregates(self, p: str, F: Any) -> list[Any]:
        return [F.sum(f"{p}n").alias(f"{p}n")]

    def decode(self, values: Sequence[Any]) -> Any:
        return int(values[0])


class Summing(TypedForm):
    name = "sum(decimal(38,0))"

    def fields(self, p: str) -> list[pa.Field]:
        return [pa.field(f"{p}s", pa.int64())]

    def encode(self, acc: Any, seq: int) -> tuple[Any, ...] | None:
        return (acc,) if _fits_i64(acc) else None

    def aggregates(self, p: str, F: Any) -> list[Any]:
        return [F.sum(F.col(f"{p}s").cast("decimal(38,0)")).alias(f"{p}s")]

    def decode(self, values: Sequence[Any]) -> Any:
        return _int(values[0])


class Averaging(TypedForm):
    name = "sum(decimal(38,0)), sum(count)"
    width = 2

    def fields(self, p: str) -> list[pa.Field]:
        return [pa.field(f"{p}s", pa.int64()), pa.field(f"{p}c", pa.int64())]

    def encode(self, acc: Any, seq: int) -> tuple[Any, ...] | None:
        if type(acc) is tuple and len(acc) == 2 and _fits_i64(acc[0]) and _fits_i64(acc[1]):
            return acc
        return None

    def aggregates(self, p: str, F: Any) -> list[Any]:
        return [F.sum(F.col(f"{p}s").cast("decimal(38,0)")).alias(f"{p}s"), F.sum(f"{p}c").alias(f"{p}c")]

    def decode(self, values: Sequence[Any]) -> Any:
        return _int(values[0]), int(values[1])


class Extreme(TypedForm):
    """min_by / max_by: the item travels pickled, ordered by ``fn(item)`` as a double, then by
    the sequence number of its row (ties: the first sent, as the combine vertex keeps the first)."""

    width = 1

    def __init__(self, fn: Callable[[Any], Any], largest: bool):
        self.fn = fn
        self.largest = largest
        self.name = "max_by" if largest else "min_by"

    def fields(self, p: str) -> list[pa.Field]:
        return [pa.field(f"{p}v", pa.float64()), pa.field(f"{p}q", pa.int64()), pa.field(f"{p}x", pa.binary())]

    def encode(self, acc: Any, seq: int) -> tuple[Any, ...] | None:
        if acc is None:
            return None
        try:
            v = self.fn(acc)
        except Exception:  # the combine vertex calls it again, and reports it
            return None
        t = type(v)
        if t is float:
            if v != v:  # NaN: Python's < is never true, Spark orders it last
                return None
            v = v + 0.0  # -0.0 -> 0.0
        elif t is int or t is bool:
            if not -_EXACT_DOUBLE <= v <= _EXACT_DOUBLE:
                return None
            v = float(v)
        else:
            return None
        blob = _pickled(acc)
        return None if blob is None else (v, seq, blob)

    def aggregates(self, p: str, F: Any) -> list[Any]:
        if self.largest:
            order = F.struct(F.col(f"{p}v"), (-F.col(f"{p}q")).alias("q"))
            return [F.max_by(f"{p}x", order).alias(f"{p}x")]
        return [F.min_by(f"{p}x", F.struct(f"{p}v", f"{p}q")).alias(f"{p}x")]

    def decode(self, values: Sequence[Any]) -> Any:
        return pickle.loads(values[0])

    def describe(self, p: str) -> str:
        return f"{self.name}(item, (value, order))"


class ToList(TypedForm):
    name = "sort_array(collect_list((order, list)))"

    def fields(self, p: str) -> list[pa.Field]:
        return [pa.field(f"{p}q", pa.int64()), pa.field(f"{p}x", pa.binary())]

    def encode(self, acc: Any, seq: int) -> tuple[Any, ...] | None:
        blob = _pickled(acc) if type(acc) is list else None
        return None if blob is None else (seq, blob)

    def aggregates(self, p: str, F: Any) -> list[Any]:
        entry = F.struct(F.col(f"{p}q").alias("q"), F.col(f"{p}x").alias("x"))
        return [F.sort_array(F.collect_list(entry)).alias(f"{p}x")]

    def decode(self, values: Sequence[Any]) -> Any:
        out: list[Any] = []
        for entry in values[0] or ():
            out += pickle.loads(entry["x"])
        return out


class ToSet(TypedForm):
    name = "array_distinct(flatten(collect_list(set)))"
    width = 2

    def fields(self, p: str) -> list[pa.Field]:
        return [pa.field(f"{p}s", pa.list_(pa.string())), pa.field(f"{p}i", pa.list_(pa.int64()))]

    def encode(self, acc: Any, seq: int) -> tuple[Any, ...] | None:
        if type(acc) is not set:
            return None
        strs, ints = [], []
        for x in acc:
            if _fits_str(x):
                strs.append(x)
            elif _fits_i64(x):
                ints.append(x)
            else:
                return None
        return strs, ints

    def aggregates(self, p: str, F: Any) -> list[Any]:
        return [F.array_distinct(F.flatten(F.collect_list(f"{p}{c}"))).alias(f"{p}{c}") for c in "si"]

    def decode(self, values: Sequence[Any]) -> Any:
        return set(values[0] or ()) | set(values[1] or ())


class AllOf(TypedForm):
    """all_of: a tuple of accumulators, each part in its own columns (``<prefix><i>_``)."""

    def __init__(self, parts: Sequence[TypedForm]):
        self.parts = tuple(parts)
        self.width = sum(part.width for part in self.parts)
        self.name = "all_of"

    def fields(self, p: str) -> list[pa.Field]:
        return [f for i, part in enumerate(self.parts) for f in part.fields(f"{p}{i}_")]

    def encode(self, acc: Any, seq: int) -> tuple[Any, ...] | None:
        if type(acc) is not tuple or len(acc) != len(self.parts):
            return None
        out: list[Any] = []
        for part, a in zip(self.parts, acc, strict=True):
            values = part.encode(a, seq)
            if values is None:
                return None
            out += values
        return tuple(out)

    def aggregates(self, p: str, F: Any) -> list[Any]:
        return [a for i, part in enumerate(self.parts) for a in part.aggregates(f"{p}{i}_", F)]

    def decode(self, values: Sequence[Any]) -> Any:
        out, at = [], 0
        for part in self.parts:
            out.append(part.decode(values[at:at + part.width]))
            at += part.width
        return tuple(out)

    def describe(self, p: str) -> str:
        return "all_of(" + ", ".join(part.describe(p) for part in self.parts) + ")"


def _pickled(obj: Any) -> bytes | None:
    """``obj`` pickled, or None when `pickle` cannot (the Python path pickles it its own way)."""
    try:
        return pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
    except Exception:
        return None


def _int(value: Any) -> int:
    """A ``decimal(38,0)`` sum (a `Decimal` from Arrow) as the exact int."""
    return int(value) if isinstance(value, Decimal | int) else int(Decimal(value))


_DDL = {pa.string(): "string", pa.int64(): "bigint", pa.float64(): "double", pa.binary(): "binary"}


def spark_type(t: pa.DataType) -> str:
    """The Spark SQL type of an Arrow type of the typed columns.

    >>> spark_type(pa.list_(pa.string()))
    'array<string>'
    """
    if pa.types.is_list(t):
        return f"array<{spark_type(t.value_type)}>"
    return _DDL[t]


def ddl(fields: Sequence[pa.Field]) -> str:
    """``fields`` as a Spark schema string (``", name type, ..."``, empty for none)."""
    return "".join(f", {f.name} {spark_type(f.type)}" for f in fields)


def lower(op: AggregateOperation) -> TypedForm | str:
    """The typed form of ``op`` (a library operation, read from its ``recipe`` and checked
    against the library's functions), or why it keeps the Python path.

    >>> from jetbench import aggregate
    >>> lower(aggregate.counting()).name, lower(aggregate.all_of(aggregate.summing(), aggregate.to_set())).name
    ('sum(count)', 'all_of')
    >>> lower(aggregate.top_n(3))
    'top_n has no Spark form here'
    """
    recipe = op.recipe
    if recipe is None:
        return "a hand-made AggregateOperation: Spark cannot run its functions"
    name, args = recipe
    if name == "counting" and adds_one(op) and op.combine is operator.add:
        return Counting()
    if name == "summing" and op.combine is operator.add:
        return Summing()
    if name == "averaging" and op.finish is not None:
        return Averaging()
    if name in ("min_by", "max_by") and len(args) == 1 and callable(args[0]):
        return Extreme(args[0], largest=name == "max_by")
    if name == "to_list" and op is to_list():
        return ToList()
    if name == "to_set" and op is to_set():
        return ToSet()
    if name == "all_of":
        parts = []
        for sub in args:
            form = lower(sub) if isinstance(sub, AggregateOperation) else "not an operation"
            if isinstance(form, str):
                return f"all_of: {form}"
            parts.append(form)
        return AllOf(parts)
    return f"{name} has no Spark form here"


@dataclass
class TypedAggregation:
    """A lowered cut edge (``channel``) and its accumulators' `form`.

    Its rows in the producer stage's output carry, besides the stage's own columns (``data`` among
    them), the typed columns of `fields`, named ``c<channel>_``: the key (``k_s`` or ``k_i``), a
    group column ``g`` and the accumulator's columns. A typed row has ``g = 0`` and no ``data``; the
    pairs that do not fit travel as pickled chunks in ``data``, each row with a ``g`` of its own, so
    that Spark's one ``groupBy(k_s, k_i, g, data)`` passes them through untouched (`aggregate`)."""

    channel: int
    form: TypedForm

    @property
    def prefix(self) -> str:
        return f"c{self.channel}_"

    def group_names(self) -> tuple[str, str, str]:
        p = self.prefix
        return f"{p}k_s", f"{p}k_i", f"{p}g"

    def fields(self) -> list[pa.Field]:
        """The typed columns this edge adds to its producer stage's output."""
        ks, ki, g = self.group_names()
        return [pa.field(ks, pa.string()), pa.field(ki, pa.int64()), pa.field(g, pa.int64()),
                *self.form.fields(f"{self.prefix}a_")]

    def encode_pairs(self, pairs: list[Any], seq: int) -> tuple[list[list[Any]], list[Any]]:
        """Split ``(key, accumulator)`` pairs into typed columns (one list per `fields`) and the
        pairs that keep the Python path. ``seq``: the sequence number of the first typed row."""
        form = self.form
        columns: list[list[Any]] = [[] for _ in self.fields()]
        rest: list[Any] = []
        for pair in pairs:
            key, acc = pair
            k = encode_key(key)
            values = form.encode(acc, seq) if k is not None else None
            if values is None or k is None:
                rest.append(pair)
                continue
            seq += 1
            for column, value in zip(columns, (*k, 0, *values), strict=True):
                column.append(value)
        return columns, rest

    def aggregate(self, rows: Any) -> Any:
        """Spark's ``groupBy(key, g).agg(...)`` over ``rows`` (this edge's rows of its producer stage)."""
        from pyspark.sql import functions as F

        # ``data`` is a grouping column (null in typed rows), not ``first(data)``: a binary in the
        # aggregation buffer would turn Spark's HashAggregate into a SortAggregate
        return rows.groupBy(*self.group_names(), "data").agg(*self.form.aggregates(f"{self.prefix}a_", F))

    def decode(self, batch: pa.RecordBatch) -> list[Any]:
        """``(key, accumulator)`` pairs of a batch of `aggregate`'s rows (the pickled ones as they were)."""
        columns = [c.to_pylist() for c in batch.columns]
        form = self.form
        out: list[Any] = []
        for row in zip(*columns, strict=True):
            ks, ki, _, data, *values = row
            if data is not None:
                out += pickle.loads(data)
            else:
                out.append((ks if ks is not None else ki, form.decode(values)))
        return out

    def describe(self) -> str:
        return f"groupBy(key).agg({self.form.describe('')})"
