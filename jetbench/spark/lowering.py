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

- keys (`encode_key`): ``None``, exactly ``str`` (encodable as UTF-8), ``int`` within 64 bits,
  ``float`` (not NaN, not ``-0.0``), ``bool``, ``bytes``, and flat tuples of these (a ``binary``
  column: each member's type tag and its bytes, `tuple_bytes`, so two tuples have equal bytes
  exactly when their members have equal types and values; not an ``array<struct>``: a nested
  column costs Spark's Arrow writer time quadratic in the rows of a batch when the rows go back to
  Python, even when it is null). Each type has a column of its own, so Spark never groups two keys Python tells apart; keys Python calls equal
  across types (``1 == 1.0 == True``, ``(1, "a") == (1.0, "a")``) are different Spark groups, whose
  accumulators the combining vertex merges (they hash alike: `jetbench.spark._hash.stable_hash`),
  as it merges the pickled ones. NaN (Spark would group every NaN together, Python none) and
  ``-0.0`` (Spark would give it back as ``0.0``), subclasses (``StrEnum``, ``IntEnum``), nested
  tuples and any other key keep the Python path.
- a global aggregation (``stage.aggregate(op)``) has one key, None: Spark's ``groupBy`` makes the
  one group of all typed rows, and the combining vertex finishes it (``finish(create())`` when the
  input is empty, as on the local executor).
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

import math
import operator
import pickle
import struct
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
    "KEY_FIELDS",
    "KEY_TYPES",
    "decode_key",
    "encode_key",
    "lower",
    "spark_type",
    "tuple_bytes",
    "tuple_of_bytes",
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


#: the key columns (after the channel's prefix ``k_``): one per scalar type, and tuples as bytes
KEY_FIELDS = (("s", pa.string()), ("i", pa.int64()), ("f", pa.float64()), ("b", pa.bool_()), ("y", pa.binary()),
              ("t", pa.binary()))
#: what explain() says of the keys Spark groups
KEY_TYPES = "keys None, str, 64-bit int, float, bool, bytes or flat tuples of them"
_SCALAR_SLOT = {str: 0, int: 1, float: 2, bool: 3, bytes: 4}
_NO_KEY = (None,) * len(KEY_FIELDS)


def _scalar_slot(x: Any) -> int:
    """The column (0..4: s, i, f, b, y) of a scalar key, or -1 when Spark cannot group it as Python does."""
    t = type(x)
    if t is str:
        return 0 if _fits_str(x) else -1
    if t is int:
        return 1 if _I64_MIN <= x <= _I64_MAX else -1
    if t is float:
        # NaN: Spark groups all NaNs together, Python none; -0.0: Spark gives it back as 0.0
        return 2 if x == x and not (x == 0.0 and math.copysign(1.0, x) < 0) else -1
    if t is bool:
        return 3
    if t is bytes:
        return 4
    return -1


_LENGTH = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")


def tuple_bytes(key: tuple[Any, ...]) -> bytes | None:
    """A flat tuple of Spark-typed members as bytes, or None when a member does not fit.

    Each member is a tag (``n`` None, ``s`` str, ``i`` int, ``f`` float, ``b`` bool, ``y`` bytes)
    and its value (str and bytes after their length), so the bytes are equal exactly when the
    members have equal types and values, and Spark groups them as Python does within a type.

    >>> tuple_bytes(("a", None))
    b's\\x00\\x00\\x00\\x01an'
    >>> tuple_bytes((1, "b")) == tuple_bytes((True, "b")), tuple_bytes(("a", ("nested",)))
    (False, None)
    """
    out = []
    for x in key:
        if x is None:
            out.append(b"n")
            continue
        slot = _scalar_slot(x)
        if slot < 0:
            return None
        if slot == 0:
            data = x.encode("utf-8")
            out += (b"s", _LENGTH.pack(len(data)), data)
        elif slot == 1:
            out += (b"i", _I64.pack(x))
        elif slot == 2:
            out += (b"f", _F64.pack(x))
        elif slot == 3:
            out.append(b"b\x01" if x else b"b\x00")
        else:
            out += (b"y", _LENGTH.pack(len(x)), x)
    return b"".join(out)


def tuple_of_bytes(data: bytes) -> tuple[Any, ...]:
    """The tuple `tuple_bytes` made ``data`` of.

    >>> tuple_of_bytes(tuple_bytes(("a", 1, 2.5, True, b"y", None)))
    ('a', 1, 2.5, True, b'y', None)
    """
    out: list[Any] = []
    at, n = 0, len(data)
    while at < n:
        tag = data[at]
        at += 1
        if tag == 0x6E:  # n
            out.append(None)
        elif tag == 0x69:  # i
            out.append(_I64.unpack_from(data, at)[0])
            at += 8
        elif tag == 0x66:  # f
            out.append(_F64.unpack_from(data, at)[0])
            at += 8
        elif tag == 0x62:  # b
            out.append(data[at] == 1)
            at += 1
        else:  # s, y
            (size,) = _LENGTH.unpack_from(data, at)
            at += 4
            chunk = data[at:at + size]
            at += size
            out.append(chunk.decode("utf-8") if tag == 0x73 else bytes(chunk))
    return tuple(out)


