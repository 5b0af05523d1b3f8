"""The command line, run as a user would (a subprocess of the installed entry point's module)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

REQUIRED_KEYS = {"items", "jetbench_items_per_s", "baseline_items_per_s", "ratio", "results_equal"}


def jetbench(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "jetbench", *args], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_demo_prints_top_words_and_metrics():
    out = jetbench("demo", "--lines", "2000", "--top", "3")
    assert "top 3 words:" in out
    assert "per-tasklet metrics:" in out
    for vertex in ("source#0", "tokenize#0", "accumulate#0", "combine#0", "sink#0"):
        assert vertex in out


@pytest.mark.parametrize(
    "args",
    [
        ("chain", "--items", "20000", "--queue-items", "2000", "--repeat", "1"),
        ("chain", "--items", "20000", "--fused", "--queue-items", "0", "--repeat", "1"),
        ("wordcount", "--lines", "2000", "--repeat", "1"),
    ],
)
def test_bench_json(args):
    report = json.loads(jetbench("bench", *args, "--json"))
    assert report.keys() >= REQUIRED_KEYS
    assert report["results_equal"] is True
    assert report["ratio"] == pytest.approx(report["jetbench_items_per_s"] / report["baseline_items_per_s"])


def test_bench_rejects_unknown_name():
    done = subprocess.run([sys.executable, "-m", "jetbench", "bench", "nope"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "invalid choice" in done.stderr


@pytest.mark.slow
def test_demo_on_a_corpus_served_by_embedded_spark():
    out = jetbench("demo", "--source", "spark", "--lines", "2000", "--top", "3")
    assert "corpus served by Spark (local[" in out
    assert "top 3 words:" in out
    assert "spark.dataframe#0" in out


def test_unknown_arguments_are_refused_outside_lab():
    done = subprocess.run([sys.executable, "-m", "jetbench", "demo", "--bogus"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2
    assert "unrecognized arguments: --bogus" in done.stderr


def test_idle_experiment_refuses_bad_arguments_with_a_message():
    done = subprocess.run([sys.executable, "-m", "jetbench", "idle-experiment", "--rates", "1000", "-5",
                           "--no-progress"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "idle-experiment: error: idle_sweep: rates must be numbers > 0, got -5.0" in done.stderr
    assert "Traceback" not in done.stderr
