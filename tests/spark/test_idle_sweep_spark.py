"""The idle sweep against a Spark-backed replay (`--source spark`): the dataset is made before
any point, and each point's process replays it on the wall clock at the point's rate."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from jetbench.experiments import idle_sweep


@pytest.mark.slow
def test_idle_sweep_replays_a_spark_dataset_at_the_rate(spark, tmp_path):
    frame = idle_sweep(rates=[1000], min_idle_us=[1000], strategies=["timer"], seconds=1.0, warmup=0.5,
                       source="spark", csv_path=tmp_path / "sweep.csv", progress=False)
    assert (tmp_path / "sweep.csv").exists()
    row = frame[frame["strategy"] == "timer"].iloc[0]
    assert row["source"] == "spark"
    assert abs(row["achieved_rate"] - 1000) <= 100, row.to_dict()
    assert 0 < row["cpu_percent"] < 100 * (os.cpu_count() or 1) + 5
    assert 0 <= row["latency_p50_ms"] <= row["latency_p99_ms"]


def test_a_replay_of_a_dataset_spark_made_starts_no_jvm(spark):
    """A sweep point's process reads the files Spark wrote (pyarrow): no JVM of its own, whose
    threads would share the cores the point measures."""
    from jetbench.experiments.spark_source import prepare_spark_dataset

    prepare_spark_dataset(1000 * 1.5)
    code = ("from jetbench.experiments.spark_source import spark_replay_source\n"
            "source = spark_replay_source(1000, 1.5)\n"
            "import pyspark\n"
            "assert pyspark.SparkContext._gateway is None and pyspark.SparkContext._active_spark_context is None\n"
            "print(source.name, len(source.supplier.items))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "1500", done.stdout
