"""Arrow record batches <-> jetbench items, and Arrow IPC blobs (how batches travel through RDDs).

>>> import pyarrow as pa
>>> batch = pa.RecordBatch.from_pydict({"k": ["a", "b"], "n": [1, 2]})
>>> ArrowDecoder(("k", "n"), "tuple").decode(batch)
[('a', 1), ('b', 2)]
>>> ArrowDecoder(("k", "n"), "dict", timestamp="n").decode(batch)
[(1, {'k': 'a', 'n': 1}), (2, {'k': 'b', 'n': 2})]
>>> ArrowDecoder(("k", "n"), "tuple").decode_blob(to_ipc(batch))
[('a', 1), ('b', 2)]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..core.errors import JetbenchError

#: What ``as_=`` accepts, normalised to one of these names.
ITEM_KINDS = ("dict", "tuple", "row", "value")

_UNIT_PER_MS = {"s": None, "ms": 1, "us": 1_000, "ns": 1_000_000}


def item_kind(as_: Any, columns: tuple[str, ...]) -> str:
    """Normalise ``as_`` (``dict``, ``tuple``, ``"row"``, ``"value"`` or their names)."""
    kind = {dict: "dict", tuple: "tuple"}.get(as_, as_)
    if not isinstance(kind, str):
        from pyspark.sql import Row

        kind = "row" if as_ is Row else repr(as_)
    if kind not in ITEM_KINDS:
        raise JetbenchError(f"as_ must be dict, tuple, 'row' or 'value', got {as_!r}")
    if kind == "value" and len(columns) != 1:
        raise JetbenchError(f"as_='value' needs exactly one column, got {list(columns)}")
    return kind


@dataclass(frozen=True)
class ArrowDecoder:
    """Turns record batches into items: dicts, tuples, pyspark ``Row`` objects or single values.

    With ``timestamp`` (a column name) items come out as ``(ts_ms, item)`` pairs; timestamp
    columns become integer milliseconds since the epoch, numeric columns are taken as ms.
    """

    names: tuple[str, ...]
    kind: str
    timestamp: str | None = None

    def decode(self, batch: pa.RecordBatch) -> list:
        columns = [c.to_pylist() for c in batch.columns]
        kind = self.kind
        if kind == "value":
            items = columns[0]
        elif kind == "tuple":
            items = list(zip(*columns, strict=True)) if columns else [()] * batch.num_rows
        elif kind == "dict":
            names = batch.schema.names
            items = [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]
        else:
            from pyspark.sql import Row

            row = Row(*batch.schema.names)
            items = [row(*values) for values in zip(*columns, strict=True)]
        if self.timestamp is not None:
            stamps = timestamps_ms(batch.column(batch.schema.get_field_index(self.timestamp)))
            items = list(zip(stamps, items, strict=True))
        return items

    def decode_blob(self, blob: bytes) -> list:
        """Items of every batch in one Arrow IPC stream."""
        out: list = []
        for batch in pa.ipc.open_stream(blob):
            out += self.decode(batch)
        return out

    def decode_table(self, table: pa.Table) -> list:
        out: list = []
        for batch in table.to_batches():
            out += self.decode(batch)
        return out

    def with_names(self, names: tuple[str, ...]) -> ArrowDecoder:
        return dataclasses.replace(self, names=names)


def timestamps_ms(column: pa.Array) -> list:
    """Event times in ms: timestamps (any unit) and dates as integers; numbers as they are."""
    t = column.type
    if pa.types.is_timestamp(t):
        ints = column.cast(pa.int64()).to_pylist()
        per_ms = _UNIT_PER_MS[t.unit]
        if per_ms is None:
            return [None if v is None else v * 1000 for v in ints]
        return [None if v is None else v // per_ms for v in ints]
    if pa.types.is_date32(t):
        return [None if v is None else v * 86_400_000 for v in column.cast(pa.int32()).to_pylist()]
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return column.to_pylist()
    raise JetbenchError(f"timestamp column has type {t}: it must be a timestamp, a date or a number of ms")


def to_ipc(batch: pa.RecordBatch) -> bytes:
    """One record batch as an Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def batches_to_ipc(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` function: each batch becomes one row holding its IPC bytes (column ``ipc``)."""
    for batch in batches:
        if batch.num_rows:
            yield pa.RecordBatch.from_arrays([pa.array([to_ipc(batch)], pa.binary())], names=["ipc"])


IPC_SCHEMA = "ipc binary"


# -- items -> rows -------------------------------------------------------------------------------


def item_to_record(item: Any) -> dict:
    """A dict of column -> value for a DataFrame row: dicts as they are, ``Row``/named tuples by
    field, dataclasses by field, plain tuples as ``_1, _2, ...`` (Spark's names), others as ``value``."""
    if isinstance(item, dict):
        return item
    if isinstance(item, tuple):
        fields = getattr(item, "__fields__", None) or getattr(item, "_fields", None)
        if fields:
            return dict(zip(fields, item, strict=True))
        return {f"_{i + 1}": v for i, v in enumerate(item)}
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return {f.name: getattr(item, f.name) for f in dataclasses.fields(item)}
    return {"value": item}


def items_to_arrow(items: list) -> pa.Table:
    """Items as an Arrow table, one column per field (see `item_to_record`)."""
    return pa.Table.from_pylist([item_to_record(x) for x in items])
