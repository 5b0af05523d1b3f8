"""``jetbench nexmark --runner beam-jetbench|beam-direct``: Beam's own Nexmark query code on
jetbench's Beam runner or on Beam's DirectRunner, over the generated events as Beam's JSON lines
(each run in a fresh process, as `jetbench.nexmark.beam_queries` runs it)."""

from __future__ import annotations

import json

import pytest

from jetbench.cli import main

pytestmark = pytest.mark.slow


def run_cli(capsys, *args):
    code = main(["nexmark", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_beam_jetbench_and_beam_direct_give_the_same_count(capsys):
    rows = {}
    for runner in ("beam-jetbench", "beam-direct"):
        code, out, _ = run_cli(capsys, "--query", "5", "--events", "3000", "--generators", "1", "--runner", runner,
                               "--json")
        assert code == 0
        rows[runner] = json.loads(out)
    ours, direct = rows["beam-jetbench"], rows["beam-direct"]
    assert ours["runner"] == "jetbench.beam.JetbenchRunner" and direct["runner"] == "DirectRunner"
    assert ours["events"] == direct["events"] == 3000
    assert ours["results"] == direct["results"] > 0
    assert ours["events_per_s"] > 0


def test_text_report(capsys):
    code, out, _ = run_cli(capsys, "--query", "1", "--events", "500", "--generators", "1", "--runner", "beam-jetbench")
    assert code == 0
    assert out.startswith("nexmark Q1: ") and "events, Beam's query code on jetbench.beam.JetbenchRunner" in out


def test_a_beam_runner_takes_one_query(capsys):
    code, _, err = run_cli(capsys, "--suite", "smoke", "--runner", "beam-jetbench")
    assert code == 2 and "--runner beam-jetbench goes with --query N" in err


def test_bench_nexmark_beam_jetbench_sets_both_runners_side_by_side(capsys):
    """``jetbench bench nexmark --beam-jetbench``: per query Beam's DirectRunner and
    JetbenchRunner on Beam's query code, alternating, beside the native query."""
    code = main(["bench", "nexmark", "--events", "1000", "--beam-events", "1000", "--queries", "2", "--repeat", "1",
                 "--beam-jetbench", "--json"])
    out, _ = capsys.readouterr()
    assert code == 0
    (q,) = json.loads(out)["queries"]
    assert q["beam_runner"] == "DirectRunner" and q["beam_results"] == q["beam_runner_results"] == q["results"]
    assert q["beam_runner_events_per_s"] > 0 and q["beam_runner_x_direct"] > 0
    code = main(["bench", "nexmark", "--events", "1000", "--beam-events", "1000", "--queries", "2", "--repeat", "1",
                 "--beam-jetbench"])
    out, _ = capsys.readouterr()
    assert code == 0 and "on jetbench/s" in out and "x direct" in out
