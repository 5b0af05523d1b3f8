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

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from .common import ReportFormat
from .spark_lowering_ab import comparison_lines, measure

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
            *comparison_lines("windows", self.dataframe_s, self.sparkrunner_s, self.sparkrunner_python_windows_s,
                              ratio=self.ratio, speedup=self.lowering_speedup),
            f"  results equal: {self.results_equal}",
        ]
        return "\n".join(lines + self.extra_lines())


def run(events: int = DEFAULT_EVENTS, size_ms: int = 1000, repeat: int = 3, master: str = MASTER,
        warmups: int = 1) -> SparkWindowsReport:
    """Measure on ``master`` (the embedded session is started there, and the caller's session
    restored afterwards)."""
    from ..spark import SparkRunner

    def jobs(spark: Any, path: str) -> tuple[dict[str, Callable[[], Any]], Callable[[], bool]]:
        job = sparkrunner_pipeline(path, size_ms)
        return ({
            "dataframe": partial(dataframe_windows, spark, path, size_ms),
            "sparkrunner": partial(_windows, SparkRunner(spark), job),
            "sparkrunner_python": partial(_windows, SparkRunner(spark, spark_aggregation=False), job),
        }, lambda: "Spark window aggregation" in SparkRunner(spark).explain(job, physical=False))

    times = measure(master, events, KEYS, repeat, warmups, "windows_lowered", jobs)
    return SparkWindowsReport(
        events=events,
        windows=len(times.reference),
        size_ms=size_ms,
        sparkrunner_s=times.seconds["sparkrunner"],
        dataframe_s=times.seconds["dataframe"],
        sparkrunner_python_windows_s=times.seconds["sparkrunner_python"],
        ratio=times.ratio,
        lowering_speedup=times.lowering_speedup,
        results_equal=times.results_equal,
        extra=times.extra,
    )
