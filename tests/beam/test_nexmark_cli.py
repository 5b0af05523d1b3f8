"""``jetbench nexmark --runner beam-jetbench|beam-direct``: Beam's own Nexmark query code on
jetbench's Beam runner or on Beam's DirectRunner, over the generated events as Beam's JSON lines
(each run in a fresh process, as `jetbench.bench.nexmark_beam` runs it)."""

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
