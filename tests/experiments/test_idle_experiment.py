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
    summarize,
    targets,
)

ROW_KEYS = {"rate", "min_idle_us", "strategy", "cpu_percent", "achieved_rate", "latency_p50_ms", "latency_p99_ms"}


@pytest.fixture(scope="module")
def quick_sweep(tmp_path_factory):
    path = tmp_path_factory.mktemp("sweep") / "sweep.csv"
    return idle_sweep(rates=[500, 20_000], min_idle_us=[25, 1000], seconds=1.0, warmup=0.3,
                      strategies=["backoff", "timer"], csv_path=path, progress=False)


# the sweep measures CPU per point and compares them: alone, not beside other tests (scripts/test.sh)
@pytest.mark.slow
@pytest.mark.serial
def test_quick_sweep_structure_and_sane_values(quick_sweep):
    frame = quick_sweep
    assert len(frame) == 2 * 2 * 2 + 2
    assert set(frame.columns) >= ROW_KEYS
    assert os.path.exists(frame.attrs["csv_path"])
    cores = os.cpu_count()
    assert frame["cpu_percent"].between(0, 100 * cores + 5).all()
    jobs = frame[frame["strategy"] != "bare-sleep"]
    # items flowed at every point, and more of them at 20,000/s than at 500/s: how close each
    # came to its rate is a figure of the sweep (its `kept_up` column), not a claim a loaded
    # machine must meet; a 40-fold difference it cannot flip
    assert (jobs["achieved_rate"] > 0).all(), jobs[["rate", "strategy", "min_idle_us", "achieved_rate"]]
    achieved = jobs.pivot_table(index=["strategy", "min_idle_us"], columns="rate", values="achieved_rate")
    assert (achieved[20_000] > achieved[500]).all(), achieved
    assert (jobs["latency_p99_ms"] >= jobs["latency_p50_ms"]).all()
    assert (jobs["latency_p50_ms"] >= 0).all()
    bare = frame[frame["strategy"] == "bare-sleep"].set_index("min_idle_us")
    # a loop sleeping 1000 us wakes far less often, and burns less, than one sleeping 25 us
    assert bare.loc[1000, "wakeups_per_s"] < bare.loc[25, "wakeups_per_s"]
    assert bare.loc[1000, "cpu_percent"] < bare.loc[25, "cpu_percent"]


@pytest.mark.slow
@pytest.mark.serial  # with the sweep above, which runs once
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


def _row(rate, floor, strategy, cpu, p99=None, repeat=0, kept_up=True, rounds=1000.0, wakeups=1000.0):
    return {"rate": rate, "min_idle_us": floor, "strategy": strategy, "source": "generator", "cpu_percent": cpu,
            "worker_cpu_percent": cpu, "achieved_rate": float(rate), "kept_up": kept_up, "latency_p50_ms": p99,
            "latency_p99_ms": p99, "wakeups_per_s": wakeups, "iterations_per_s": rounds, "repeat": repeat}


def test_summarize_takes_medians_over_repeats():
    import pandas as pd

    frame = pd.DataFrame([_row(1000, 25, "backoff", cpu, 0.5, repeat=k, kept_up=k != 1)
                          for k, cpu in enumerate((30.0, 10.0, 20.0))] + [_row(0, 1000, "bare-sleep", 3.0)])
    summary = summarize(frame).set_index("strategy")
    assert summary.loc["backoff", "cpu_percent"] == 20.0
    assert (summary.loc["backoff", "cpu_min"], summary.loc["backoff", "cpu_max"]) == (10.0, 30.0)
    assert summary.loc["backoff", "runs"] == 3 and not summary.loc["backoff", "kept_up"]
    assert summary.loc["bare-sleep", "runs"] == 1 and summary.loc["bare-sleep", "source"] == "generator"
    assert "repeat" not in summary.columns
    assert blog_table(frame).loc[1000, "jetbench backoff 25us"] == 20.0


def test_targets_check_the_issue_limits():
    import pandas as pd

    frame = pd.DataFrame([
        _row(1000, 25, "backoff", 30.0, p99=0.6), _row(1000, 1000, "backoff", 11.0, p99=1.2),
        _row(1000, 1000, "timer", 10.0, p99=0.3),
        _row(250_000, 25, "backoff", 100.0, p99=0.2, rounds=40_000),
        _row(250_000, 1000, "backoff", 100.0, p99=0.2, rounds=40_000),
        _row(250_000, 1000, "timer", 25.0, p99=1.3),
        _row(0, 1000, "bare-sleep", 3.0), _row(0, 25, "bare-sleep", 25.0, wakeups=9000.0),
    ])
    table = targets(frame).set_index(["target", "rate"])
    assert table.loc[("timer 1000us CPU % <= backoff 1000us", 1000), "met"]
    assert table.loc[("timer 1000us p99 ms <= backoff 25us", 1000), "met"]
    assert not table.loc[("timer 1000us p99 ms <= backoff 25us", 250_000), "met"]
    blog_1k = table.loc[("1000us floor CPU % vs Jet's blog", 1000)]
    assert blog_1k["limit"] == 4.5 and blog_1k["measured"] == 10.0 and not blog_1k["met"]
    assert table.loc[("1000us floor CPU % vs Jet's blog", 250_000), "limit"] == 19.0
    # wake-up 30 us of CPU (bare 1000 us row), shortest sleep 1/9000 s, a hot round 25 us (spinning rows)
    # p99 bound at 250k within a whole core: the shortest sleep plus a round, less the gap between items
    p99_bound = table.loc[("timer 1000us p99 ms <= backoff 25us", 250_000), "bound"]
    assert p99_bound == pytest.approx((1 / 9000 + 25e-6 - 1 / 250_000) * 1e3)
    # CPU bound at 1k for p99 <= 0.6 ms: one wake-up and round per 1.6 ms
    cpu_bound = table.loc[("timer 1000us CPU % <= backoff 1000us", 1000), "bound"]
    assert cpu_bound == pytest.approx(100 * 55e-6 / 1.6e-3)
    # blog rows: each strategy's own wake-ups and rounds priced hot, the lower of the two;
    # at 250k backoff's 40,000 rounds/s would cost a whole core, the timer's 1000 only 5.5 %
    assert blog_1k["bound"] == pytest.approx(100 * 1000 * (30e-6 + 25e-6))
    assert table.loc[("1000us floor CPU % vs Jet's blog", 250_000), "bound"] == pytest.approx(5.5)


