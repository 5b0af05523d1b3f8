"""A hash join on Spark: SparkRunner with Spark's own join (``spark_joins=True``,
`jetbench.spark.join_lowering`) against the same Pipeline with the join kept in Python (the
default, the A of the A/B; the count per name is Spark's own aggregation in both), and the same
job written as idiomatic PySpark DataFrame code (the baseline).

The probe side is the parquet events of `jetbench.spark.datasets.events` (``seq, ts, key, value``,
16 keys), each turned into ``(key, ts)`` by a user's map (a Python stage: a join fed straight by
a parquet source stays in Python); the build side is a table of the keys' names, 8 of 16 keys,
so half the events have a match. The join's pairs are counted per name (Spark's own aggregation
on both SparkRunner jobs), so that what is timed is the join, not the driver collecting its pairs.
One embedded session (``local[2]`` by default), one process: every job runs ``warmups`` times first,
then each is timed ``repeat`` times, interleaved; the median is kept.

``ratio`` = DataFrame time / SparkRunner time (higher is better); ``lowering_speedup`` = the
Python join's time / SparkRunner time. The three results are compared.
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


def key_first(event: tuple[Any, ...]) -> tuple[Any, Any]:
    """An event read as ``(ts, key)``, turned into ``(key, ts)``."""
    return event[1], event[0]


def first(pair: tuple[Any, ...]) -> Any:
    return pair[0]


def name_of(joined: tuple[Any, Any]) -> Any:
    """The name in a joined ``((key, ts), (key, name))`` pair."""
    return joined[1][1]


def names() -> list[tuple[str, str]]:
    """The build side: a name for every other key of the events (``k0``, ``k2``, ...)."""
    return [(f"k{k}", f"name-{k}") for k in range(0, KEYS, 2)]


def sparkrunner_pipeline(path: str) -> Any:
    """The join and count per name as a Pipeline reading the parquet events."""
    from .. import Pipeline, aggregate, sinks, sources
    from ..spark import dataframe_sources

    p = Pipeline()
    events = p.read_from(dataframe_sources.parquet(path, columns=["ts", "key"], as_=tuple)).map(key_first)
    events.hash_join(p.read_from(sources.items(names())), first, first) \
        .group_by(name_of).aggregate(aggregate.counting()).write_to(sinks.collect())
    return p


def dataframe_join(spark: Any, path: str) -> dict[str, int]:
    """The same job as idiomatic PySpark DataFrame code, all of it in the JVM."""
    events = spark.read.parquet(path).select("key", "ts")
    table = spark.createDataFrame(names(), "key string, name string")
    return {name: n for name, n in events.join(table, "key").groupBy("name").count().collect()}


def _counts(runner: Any, job: Any) -> dict[str, int]:
    return dict(runner.run(job, progress=False))


@dataclass
class SparkJoinsReport(ReportFormat):
    events: int
    joined: int
    sparkrunner_s: float
    dataframe_s: float
    sparkrunner_python_join_s: float
    ratio: float
    lowering_speedup: float
    results_equal: bool
    ratio_basis: str = "wall-clock seconds, median of interleaved repeats after warm-ups, same session"
    extra: dict[str, Any] = field(default_factory=dict)

    def to_text(self) -> str:
        lines = [
            f"spark-joins: {self.events:,} events hash-joined with {KEYS // 2} names ({self.joined:,} pairs), "
            f"counted per name ({self.extra['master']})",
            *comparison_lines("join", self.dataframe_s, self.sparkrunner_s, self.sparkrunner_python_join_s,
                              ratio=self.ratio, speedup=self.lowering_speedup),
            f"  results equal: {self.results_equal}",
        ]
        return "\n".join(lines + self.extra_lines())


def run(events: int = DEFAULT_EVENTS, repeat: int = 3, master: str = MASTER, warmups: int = 1) -> SparkJoinsReport:
    """Measure on ``master`` (the embedded session is started there, and the caller's session
    restored afterwards)."""
    from ..spark import SparkRunner

    def jobs(spark: Any, path: str) -> tuple[dict[str, Callable[[], Any]], Callable[[], bool]]:
        job = sparkrunner_pipeline(path)
        return ({
            "dataframe": partial(dataframe_join, spark, path),
            "sparkrunner": partial(_counts, SparkRunner(spark, spark_joins=True), job),
            "sparkrunner_python": partial(_counts, SparkRunner(spark), job),
        }, lambda: "Spark join hash-join" in SparkRunner(spark, spark_joins=True).explain(job, physical=False))

    times = measure(master, events, KEYS, repeat, warmups, "join_lowered", jobs)
    return SparkJoinsReport(
        events=events,
        joined=sum(times.reference.values()),
        sparkrunner_s=times.seconds["sparkrunner"],
        dataframe_s=times.seconds["dataframe"],
        sparkrunner_python_join_s=times.seconds["sparkrunner_python"],
        ratio=times.ratio,
        lowering_speedup=times.lowering_speedup,
        results_equal=times.results_equal,
        extra=times.extra,
    )
