"""The idle-CPU experiment: a quick real sweep and the CLI's JSON schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from jetbench.experiments import (
    blog_table,
    idle_sweep,
    plot_cpu_vs_rate,
    plot_latency_vs_floor,
    plot_tradeoff,
    sleep_granularity,
)

ROW_KEYS = {"rate", "min_idle_us", "strategy", "cpu_percent", "achieved_rate", "latency_p50_ms", "latency_p99_ms"}


@pytest.fixture(scope="module")
def quick_sweep(tmp_path_factory):
    path = tmp_path_factory.mktemp("sweep") / "sweep.csv"
    return idle_sweep(rates=[500, 20_000], min_idle_us=[25, 1000], seconds=1.0, warmup=0.3,
                      strategies=["backoff", "timer"], csv_path=path, progress=False)


@pytest.mark.slow
def test_quick_sweep_structure_and_sane_values(quick_sweep):
    frame = quick_sweep
    assert len(frame) == 2 * 2 * 2 + 2
    assert set(frame.columns) >= ROW_KEYS
    assert os.path.exists(frame.attrs["csv_path"])
    cores = os.cpu_count()
    assert frame["cpu_percent"].between(0, 100 * cores + 5).all()
    jobs = frame[frame["strategy"] != "bare-sleep"]
    low = jobs[jobs["rate"] == 500]
    assert (abs(low["achieved_rate"] - 500) <= 50).all(), low[["strategy", "min_idle_us", "achieved_rate"]]
    assert (jobs["latency_p99_ms"] >= jobs["latency_p50_ms"]).all()
    assert (jobs["latency_p50_ms"] >= 0).all()
    bare = frame[frame["strategy"] == "bare-sleep"].set_index("min_idle_us")
    # a loop sleeping 1000 us wakes far less often, and burns less, than one sleeping 25 us
    assert bare.loc[1000, "wakeups_per_s"] < bare.loc[25, "wakeups_per_s"]
    assert bare.loc[1000, "cpu_percent"] < bare.loc[25, "cpu_percent"]


@pytest.mark.slow
def test_reports_from_a_sweep(quick_sweep):
    table = blog_table(quick_sweep)
    assert "jet 25us" in table.columns and "jetbench timer 25us" in table.columns
    for plot in (plot_cpu_vs_rate, plot_latency_vs_floor, plot_tradeoff):
        fig = plot(quick_sweep)
        assert fig.axes and any(ax.lines or ax.collections for ax in fig.axes)


def test_sleep_granularity_is_measured():
    costs = sleep_granularity((25, 1000), seconds=0.1)
    assert costs[0].actual_us >= 25 and costs[1].actual_us >= 1000
    assert all(c.cpu_per_wakeup_us > 0 for c in costs)


@pytest.mark.slow
def test_cli_quick_json_schema(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "jetbench", "idle-experiment", "--quick", "--json", "--no-progress",
         "--csv", str(tmp_path / "q.csv")],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert all(row.keys() >= ROW_KEYS for row in rows)
    jobs = [r for r in rows if r["strategy"] != "bare-sleep"]
    assert {(r["rate"], r["min_idle_us"], r["strategy"]) for r in jobs} == {
        (rate, floor, strategy) for rate in (1000, 250_000) for floor in (25, 1000) for strategy in ("backoff", "timer")
    }
    assert {r["min_idle_us"] for r in rows if r["strategy"] == "bare-sleep"} == {25, 1000}