def _key_column(keys: list[Any]) -> int | None:
    """The one key column (0: s, 1: i) every key of ``keys`` fits, -1 when all are None (a global
    aggregation), None when they need checking one by one (the checks here run in C)."""
    types = set(map(type, keys))
    if types == {str}:
        if not all(map(str.isascii, keys)):
            try:
                "".join(keys).encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: that key keeps the Python path
                return None
        return 0
    if types == {int}:
        return 1 if min(keys) >= _I64_MIN and max(keys) <= _I64_MAX else None
    if types == {type(None)}:
        return -1
    return None


def encode_key(key: Any) -> tuple[Any, ...] | None:
    """The key columns of ``key`` (`KEY_FIELDS`: s, i, f, b, y, t), or None when Spark cannot group
    it as Python does.

    >>> encode_key("fox"), encode_key(7), encode_key(None)
    (('fox', None, None, None, None, None), (None, 7, None, None, None, None), (None, None, None, None, None, None))
    >>> encode_key(("a", None))
    (None, None, None, None, None, b's\\x00\\x00\\x00\\x01an')
    >>> encode_key(float("nan")), encode_key(("a", ("nested",)))
    (None, None)
    """
    if key is None:
        return _NO_KEY
    if type(key) is tuple:
        data = tuple_bytes(key)
        return None if data is None else (None, None, None, None, None, data)
    slot = _scalar_slot(key)
    if slot < 0:
        return None
    out: list[Any] = [None] * len(KEY_FIELDS)
    out[slot] = key
    return tuple(out)


def decode_key(columns: Sequence[Any]) -> Any:
    """The key of a row's key columns (`encode_key` undone).

    >>> decode_key(encode_key(("a", 1, 2.5, True, b"y", None))), decode_key(encode_key(False))
    (('a', 1, 2.5, True, b'y', None), False)
    """
    for x in columns[:5]:
        if x is not None:
            return x
    data = columns[5]
    return None if data is None else tuple_of_bytes(data)


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

    def encode_column(self, accs: list[Any]) -> list[list[Any]] | None:
        """The columns of many accumulators at once, when every one fits (else None: `encode`
        each); a form without a columnar way says None."""
        return None

    def decode_column(self, columns: list[pa.Array]) -> list[Any] | None:
        """The accumulators of ``width`` result columns at once, or None (`decode` each row)."""
        return None

    def describe(self, p: str) -> str:
        return self.name


def _int64_column(values: list[Any]) -> bool:
    """True when every value is exactly ``int`` within 64 bits (checked in C, not per value in Python)."""
    return bool(values) and set(map(type, values)) == {int} and min(values) >= _I64_MIN and max(values) <= _I64_MAX


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

    def encode_column(self, accs: list[Any]) -> list[list[Any]] | None:
        return [accs] if _int64_column(accs) else None

    def decode_column(self, columns: list[pa.Array]) -> list[Any] | None:
        (counts,) = columns
        return counts.to_pylist() if counts.null_count == 0 and pa.types.is_int64(counts.type) else None


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

    def encode_column(self, accs: list[Any]) -> list[list[Any]] | None:
        return [accs] if _int64_column(accs) else None


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


_DDL = {pa.string(): "string", pa.int64(): "bigint", pa.float64(): "double", pa.binary(): "binary",
        pa.bool_(): "boolean"}


