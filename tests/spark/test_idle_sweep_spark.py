"""The idle sweep against a Spark-backed replay (`--source spark`): the dataset is made before
any point, and each point's process replays it on the wall clock at the point's rate."""

from __future__ import annotations

import os

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