def test_idle_costs_fit_rounds_and_bound_sleeping():
    import math

    import pandas as pd

    from jetbench.experiments.bounds import IdleCosts, idle_costs

    # two spinning rows: 30 us + 0.5 us per item, at 2 and 22 items per round
    frame = pd.DataFrame([
        _row(50_000, 25, "backoff", 100.0, rounds=1 / 31e-6 * 1.0),
        _row(250_000, 25, "backoff", 100.0, rounds=1 / 41e-6),
        _row(0, 25, "bare-sleep", 25.0, wakeups=9000.0), _row(0, 1000, "bare-sleep", 3.0, wakeups=900.0),
    ])
    frame.loc[0, "achieved_rate"] = 2 / 31e-6
    frame.loc[1, "achieved_rate"] = 22 / 41e-6
    costs = idle_costs(frame)
    assert costs.round_s == pytest.approx(30e-6) and costs.item_s == pytest.approx(0.5e-6)
    assert costs.wake_s == pytest.approx(0.03 / 900) and costs.shortest_sleep_s == pytest.approx(1 / 9000)
    assert idle_costs(frame[frame["strategy"] == "bare-sleep"]) is None  # no spinning row: can't tell
    saturated = IdleCosts(wake_s=30e-6, shortest_sleep_s=1e-4, round_s=30e-6, item_s=1e-6)
    assert saturated.min_gap_s(1_000_000, cpu_share=1.0) == math.inf  # items alone fill the core
    assert saturated.p99_bound_ms(10_000, cpu_percent=1) == math.inf


def test_repeats_must_be_a_positive_int():
    from jetbench.core import JetbenchError

    with pytest.raises(JetbenchError, match="repeats"):
        idle_sweep(rates=[1000], repeats=0, progress=False)


@pytest.mark.parametrize(("kwargs", "names"), [
    ({"rates": []}, "rates"),
    ({"rates": [1000, -5]}, "rates"),
    ({"rates": ["fast"]}, "rates"),
    ({"rates": 1000}, "rates"),
    ({"min_idle_us": [-1]}, "min_idle_us"),
    ({"seconds": 0}, "seconds"),
    ({"warmup": -1}, "warmup"),
    ({"source": "kafka"}, "source"),
    ({"strategies": ["spin"]}, "strategies"),
    ({"strategies": "timer"}, "strategies"),
    ({"max_idle_us": -3}, "max_idle_us"),
])
def test_bad_sweep_arguments_are_refused_before_any_point_runs(kwargs, names, tmp_path):
    from jetbench.core import JetbenchError

    csv = tmp_path / "sweep.csv"
    with pytest.raises(JetbenchError, match=f"idle_sweep: {names} must"):
        idle_sweep(**{"rates": [1000], "seconds": 0.2, "warmup": 0, "progress": False, "csv_path": csv, **kwargs})
    assert not csv.exists()


def test_sweep_arguments_may_be_any_iterable(tmp_path):
    frame = idle_sweep(rates=(r for r in [2000]), min_idle_us=range(1000, 1001), strategies=iter(["timer"]),
                       seconds=0.3, warmup=0.1, progress=False, csv_path=tmp_path / "s.csv")
    assert sorted(frame["strategy"]) == ["bare-sleep", "timer"]
    assert (frame[frame["strategy"] == "timer"]["rate"] == 2000).all()


def test_idle_costs_stay_optimistic_when_rounds_carry_alike_item_counts():
    import pandas as pd

    from jetbench.experiments.bounds import idle_costs

    # a quick sweep: its only spinning rows carry ~8 items a round, 33 and 34 us each
    frame = pd.DataFrame([
        _row(250_000, 25, "backoff", 100.0, rounds=1 / 33e-6),
        _row(250_000, 1000, "backoff", 100.0, rounds=1 / 34e-6),
        _row(0, 25, "bare-sleep", 22.0, wakeups=9600.0), _row(0, 1000, "bare-sleep", 2.0, wakeups=910.0),
    ])
    frame.loc[0, "achieved_rate"] = 8.25 / 33e-6
    frame.loc[1, "achieved_rate"] = 8.5 / 34e-6
    costs = idle_costs(frame)
    assert costs.item_s == 0 and costs.round_s == pytest.approx(33e-6)
    # so the blog row's bound at 250k stays far below a whole core
    assert costs.cpu_percent_at(250_000, wakeups_per_s=1000, rounds_per_s=1000) < 10