def spark_type(t: pa.DataType) -> str:
    """The Spark SQL type of an Arrow type of the typed columns.

    >>> spark_type(pa.list_(pa.string()))
    'array<string>'
    """
    if pa.types.is_list(t):
        return f"array<{spark_type(t.value_type)}>"
    if pa.types.is_struct(t):
        return "struct<" + ",".join(f"{f.name}:{spark_type(f.type)}" for f in t) + ">"
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
    """A lowered cut edge (``channel``) and its accumulators' `form`; ``keyed`` False for a global
    aggregation (every key None: one group).

    Its rows in the producer stage's output carry, besides the stage's own columns (``data`` among
    them), the typed columns of `fields`, named ``c<channel>_``: the key (``k_s``, ``k_i``, ``k_f``,
    ``k_b``, ``k_y``, ``k_t``: `KEY_FIELDS`), a group column ``g`` and the accumulator's columns. A
    typed row has ``g = 0`` and no ``data``; the pairs that do not fit travel as pickled chunks in
    ``data``, each row with a ``g`` of its own, so that Spark's one ``groupBy(k_*, g, data)`` passes
    them through untouched (`aggregate`)."""

    channel: int
    form: TypedForm
    keyed: bool = True

    @property
    def prefix(self) -> str:
        return f"c{self.channel}_"

    def key_names(self) -> list[str]:
        return [f"{self.prefix}k_{name}" for name, _ in KEY_FIELDS]

    def group_names(self) -> list[str]:
        return [*self.key_names(), f"{self.prefix}g"]

    def fields(self) -> list[pa.Field]:
        """The typed columns this edge adds to its producer stage's output."""
        keys = [pa.field(f"{self.prefix}k_{name}", t) for name, t in KEY_FIELDS]
        return [*keys, pa.field(f"{self.prefix}g", pa.int64()), *self.form.fields(f"{self.prefix}a_")]

    def encode_pairs(self, pairs: list[Any], seq: int) -> tuple[list[list[Any]], list[Any]]:
        """Split ``(key, accumulator)`` pairs into typed columns (one list per `fields`) and the
        pairs that keep the Python path. ``seq``: the sequence number of the first typed row.

        When every key is of one scalar type that fits (all str, all 64-bit int, or all None) and
        the form takes the accumulators as a column (`TypedForm.encode_column`), the columns are
        made at once, the checks in C; else pair by pair."""
        at_once = self._encode_columns(pairs)
        if at_once is not None:
            return at_once, []
        columns: list[list[Any]] = [[] for _ in self.fields()]
        rest: list[Any] = []
        for pair in pairs:
            row = self.encode_row(pair[0], pair[1], seq)
            if row is None:
                rest.append(pair)
                continue
            seq += 1
            for column, value in zip(columns, row, strict=True):
                column.append(value)
        return columns, rest

    def _encode_columns(self, pairs: list[Any]) -> list[list[Any]] | None:
        """`encode_pairs`' columns of ``pairs`` made at once, or None when any pair needs its own checks."""
        if not pairs:
            return None
        keys = [pair[0] for pair in pairs]
        slot = _key_column(keys)
        if slot is None:
            return None
        accs = self.form.encode_column([pair[1] for pair in pairs])
        if accs is None:
            return None
        nones = [None] * len(pairs)
        return [keys if i == slot else nones for i in range(len(KEY_FIELDS))] + [[0] * len(pairs)] + accs

    def encode_row(self, key: Any, acc: Any, seq: int) -> tuple[Any, ...] | None:
        """The typed columns of one ``(key, accumulator)`` pair (key, ``g``, accumulator), or None
        when it keeps the Python path."""
        k = encode_key(key)
        if k is None:
            return None
        values = self.form.encode(acc, seq)
        return None if values is None else (*k, 0, *values)

    def aggregate(self, rows: Any) -> Any:
        """Spark's ``groupBy(key, g).agg(...)`` over ``rows`` (this edge's rows of its producer stage)."""
        from pyspark.sql import functions as F

        # ``data`` is a grouping column (null in typed rows), not ``first(data)``: a binary in the
        # aggregation buffer would turn Spark's HashAggregate into a SortAggregate
        return rows.groupBy(*self.group_names(), "data").agg(*self.form.aggregates(f"{self.prefix}a_", F))

    def decode(self, batch: pa.RecordBatch) -> list[Any]:
        """``(key, accumulator)`` pairs of a batch of `aggregate`'s rows (the pickled ones as they were)."""
        at_once = self._decode_columns(batch)
        if at_once is not None:
            return at_once
        columns = [c.to_pylist() for c in batch.columns]
        form = self.form
        n = len(KEY_FIELDS)
        out: list[Any] = []
        for row in zip(*columns, strict=True):
            data = row[n + 1]
            if data is not None:
                out += pickle.loads(data)
            else:
                out.append((decode_key(row[:n]), form.decode(row[n + 2:])))
        return out

    def _decode_columns(self, batch: pa.RecordBatch) -> list[Any] | None:
        """`decode`'s pairs made at once, when no row is pickled, the keys fill one scalar key
        column (the others null) and the form reads its columns at once; else None."""
        n = len(KEY_FIELDS)
        if batch.num_rows == 0 or batch.column(n + 1).null_count != batch.num_rows:
            return None
        filled = [i for i in range(5) if batch.column(i).null_count == 0]
        if len(filled) != 1 or any(batch.column(i).null_count != batch.num_rows for i in range(n) if i != filled[0]):
            return None
        accs = self.form.decode_column(batch.columns[n + 2:])
        if accs is None:
            return None
        return list(zip(batch.column(filled[0]).to_pylist(), accs, strict=True))

    def pre_vertex(self) -> tuple[str, Callable[[], Any]] | None:
        """A vertex (name, supplier) the producer task runs between the edge's source and its
        capture (none here: the source is the stage-1 accumulator)."""
        return None

    def describe(self) -> str:
        if not self.keyed:
            return f"agg({self.form.describe('')}) (global: one group)"
        return f"groupBy(key).agg({self.form.describe('')})"
