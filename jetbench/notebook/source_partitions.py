"""How far behind its input a partitioned source is: the rows of the dashboard's Partitions table
and the total lag of the progress line.

A source that reads partitions (the Kafka source, `jetbench.kafka`) reports in its
``metrics()``, for each partition ``NAME`` it reads (``"orders[2]"``: topic and partition),
``offset NAME`` (the next offset it reads), ``high NAME`` (the broker's high watermark: the
offset the next record written gets), ``lag NAME`` (records between the two) and, once known,
``watermark NAME`` (the partition's event-time watermark, ms), and in ``lag`` the sum over its
partitions. Any source may report the same keys to get the same rows.

>>> from types import SimpleNamespace as T
>>> m = T(tasklets=[T(vertex="orders", index=0, processor_metrics={
...     "records_read": 7, "lag": 5, "offset orders[0]": 4, "high orders[0]": 9, "lag orders[0]": 5,
...     "offset orders[1]": 3, "watermark orders[1]": 1500})])
>>> [(r.vertex, r.partition, r.offset, r.high, r.lag, r.watermark) for r in partition_rows(m)]
[('orders', 'orders[0]', 4, 9, 5, None), ('orders', 'orders[1]', 3, None, None, 1500)]
>>> total_lag(m)
5
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: the per-partition counters, in the order of the table's columns
FIELDS = ("offset", "high", "lag", "watermark")


@dataclass(frozen=True)
class PartitionRow:
    """One partition a source instance reads; a counter not reported (yet) is None."""

    vertex: str
    instance: int
    partition: str
    offset: int | None
    high: int | None
    lag: int | None
    watermark: int | None


def partition_rows(metrics: Any) -> list[PartitionRow]:
    """A row per partition of each tasklet of ``metrics`` (a `JobMetrics`) that reports one, in
    the tasklets' order and then the order the source reports its partitions."""
    rows: list[PartitionRow] = []
    for t in metrics.tasklets:
        counters = t.processor_metrics
        for name in _partitions(counters):
            values = [counters.get(f"{field} {name}") for field in FIELDS]
            rows.append(PartitionRow(t.vertex, t.index, name, *values))
    return rows


def _partitions(counters: dict[str, Any]) -> list[str]:
    """The partition names ``counters`` reports a counter of, in order."""
    names: dict[str, None] = {}
    for key in counters:
        field, _, name = key.partition(" ")
        if name and field in FIELDS:
            names[name] = None
    return list(names)


def total_lag(metrics: Any) -> int | None:
    """The records the partitioned sources of ``metrics`` have yet to read (the sum of their
    ``lag``), or None when no source reports partitions."""
    lags = [t.processor_metrics.get("lag", 0) for t in metrics.tasklets if _partitions(t.processor_metrics)]
    return sum(lags) if lags else None


__all__ = ["FIELDS", "PartitionRow", "partition_rows", "total_lag"]
