"""Beam metrics of a run: the MonitoringInfos every bundle reports, merged per metric as they
arrive from the stage processors' threads, and queried as Beam's `MetricResults`.

Each bundle reports its own values, so the values of all bundles of all instances of a stage
merge: counters add up, distributions and bounded tries combine, string sets unite, and a
gauge keeps its latest value.

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

    def add(self, stage: str, infos: Iterable[Any]) -> None:
        """Merge one bundle's MonitoringInfos (of a stage named ``stage``)."""
        infos = list(infos)
        if not infos:
            return
        with self._lock:
            self._infos[stage] = list(mi.consolidate([*self._infos.get(stage, []), *infos]))
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
                        table = self._values[kind]
                        table[key] = merge(table[key], value) if key in table else value
                        break

    def by_stage(self) -> dict[str, list[Any]]:
        """The MonitoringInfos per stage (counters and distributions summed up)."""
        with self._lock:
            return {k: list(v) for k, v in self._infos.items()}

    def results(self, user_metrics_only: bool = True) -> JetbenchMetrics:
        """Beam's queryable view (``.query(filter)``) of what was gathered so far."""
        with self._lock:
            values = {kind: {key: v for (key, user), v in table.items() if user or not user_metrics_only}
                      for kind, table in self._values.items()}
        return JetbenchMetrics(values)


class JetbenchMetrics(MetricResults):
    """Metric values as of when it was made; committed and attempted are the same value."""

    def __init__(self, values: dict[str, dict[MetricKey, Any]]):
        self._values = values

    def query(self, filter: Any = None) -> dict[str, list[MetricResult]]:  # noqa: A002 - Beam's name
        return {kind: [MetricResult(key, v, v) for key, v in table.items() if self.matches(filter, key)]
                for kind, table in self._values.items()}
