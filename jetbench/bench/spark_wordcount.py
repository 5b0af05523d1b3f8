"""Word count on Spark: SparkRunner against the same job written as idiomatic PySpark DataFrame code
(the baseline) and as hand-written RDD code (a second row).

All read the same parquet corpus (`jetbench.spark.datasets.corpus`, made by Spark and cached)
and count words with `jetbench.wordcount.tokenize`, in one process, first on ``local[1]`` and then on
``local[2]`` (the embedded session is restarted between them). The JVM is warmed up first (its
JIT-compiled code outlives the restarts, so otherwise the first master measured pays for it);
then, on each master, every job runs once to start the Python workers and is timed ``repeat``
times, interleaved; the median is kept.

The SparkRunner job reads the corpus with `jetbench.spark.dataframe_sources.parquet` (row groups read
with pyarrow inside the Spark tasks); the PySpark job reads it as
``spark.read.parquet(path).rdd``, as hand-written RDD code does; the DataFrame job is what a
PySpark user writes first: ``explode(split(lower(line), "(?U)\\W+"))``, drop the empty words,
``groupBy("word").count()`` (``(?U)``: Java's ``\\W`` is ASCII unless asked, Python's is
Unicode), with Spark's adaptive execution on, as in a PySpark user's session (the embedded
session turns it off for the SparkRunner's plans; ``dataframe_adaptive_off_s`` times the
DataFrame job without it too). The report also gives the SparkRunner time through the DataFrame path
(``parquet(..., engine="spark")``) as ``sparkrunner_dataframe_source_s``, and with the
aggregation kept in Python (``SparkRunner(spark_aggregation=False)``, the A of Spark's own
aggregation's A/B) as ``sparkrunner_python_aggregation_s``.

- ``ratio`` = DataFrame job's time / SparkRunner time on the widest master (higher is better;
  the issue's target is >= 1.0), ``rdd_ratio`` = RDD code's time / SparkRunner time,
- ``scaling`` = SparkRunner time on ``local[1]`` / time on ``local[2]`` (wall clock: it needs
  the machine's second core to be free; the report gives the load average before and after).
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..wordcount import non_empty, tokenize, wordcount_pipeline
from .common import ReportFormat, interleaved, load_average, with_adaptive

MASTERS = ("local[1]", "local[2]")
#: Corpus size by default: big enough that the work, not Spark's fixed cost per job (0.15-0.3 s
#: here), decides the scaling from one core to two.
DEFAULT_LINES = 1_000_000


def sparkrunner_pipeline(path: str, engine: str = "arrow") -> Any:
    """The word count (`jetbench.wordcount.wordcount_pipeline`) reading the parquet corpus."""
    from ..spark import dataframe_sources as sources

    return wordcount_pipeline(sources.parquet(path, columns=["line"], as_="value", engine=engine))


def _line_words(row: Any) -> list[str]:
    return tokenize(row.line)


def _one(word: str) -> tuple[str, int]:
    return word, 1


def dataframe_wordcount(spark: Any, path: str) -> dict[str, int]:
    """The same job as idiomatic PySpark DataFrame code, all of it in the JVM."""
    from pyspark.sql import functions as F

    words = spark.read.parquet(path).select(F.explode(F.split(F.lower("line"), r"(?U)\W+")).alias("word"))
    counts = words.where(F.col("word") != "").groupBy("word").count()
    return dict(counts.collect())


def pyspark_wordcount(spark: Any, path: str) -> dict[str, int]:
    """The same job as hand-written PySpark RDD code (``reduceByKey`` combines before the shuffle)."""
    rdd = spark.read.parquet(path).rdd
    return dict(rdd.flatMap(_line_words).filter(non_empty).map(_one).reduceByKey(operator.add).collect())


@dataclass
class SparkWordcountReport(ReportFormat):
    lines: int
    words: int
    distinct_words: int
    sparkrunner_s: float
    dataframe_s: float
    rdd_s: float
    ratio: float
    rdd_ratio: float
    scaling: float
    results_equal: bool
    ratio_basis: str = "wall-clock seconds, median of interleaved repeats after a warm-up, same process"
    extra: dict[str, Any] = field(default_factory=dict)

    def to_text(self) -> str:
        lines = [
            f"spark-wordcount: {self.lines:,} lines, {self.words:,} words ({self.distinct_words:,} distinct)",
            f"  DataFrame job (baseline): {self.dataframe_s:8.3f} s  ({self.extra['master']}, Spark's adaptive execution;"
            f" off: {self.extra['dataframe_adaptive_off_s']:.3f} s)",
            f"  SparkRunner             : {self.sparkrunner_s:8.3f} s  ratio {self.ratio:.3f}"
            "  (DataFrame time / SparkRunner time; higher is better)",
            f"  RDD code                : {self.rdd_s:8.3f} s  ratio {self.rdd_ratio:.3f}",
            f"  scaling     : {self.scaling:.3f}  (SparkRunner local[1] time / local[2] time)",
            f"  results equal: {self.results_equal}",
        ]
        return "\n".join(lines + self.extra_lines())


def _counts(runner: Any, job: Any) -> dict[str, int]:
    return dict(runner.run(job, progress=False))


def run(lines: int = DEFAULT_LINES, repeat: int = 3, masters: tuple[str, ...] = MASTERS,
        warmups: int = 2) -> SparkWordcountReport:
    """Measure on each of ``masters`` (narrowest first); ``warmups`` passes of every job first."""
    from ..spark import SparkRunner, datasets, session
    from ..spark._session import sessions_restored

    load_before = load_average()
    with sessions_restored():  # a caller's session outlives the benchmark when it is not restarted
        # A benchmark is heavy work: let the JVM use its optimising compiler (slower start-up, faster
        # Spark-side code, which is what the PySpark side mostly runs on). JVM options are fixed by
        # the first session of the process, so this only takes effect in a fresh process.
        spark = session(masters[-1], fast_start=False)
        path = datasets.corpus_path(lines, session=spark)
        seconds: dict[str, dict[str, float]] = {}
        partitions: dict[str, int] = {}
        results: list[dict[str, int]] = []
        for _ in range(warmups):  # warm the JVM up before any master is measured (its JIT outlives restarts)
            SparkRunner(spark).run(sparkrunner_pipeline(path))
            SparkRunner(spark).run(sparkrunner_pipeline(path, engine="spark"))
            dataframe_wordcount(spark, path)
            pyspark_wordcount(spark, path)
        for master in masters:
            spark = session(master, fast_start=False)
            runner = SparkRunner(spark)
            job = sparkrunner_pipeline(path)
            via_dataframe = sparkrunner_pipeline(path, engine="spark")
            partitions[master] = spark.read.parquet(path).rdd.getNumPartitions()
            fns: dict[str, Callable[[], dict[str, int]]] = {
                "dataframe": partial(with_adaptive, spark, True, partial(dataframe_wordcount, spark, path)),
                "sparkrunner": partial(_counts, runner, job),
                "rdd": partial(pyspark_wordcount, spark, path),
            }
            if master == masters[-1]:
                fns["dataframe_adaptive_off"] = partial(with_adaptive, spark, False,
                                                        partial(dataframe_wordcount, spark, path))
                fns["sparkrunner_dataframe_source"] = partial(_counts, runner, via_dataframe)
                fns["sparkrunner_python_aggregation"] = partial(_counts, SparkRunner(spark, spark_aggregation=False), job)
            for fn in fns.values():  # warm-up: start the Python workers, compile the query shapes
                fn()
            timings = interleaved(fns, repeat)
            seconds[master] = {name: t.wall_s for name, t in timings.items()}
            results += [t.result for t in timings.values()]
    widest, narrowest = masters[-1], masters[0]
    reference = results[0]
    equal = all(r == reference for r in results)
    runner_s, dataframe_s, rdd_s = (seconds[widest][k] for k in ("sparkrunner", "dataframe", "rdd"))
    extra: dict[str, Any] = {"master": widest, "repeat": repeat, "corpus": path, "cpus": os.cpu_count(),
                             "load_average_before": load_before, "load_average_after": load_average()}
    for master in masters:
        extra[f"sparkrunner_{master}_s"] = seconds[master]["sparkrunner"]
        extra[f"dataframe_{master}_s"] = seconds[master]["dataframe"]
        extra[f"rdd_{master}_s"] = seconds[master]["rdd"]
        extra[f"partitions_{master}"] = partitions[master]
    extra["dataframe_scaling"] = seconds[narrowest]["dataframe"] / seconds[widest]["dataframe"]
    extra["rdd_scaling"] = seconds[narrowest]["rdd"] / seconds[widest]["rdd"]
    extra["sparkrunner_dataframe_source_s"] = seconds[widest]["sparkrunner_dataframe_source"]
    extra["sparkrunner_python_aggregation_s"] = seconds[widest]["sparkrunner_python_aggregation"]
    extra["dataframe_adaptive_off_s"] = seconds[widest]["dataframe_adaptive_off"]
    return SparkWordcountReport(
        lines=lines,
        words=sum(reference.values()),
        distinct_words=len(reference),
        sparkrunner_s=runner_s,
        dataframe_s=dataframe_s,
        rdd_s=rdd_s,
        ratio=dataframe_s / runner_s,
        rdd_ratio=rdd_s / runner_s,
        scaling=seconds[narrowest]["sparkrunner"] / runner_s,
        results_equal=equal,
        extra=extra,
    )
