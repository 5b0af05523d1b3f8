"""``jetbench bench nexmark`` on tiny input: every figure is there and sane, jetbench's results
equal the plain loop's; Beam's DirectRunner on Beam's own query code over the same events (Beam
is installed in CI); a clear message without Beam. No speed is asserted."""

from __future__ import annotations

import json

import pytest

from jetbench.bench import nexmark as bench
from jetbench.cli import main
from jetbench.core.errors import JetbenchError
from jetbench.nexmark import beam_queries
from jetbench.nexmark.config import NexmarkConfig
from jetbench.nexmark.generator import generate
from jetbench.nexmark.reference import REFERENCE


def test_every_query_on_tiny_input_equals_the_loop():
    report = bench.run(events=3_000, repeat=1)
    assert report.results_equal and report.events == 3_000 and report.generators == 1
    assert report.generator_events_per_s > 0
    assert [q["query"] for q in report.queries] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11]
    config = NexmarkConfig(num_events=3_000, num_event_generators=1)
    events = [e for _, e in generate(config)]
    for q in report.queries:
        assert q["results_equal"], q
        assert q["results"] == q["loop_results"] == len(REFERENCE[q["query"]](events, config))
        assert q["jetbench_events_per_s"] > 0 and q["loop_events_per_s"] > 0
        assert q["ratio"] == pytest.approx(q["jetbench_events_per_s"] / q["loop_events_per_s"])
        assert q["cpu_ratio"] == pytest.approx(q["loop_cpu_s"] / q["jetbench_cpu_s"]) and q["loop_cpu_s"] > 0
        assert len(q["digest"]) == 16
    assert report.query(5)["flink_per_core"] == 22_000 and report.query(11)["flink_per_core"] is None
    assert report.extra["cooperative_threads"] == 1 and report.extra["engine_build"] in ("compiled", "pure", "mixed")


def test_the_command_as_json(capsys):
    code = main(["bench", "nexmark", "--events", "2000", "--queries", "2", "7", "--repeat", "1", "--generators", "100",
                 "--json"])
    out, _ = capsys.readouterr()
    assert code == 0
    data = json.loads(out)
    assert data["events"] == 2_000 and data["generators"] == 100 and data["results_equal"] is True
    assert [q["query"] for q in data["queries"]] == [2, 7]
    assert "load_average_before" in data and "beam_events" not in data


def test_the_command_as_text(capsys):
    code = main(["bench", "nexmark", "--events", "1000", "--queries", "1", "--repeat", "1"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert out.startswith("nexmark: 1,000 events in memory (1 generator(s);")
    assert " Q1 " in out and "True" in out


def test_bad_arguments_are_clear_errors(capsys):
    with pytest.raises(bench.NexmarkBenchError, match="--events must be an int > 0"):
        bench.run(events=0)
    with pytest.raises(bench.NexmarkBenchError, match="--repeat"):
        bench.run(events=10, repeat=0)
    with pytest.raises(JetbenchError, match="unknown query 10"):
        bench.run(events=10, queries=[10])
    assert main(["bench", "nexmark", "--events", "10", "--queries", "12"]) == 2
    assert "unknown query 12" in capsys.readouterr().err


@pytest.mark.slow  # a fresh Beam process per query (two for Q9): about 12 s
def test_beam_directrunner_on_the_same_events():
    pytest.importorskip("apache_beam")
    report = bench.run(events=1_000, queries=[1, 2, 9], repeat=1)
    bench.add_beam(report, events=1_500)
    assert report.extra["beam_events"] == 1_500
    config = NexmarkConfig(num_events=1_500, num_event_generators=1)
    events = [e for _, e in generate(config)]
    for q in report.queries:
        assert q["beam_events_per_s"] > 0 and q["beam_jetbench_events_per_s"] > 0 and q["beam_ratio"] > 0
    # Beam's Q1 and Q2 select as ours do: the same counts over the same events
    assert report.query(1)["beam_results"] == len(REFERENCE[1](events, config))
    assert report.query(2)["beam_results"] == len(REFERENCE[2](events, config))
    assert report.query(1)["beam_runner"] == "DirectRunner"
    assert report.query(9)["beam_runner"] in beam_queries.RUNNERS


def test_without_beam_a_clear_message(monkeypatch):
    monkeypatch.setattr(beam_queries.importlib.util, "find_spec", lambda name: None)
    assert beam_queries.beam_missing() is not None and "pip install jetbench[beam]" in beam_queries.beam_missing()
    report = bench.run(events=500, queries=[1], repeat=1)
    with pytest.raises(beam_queries.BeamMissingError, match=r"pip install jetbench\[beam\]"):
        bench.add_beam(report, events=500)
