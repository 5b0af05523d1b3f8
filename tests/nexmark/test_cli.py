"""``jetbench nexmark``: a query's count, digest and speed; Beam's SMOKE counts; bad input is a
clear error with exit code 2."""

from __future__ import annotations

import json
import re

import pytest

from jetbench.cli import main


def run_cli(capsys, *args):
    code = main(["nexmark", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_query_as_json(capsys):
    code, out, _ = run_cli(capsys, "--query", "2", "--events", "20000", "--json")
    assert code == 0
    row = json.loads(out)
    assert row["query"] == 2 and row["events"] == 20_000 and row["generators"] == 100 and row["runner"] == "local"
    assert row["results"] > 0 and len(row["digest"]) == 16 and row["events_per_s"] > 0
    assert row["beam_smoke_count"] is None  # not a SMOKE-sized run


def test_text_report(capsys):
    code, out, _ = run_cli(capsys, "--query", "7", "--events", "3000", "--generators", "1")
    assert code == 0
    assert out.startswith("nexmark Q7: 1 results from 3,000 events (1 generator(s)), local runner")
    assert "events/s" in out and "generator (not included)" in out


def test_events_file_gives_the_same_results_as_generating(capsys, tmp_path):
    path = tmp_path / "events.jsonl"
    code, out, _ = run_cli(capsys, "--write-events", str(path), "--events", "5000", "--generators", "10")
    assert code == 0 and "wrote 5,000 events" in out
    assert len(path.read_text().splitlines()) == 5000
    for q in ("0", "5", "8"):
        _, from_file, _ = run_cli(capsys, "--query", q, "--events-file", str(path), "--json")
        _, generated, _ = run_cli(capsys, "--query", q, "--events", "5000", "--generators", "10", "--json")
        a, b = json.loads(from_file), json.loads(generated)
        assert (a["results"], a["digest"]) == (b["results"], b["digest"])
        assert a["generators"] is None


@pytest.mark.parametrize("args, message", [
    (["--query", "10"], "unknown query 10: this version has queries 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11"),
    (["--query", "12"], "unknown query 12"),
    (["--query", "1", "--events", "0"], "num_events must be an int > 0, got 0"),
    (["--query", "1", "--events", "-5"], "num_events must be an int > 0, got -5"),
    (["--query", "1", "--generators", "0"], "num_event_generators must be an int > 0"),
    (["--query", "1", "--suite", "smoke"], "give one of --query N, --suite smoke, --write-events PATH or --to-kafka TOPIC"),
    ([], "give one of"),
])
def test_bad_arguments(capsys, args, message):
    code, out, err = run_cli(capsys, *args)
    assert code == 2 and out == ""
    assert err.startswith("jetbench nexmark: error: ") and message in err


@pytest.mark.parametrize("content, message", [
    ("not json\n", "events.jsonl:1: not JSON"),
    ('{"auction":1,"bidder":2,"price":3,"dateTime":4,"extra":""}\n[1, 2]\n', "events.jsonl:2: a Nexmark event must be a JSON object"),
    ('{"id":1,"name":"x"}\n', "events.jsonl:1: Person lacks field(s) emailAddress"),
    ('{"auction":1,"bidder":2,"price":"3","dateTime":4,"extra":""}\n', "field 'price' of a Bid must be int"),
    ('{"colour":"red"}\n', "not a Person, Auction or Bid"),
    ("\n\n", "no events in"),
])
def test_malformed_events_file(capsys, tmp_path, content, message):
    path = tmp_path / "events.jsonl"
    path.write_text(content)
    code, out, err = run_cli(capsys, "--query", "1", "--events-file", str(path))
    assert code == 2 and out == ""
    assert message in err


def test_missing_events_file(capsys, tmp_path):
    code, _, err = run_cli(capsys, "--query", "1", "--events-file", str(tmp_path / "nope.jsonl"))
    assert code == 2 and "no events file" in err


def test_not_a_number_is_argparses_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["nexmark", "--query", "one"])
    assert exc.value.code == 2


@pytest.mark.slow
def test_smoke_suite_reproduces_beams_published_counts(capsys):
    code, out, _ = run_cli(capsys, "--suite", "smoke", "--json")
    rows = {r["query"]: r for r in json.loads(out)}
    assert {q: r["results"] for q, r in rows.items()} == {0: 100_000, 1: 92_000, 2: 351, 3: 580, 4: 40, 5: 12,
                                                          6: 401, 7: 1, 8: 6000, 9: 298, 11: 1919}
    # every count is Beam's published one but Q3's 444, from an older version of Query3
    assert all(r["results"] == r["beam_smoke_count"] for q, r in rows.items() if q != 3)
    assert rows[3]["beam_smoke_count"] == 444
    assert {q: r["events"] for q, r in rows.items() if r["events"] != 100_000} == {4: 10_000, 6: 10_000, 9: 10_000}
    assert code == 0


@pytest.mark.serial  # timing: failed beside other tests at load ~23 (scripts/test.sh runs it alone)
def test_rate_limited_run_reports_latency(capsys):
    # 4000 events at 20,000/s: 0.2 s of events (plus the 0.3 s lead before the base time)
    code, out, _ = run_cli(capsys, "--query", "1", "--rate", "20000", "--events", "4000", "--json")
    row = json.loads(out)
    assert code == 0 and row["rate"] == 20_000 and row["results"] == 3680 and row["flushed"] == 0
    assert 0 <= row["latency_p50_ms"] <= row["latency_p99_ms"] < 1000
    assert row["events_per_s"] < 20_000 * 1.1


@pytest.mark.serial  # timing: failed beside other tests at load ~23 (scripts/test.sh runs it alone)
def test_rate_limited_windows_closed_by_the_end_of_input_are_left_out(capsys):
    # 0.4 s of events, windows of 10 s: the last window is flushed when the input ends, and its
    # result is left out of the latency. The base time is the wall clock's, so in about one run
    # in twenty five the events straddle a window's end: the first window then closes on the
    # watermark, in time, and its result has a latency.
    code, out, _ = run_cli(capsys, "--query", "7", "--rate", "10000", "--events", "4000")
    assert code == 0
    results = int(re.search(r"Q7: ([\d,]+) results from", out).group(1).replace(",", ""))
    left_out = int(re.search(r"\(([\d,]+) results of windows still open when the input ended are left out\)",
                             out).group(1).replace(",", ""))
    assert left_out >= 1
    assert ("latency p50 -, p99 - (" in out) == (left_out == results), out


@pytest.mark.parametrize("args", [["--query", "1", "--rate", "0"], ["--query", "1", "--rate", "10", "--runner", "spark"],
                                  ["--suite", "smoke", "--rate", "10"]])
def test_bad_rate(capsys, args):
    code, _, err = run_cli(capsys, *args)
    assert code == 2 and "error:" in err
