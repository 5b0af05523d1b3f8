"""Beam metrics of a run: the MonitoringInfos every bundle reports, merged per metric as they
arrive from the stage processors' threads, and queried as Beam's `MetricResults`.

Each bundle reports its own values, so the values of all bundles of all instances of a stage
merge: counters add up, distributions and bounded tries combine, string sets unite, and a
gauge keeps its latest value.

*Attempted* values merge every bundle ever run. *Committed* values merge, per stage instance,
the bundles that count: with a processing guarantee a restarted instance goes back to what its
snapshot saved (`restart`), so bundles run after that snapshot and lost in a failure drop out,
and after an exactly-once restart the committed values equal a failure-free run's. Without a
restart the two are the same.

>>> collector = MonitoringCollector()
>>> collector.results().query()["counters"]
[]
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from apache_beam.coders import coders
from apache_beam.metrics import monitoring_infos as mi
from apache_beam.metrics.cells import DistributionResult, GaugeResult
from apache_beam.metrics.execution import MetricKey, MetricResult
from apache_beam.metrics.metric import MetricResults
from apache_beam.metrics.metricbase import MetricName
from apache_beam.portability.api import metrics_pb2

__all__ = ["MonitoringCollector", "JetbenchMetrics"]

#: kind -> (does a MonitoringInfo hold it, how two of its values merge)
_KINDS: dict[str, tuple[Callable[[Any], bool], Callable[[Any, Any], Any]]] = {
    MetricResults.COUNTERS: (mi.is_counter, lambda a, b: a + b),
    MetricResults.DISTRIBUTIONS: (mi.is_distribution, lambda a, b: DistributionResult(a.data.combine(b.data))),
    MetricResults.GAUGES: (mi.is_gauge, lambda a, b: GaugeResult(a.data.combine(b.data))),
    MetricResults.STRINGSETS: (mi.is_string_set, lambda a, b: set(a) | set(b)),
    MetricResults.BOUNDED_TRIES: (mi.is_bounded_trie, lambda a, b: a.combine(b)),
}


class MonitoringCollector:
    """Thread-safe: the merged value of every metric reported so far, user metrics and Beam's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: stage -> every bundle's MonitoringInfos, consolidated (the attempted values)
        self._infos: dict[str, _Tally] = {}
        #: (stage, instance) -> the bundles' MonitoringInfos that count as committed, consolidated
        self._committed: dict[tuple[str, int], _Tally] = {}

    def add(self, stage: str, infos: Iterable[Any], instance: int = 0) -> None:
        """Merge one bundle's MonitoringInfos (of instance ``instance`` of a stage named ``stage``)."""
        keyed = [(mi.to_key(info), info) for info in infos]
        if not keyed:
            return
        with self._lock:
            tally = self._infos.get(stage)
            if tally is None:
                tally = self._infos[stage] = _Tally()
            tally.add(keyed)
            where = (stage, instance)
            tally = self._committed.get(where)
            if tally is None:
                tally = self._committed[where] = _Tally()
            tally.add(keyed)

    def restart(self, stage: str, instance: int, committed: Iterable[Any] = ()) -> None:
        """A new instance ``instance`` of ``stage`` (a restart) counts ``committed`` (what its
        snapshot saved; nothing if it starts afresh) instead of what the one before it ran."""
        tally = _Tally()
        tally.add([(mi.to_key(info), info) for info in committed])
        with self._lock:
            self._committed[(stage, instance)] = tally

    def committed(self, stage: str, instance: int) -> list[Any]:
        """The MonitoringInfos instance ``instance`` of ``stage`` counts as committed (to save)."""
        with self._lock:
            tally = self._committed.get((stage, instance))
            return [] if tally is None else tally.infos()

    def by_stage(self) -> dict[str, list[Any]]:
        """The MonitoringInfos per stage (counters and distributions summed up)."""
        with self._lock:
            return {k: v.infos() for k, v in self._infos.items()}

    def results(self, user_metrics_only: bool = True) -> JetbenchMetrics:
        """Beam's queryable view (``.query(filter)``) of what was gathered so far."""
        attempted: dict[str, dict[tuple[MetricKey, bool], Any]] = {kind: {} for kind in _KINDS}
        committed: dict[str, dict[tuple[MetricKey, bool], Any]] = {kind: {} for kind in _KINDS}
        with self._lock:
            for tally in self._infos.values():
                _merge_into(attempted, tally.infos())
            for tally in self._committed.values():
                _merge_into(committed, tally.infos())
        return JetbenchMetrics(*({kind: {key: v for (key, user), v in table.items() if user or not user_metrics_only}
                                  for kind, table in tables.items()} for tables in (attempted, committed)))


