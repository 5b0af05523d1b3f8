"""A windowed count on Spark: SparkRunner against the same job written as idiomatic PySpark
DataFrame code (the baseline), and SparkRunner with its windows kept in Python (the A of the
A/B of Spark's own windows, `jetbench.spark.window_lowering`).

All read the same parquet events (`jetbench.spark.datasets.events`: ``seq, ts, key, value``,
``ts`` one event per ms, 16 keys, made by Spark and cached) and count events per key and
tumbling window of ``size_ms``, on one embedded session (``local[2]`` by default), in one
process: every job runs ``warmups`` times first (the Python workers start, the query shapes
compile, the JVM's JIT warms up), then each is timed ``repeat`` times, interleaved; the median
is kept.

- the DataFrame job is what a PySpark user writes:
  ``groupBy(window(timestamp_millis("ts"), "1000 milliseconds"), "key").count()``;
- the SparkRunner job is the Pipeline ``parquet(path, timestamp="ts")`` ->
  ``group_by(key).window(tumbling(size_ms)).aggregate(counting())`` (row groups read with
  pyarrow in the tasks; frames folded in Python, windows made by Spark);
- ``sparkrunner_python_windows`` is the same Pipeline on ``SparkRunner(spark_aggregation=False)``:
  the events shuffled as pickles to the Python window vertex.

``ratio`` = DataFrame time / SparkRunner time (higher is better); ``lowering_speedup`` = the
Python windows' time / SparkRunner time. The results of the three are compared, window by window.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from .common import ReportFormat, interleaved, load_average

DEFAULT_EVENTS = 1_000_000
KEYS = 16
MASTER = "local[2]"


def event_key(event: tuple[Any, ...]) -> Any:
    """The key of an event read as ``(ts, key)``."""
    return event[1]


def sparkrunner_pipeline(path: str, size_ms: int) -> Any:
    """The count per key and tumbling window as a Pipeline reading the parquet events."""
    from .. import Pipeline, aggregate, sinks, window
    from ..spark import dataframe_sources as sources

    p = Pipeline()
    p.read_from(sources.parquet(path, columns=["ts", "key"], as_=tuple, timestamp="ts")) \
        .group_by(event_key).window(window.tumbling(size_ms)).aggregate(aggregate.counting()) \
        .write_to(sinks.collect())
    return p


def dataframe_windows(spark: Any, path: str, size_ms: int) -> dict[tuple[int, str], int]:
    """The same job as idiomatic PySpark DataFrame code, all of it in the JVM: counts by
    (window start in ms, key)."""
    from pyspark.sql import functions as F

    events = spark.read.parquet(path)
    counts = events.groupBy(F.window(F.timestamp_millis("ts"), f"{size_ms} milliseconds"), "key").count()
    rows = counts.select(F.unix_millis("window.start"), "key", "count").collect()
    return {(start, key): n for start, key, n in rows}


def _windows(runner: Any, job: Any) -> dict[tuple[int, str], int]:
    return {(r.start, r.key): r.value for r in runner.run(job, progress=False)}


@dataclass
class SparkWindowsReport(ReportFormat):
    events: int
    windows: int
    size_ms: int
    sparkrunner_s: float
    dataframe_s: float
    sparkrunner_python_windows_s: float
    ratio: float
    lowering_speedup: float
    results_equal: bool
    ratio_basis: str = "wall-clock seconds, median of interleaved repeats after warm-ups, same session"
    extra: dict[str, Any] = field(default_factory=dict)

    def to_text(self) -> str:
        lines = [
            f"spark-windows: {self.events:,} events, {self.windows:,} (window, key) counts, "
            f"tumbling({self.size_ms}) ({self.extra['master']})",
            f"  DataFrame job (baseline)     : {self.dataframe_s:8.3f} s",
            f"  SparkRunner, Spark's windows : {self.sparkrunner_s:8.3f} s  ratio {self.ratio:.3f}"
            "  (DataFrame time / SparkRunner time; higher is better)",
            f"  SparkRunner, Python windows  : {self.sparkrunner_python_windows_s:8.3f} s  "
            f"(Spark's windows {self.lowering_speedup:.2f}x faster)",
            f"  results equal: {self.results_equal}",
        ]
        return "\n".join(lines + self.extra_lines())


def run(events: int = DEFAULT_EVENTS, size_ms: int = 1000, repeat: int = 3, master: str = MASTER,
        warmups: int = 1) -> SparkWindowsReport:
    """Measure on ``master`` (the embedded session is started there, and the caller's session
    restored afterwards)."""
    from ..spark import SparkRunner, datasets, session
    from ..spark._session import sessions_restored

    load_before = load_average()
    with sessions_restored():
        spark = session(master, fast_start=False)  # heavy work: the JVM's optimising compiler
        path = datasets.events_path(events, KEYS, interval_ms=1, session=spark)
        job = sparkrunner_pipeline(path, size_ms)
        fns: dict[str, Callable[[], dict[tuple[int, str], int]]] = {
            "dataframe": partial(dataframe_windows, spark, path, size_ms),
            "sparkrunner": partial(_windows, SparkRunner(spark), job),
            "sparkrunner_python_windows": partial(_windows, SparkRunner(spark, spark_aggregation=False), job),
        }
        for _ in range(warmups):
            for fn in fns.values():
                fn()
        timings = interleaved(fns, repeat)
        lowered = "Spark window aggregation" in SparkRunner(spark).explain(job, physical=False)
    seconds = {name: t.wall_s for name, t in timings.items()}
    results = [t.result for t in timings.values()]
    reference = results[0]
    return SparkWindowsReport(
        events=events,
        windows=len(reference),
        size_ms=size_ms,
        sparkrunner_s=seconds["sparkrunner"],
        dataframe_s=seconds["dataframe"],
        sparkrunner_python_windows_s=seconds["sparkrunner_python_windows"],
        ratio=seconds["dataframe"] / seconds["sparkrunner"],
        lowering_speedup=seconds["sparkrunner_python_windows"] / seconds["sparkrunner"],
        results_equal=all(r == reference for r in results),
        extra={"master": master, "repeat": repeat, "events_path": path, "windows_lowered": lowered,
               "cpus": os.cpu_count(), "load_average_before": load_before, "load_average_after": load_average()},
    )
