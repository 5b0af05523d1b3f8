"""``jetbench bench spark-wordcount``: SparkRunner against idiomatic DataFrame code and RDD code."""

from __future__ import annotations

import functools
import json

import pytest

from jetbench import cli
from jetbench.bench import spark_wordcount
from jetbench.bench.spark_wordcount import (
    dataframe_wordcount,
    pyspark_wordcount,
    sparkrunner_pipeline,
)
from jetbench.spark import datasets
from jetbench.wordcount import non_empty, tokenize


def test_every_row_counts_the_same_words(runner, spark):
    path = datasets.corpus_path(3000)
    expected = pyspark_wordcount(spark, path)
    assert dict(runner.run(sparkrunner_pipeline(path))) == expected
    assert dict(runner.run(sparkrunner_pipeline(path, engine="spark"))) == expected
    assert dataframe_wordcount(spark, path) == expected


def test_the_baseline_runs_with_sparks_adaptive_execution_and_the_session_keeps_its_own(spark):
    """The DataFrame baseline runs as in a PySpark user's session (adaptive execution on, Spark's
    default); the embedded session's own setting (off, for the SparkRunner's plans) comes back,
    also when the job raises."""
    from jetbench.bench.common import with_adaptive

    key = "spark.sql.adaptive.enabled"
    assert spark.conf.get(key) == "false"
    assert with_adaptive(spark, True, lambda: {"seen": spark.conf.get(key) == "true"}) == {"seen": True}
    assert spark.conf.get(key) == "false"
    with pytest.raises(ZeroDivisionError):
        with_adaptive(spark, True, lambda: {"x": 1 // 0})
    assert spark.conf.get(key) == "false"


def test_the_dataframe_job_splits_as_the_python_tokenizer_does(spark, tmp_path):
    """Java's \\W is ASCII unless (?U) asks for Unicode: words with accents, digits, underscores."""
    lines = ["Ça va, déjà-vu! ÉTÉ été", "snake_case x2 ...  ", "", "Straße STRASSE"]
    spark.createDataFrame([(s,) for s in lines], "line string").write.parquet(str(tmp_path / "c"))
    expected: dict[str, int] = {}
    for line in lines:
        for w in filter(non_empty, tokenize(line)):
            expected[w] = expected.get(w, 0) + 1
    assert dataframe_wordcount(spark, str(tmp_path / "c")) == expected


def test_the_command_line_has_the_subcommand():
    args = cli.build_parser().parse_args(["bench", "spark-wordcount", "--lines", "1000", "--json"])
    assert args.name == "spark-wordcount" and args.lines == 1000 and args.json


@pytest.mark.slow
def test_bench_command_prints_json(spark, monkeypatch, capsys):
    """The command end to end on the test session (local[2] only: the real command also
    restarts the session on local[1], which would end the shared test session)."""
    monkeypatch.setattr(spark_wordcount, "run",
                        functools.partial(spark_wordcount.run, masters=("local[2]",), warmups=0))
    assert cli.main(["bench", "spark-wordcount", "--lines", "3000", "--repeat", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["results_equal"] is True
    for key in ("sparkrunner_s", "dataframe_s", "rdd_s", "ratio", "rdd_ratio", "scaling",
                "sparkrunner_dataframe_source_s"):
        assert report[key] > 0
    assert report["sparkrunner_python_aggregation_s"] > 0 and report["dataframe_adaptive_off_s"] > 0
    assert report["ratio"] == pytest.approx(report["dataframe_s"] / report["sparkrunner_s"])
    assert report["rdd_ratio"] == pytest.approx(report["rdd_s"] / report["sparkrunner_s"])
    assert report["words"] > 10_000
    assert spark.sparkContext._jsc is not None  # the shared session survived


def test_the_windowed_count_is_the_same_three_ways(runner, spark):
    """``jetbench bench spark-windows``: the DataFrame job, the SparkRunner with Spark's windows
    and with Python's give the same counts per (window start, key)."""
    from jetbench.bench import spark_windows
    from jetbench.spark import SparkRunner

    path = datasets.events_path(3000, spark_windows.KEYS, interval_ms=1)
    job = spark_windows.sparkrunner_pipeline(path, 100)
    expected = spark_windows.dataframe_windows(spark, path, 100)
    assert len(expected) > 20 * spark_windows.KEYS and sum(expected.values()) == 3000  # 30 windows, keys hashed
    assert "Spark window aggregation" in runner.explain(job, physical=False)
    assert spark_windows._windows(runner, job) == expected
    assert spark_windows._windows(SparkRunner(spark, spark_aggregation=False), job) == expected
    args = cli.build_parser().parse_args(["bench", "spark-windows", "--events", "1000", "--json"])
    assert args.name == "spark-windows" and args.events == 1000


def test_the_joined_count_is_the_same_three_ways(runner, spark):
    """``jetbench bench spark-joins``: the DataFrame job, the SparkRunner with Spark's join and with
    Python's give the same count per name."""
    from jetbench.bench import spark_joins
    from jetbench.spark import SparkRunner

    path = datasets.events_path(3000, spark_joins.KEYS, interval_ms=1)
    job = spark_joins.sparkrunner_pipeline(path)
    expected = spark_joins.dataframe_join(spark, path)
    assert len(expected) == spark_joins.KEYS // 2 and 1000 < sum(expected.values()) < 2000  # half the keys named
    joins = SparkRunner(spark, spark_joins=True)
    assert "Spark join hash-join" in joins.explain(job, physical=False)
    assert spark_joins._counts(joins, job) == expected
    assert spark_joins._counts(runner, job) == expected
    args = cli.build_parser().parse_args(["bench", "spark-joins", "--events", "1000", "--json"])
    assert args.name == "spark-joins" and args.events == 1000
