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

from apache_beam.metrics import monitoring_infos as mi
from apache_beam.metrics.cells import DistributionResult, GaugeResult
from apache_beam.metrics.execution import MetricKey, MetricResult
from apache_beam.metrics.metric import MetricResults
from apache_beam.metrics.metricbase import MetricName

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
        #: kind -> (metric key, is a user metric) -> merged value
        self._values: dict[str, dict[tuple[MetricKey, bool], Any]] = {kind: {} for kind in _KINDS}
        self._infos: dict[str, list[Any]] = {}
        #: (stage, instance) -> the bundles' MonitoringInfos that count as committed, consolidated
        self._committed: dict[tuple[str, int], list[Any]] = {}

    def add(self, stage: str, infos: Iterable[Any], instance: int = 0) -> None:
        """Merge one bundle's MonitoringInfos (of instance ``instance`` of a stage named ``stage``)."""
        infos = list(infos)
        if not infos:
            return
        with self._lock:
            self._infos[stage] = list(mi.consolidate([*self._infos.get(stage, []), *infos]))
            where = (stage, instance)
            self._committed[where] = list(mi.consolidate([*self._committed.get(where, []), *infos]))
            _merge_into(self._values, infos)

    def restart(self, stage: str, instance: int, committed: Iterable[Any] = ()) -> None:
        """A new instance ``instance`` of ``stage`` (a restart) counts ``committed`` (what its
        snapshot saved; nothing if it starts afresh) instead of what the one before it ran."""
        with self._lock:
            self._committed[(stage, instance)] = list(committed)

    def committed(self, stage: str, instance: int) -> list[Any]:
        """The MonitoringInfos instance ``instance`` of ``stage`` counts as committed (to save)."""
        with self._lock:
            return list(self._committed.get((stage, instance), ()))

    def by_stage(self) -> dict[str, list[Any]]:
        """The MonitoringInfos per stage (counters and distributions summed up)."""
        with self._lock:
            return {k: list(v) for k, v in self._infos.items()}

    def results(self, user_metrics_only: bool = True) -> JetbenchMetrics:
        """Beam's queryable view (``.query(filter)``) of what was gathered so far."""
        committed: dict[str, dict[tuple[MetricKey, bool], Any]] = {kind: {} for kind in _KINDS}
        with self._lock:
            values = {kind: {key: v for (key, user), v in table.items() if user or not user_metrics_only}
                      for kind, table in self._values.items()}
            for infos in self._committed.values():
                _merge_into(committed, infos)
        return JetbenchMetrics(values, {kind: {key: v for (key, user), v in table.items()
                                               if user or not user_metrics_only}
                                        for kind, table in committed.items()})


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