_VARINT = coders.VarIntCoder().get_impl()


class _Tally:
    """MonitoringInfos of many bundles, consolidated as Beam's `monitoring_infos.consolidate`
    does (the values of each counter and each distribution, by URN and labels, summed up; other
    kinds kept as they came), but kept decoded: a bundle's infos are added without making a new
    MonitoringInfo per merge, which cost more than a bundle of one element itself.

    >>> t = _Tally()
    >>> c = mi.int64_counter(mi.ELEMENT_COUNT_URN, 2, pcollection="pc")
    >>> t.add([(mi.to_key(c), c), (mi.to_key(c), c)])
    >>> [mi.extract_counter_value(info) for info in t.infos()]
    [4]
    """

    __slots__ = ("_sums", "_kept")

    def __init__(self) -> None:
        #: (URN and labels) -> [the first MonitoringInfo, the summed value: an int, or a
        #: distribution's [count, sum, min, max]]
        self._sums: dict[Any, list[Any]] = {}
        self._kept: list[Any] = []

    def add(self, keyed: Iterable[tuple[Any, Any]]) -> None:
        """Add MonitoringInfos, each with its `monitoring_infos.to_key`."""
        sums = self._sums
        for key, info in keyed:
            kind = info.type
            if kind == mi.SUM_INT64_TYPE:
                value = _VARINT.decode(info.payload)
                entry = sums.get(key)
                if entry is None:
                    sums[key] = [info, value]
                else:
                    entry[1] += value
            elif kind == mi.DISTRIBUTION_INT64_TYPE:
                d = mi.extract_distribution(info)
                entry = sums.get(key)
                if entry is None:
                    sums[key] = [info, list(d)]
                else:
                    total = entry[1]
                    total[0] += d[0]
                    total[1] += d[1]
                    total[2] = min(total[2], d[2])
                    total[3] = max(total[3], d[3])
            else:
                self._kept.append(info)

    def infos(self) -> list[Any]:
        """The consolidated MonitoringInfos."""
        out = []
        for first, value in self._sums.values():
            payload = (_VARINT.encode(value) if first.type == mi.SUM_INT64_TYPE
                       else b"".join(_VARINT.encode(v) for v in value))
            out.append(first if payload == first.payload else
                       metrics_pb2.MonitoringInfo(urn=first.urn, type=first.type, labels=first.labels,
                                                  payload=payload))
        return out + self._kept


def _merge_into(tables: dict[str, dict[tuple[MetricKey, bool], Any]], infos: Iterable[Any]) -> None:
    """Merge ``infos`` into per-kind tables keyed by (metric key, is a user metric)."""
    for info in infos:
        step = mi.get_step_name(info)
        if step is None:
            continue
        value = mi.extract_metric_result_map_value(info)
        if value is None:
            continue
        key = (MetricKey(step, MetricName(*mi.parse_namespace_and_name(info))), mi.is_user_monitoring_info(info))
        for kind, (holds, merge) in _KINDS.items():
            if holds(info):
                table = tables[kind]
                table[key] = merge(table[key], value) if key in table else value
                break


class JetbenchMetrics(MetricResults):
    """Metric values as of when it was made: attempted (every bundle run) and committed (see
    `MonitoringCollector`; None for a metric only bundles lost in a failure reported)."""

    def __init__(self, values: dict[str, dict[MetricKey, Any]],
                 committed: dict[str, dict[MetricKey, Any]] | None = None):
        self._values = values
        self._committed = values if committed is None else committed

    def query(self, filter: Any = None) -> dict[str, list[MetricResult]]:  # noqa: A002 - Beam's name
        return {kind: [MetricResult(key, self._committed[kind].get(key), v) for key, v in table.items()
                       if self.matches(filter, key)]
                for kind, table in self._values.items()}
