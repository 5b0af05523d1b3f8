"""Beam metrics of a run: the MonitoringInfos every bundle reports, gathered per stage from
the stage processors' threads and queried as Beam's `MetricResults`."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from apache_beam.metrics.monitoring_infos import consolidate
from apache_beam.runners.portability.fn_api_runner.fn_runner import FnApiMetrics

__all__ = ["MonitoringCollector"]


class MonitoringCollector:
    """Thread-safe: stage name -> the consolidated MonitoringInfos of its bundles so far."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_stage: dict[str, list[Any]] = {}

    def add(self, stage: str, infos: Iterable[Any]) -> None:
        infos = list(infos)
        if not infos:
            return
        with self._lock:
            before = self._by_stage.get(stage, [])
            self._by_stage[stage] = list(consolidate([*before, *infos]))

    def by_stage(self) -> dict[str, list[Any]]:
        with self._lock:
            return {k: list(v) for k, v in self._by_stage.items()}

    def results(self, user_metrics_only: bool = True) -> FnApiMetrics:
        """Beam's queryable view (``.query(filter)``) of what was gathered so far."""
        return FnApiMetrics(self.by_stage(), user_metrics_only=user_metrics_only)
