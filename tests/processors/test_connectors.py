"""Unit tests of the connector processors (files, generator, test stream, sinks) with
`verify_processor`; end-to-end jobs are in tests/test_sources_sinks.py."""

from __future__ import annotations

import dataclasses
import time
from typing import NamedTuple

import psutil
import pytest

from jetbench import JetbenchError
from jetbench.core.clock import MockClock
from jetbench.core.inbox import Inbox
from jetbench.core.outbox import Outbox
from jetbench.core.processor import ProcessorContext
from jetbench.processors.callback_sink import callback_sink
from jetbench.processors.event_stream_source import event_stream_source
from jetbench.processors.files_sink import files_sink
from jetbench.processors.files_source import files_source
from jetbench.processors.generator_source import GeneratorP, generator_source
from jetbench.processors.latency_sink import LatencySinkP, latency_sink, summarize_latency
from jetbench.processors.pandas_sink import pandas_sink
from jetbench.processors.to_dict_sink import to_dict_sink
from jetbench.testing import verify_processor


def instance(k: int, n: int) -> dict:
    return {"global_index": k, "total_parallelism": n, "local_index": k, "local_parallelism": n}


# -- files source -----------------------------------------------------------------------------


@pytest.fixture
def text_files(tmp_path):
    (tmp_path / "b.txt").write_text("b1\nb2\n")
    (tmp_path / "a.txt").write_text("a1\n\na3")  # an empty line, no final newline
    (tmp_path / "c.txt").write_text("")
    (tmp_path / "d.txt").write_bytes(b"d1\r\nd2\r\n")  # universal newlines
    (tmp_path / "sub").mkdir()  # a directory matching the glob is skipped
    return tmp_path


def test_files_source_reads_lines_in_path_order(text_files):
    supplier = files_source(str(text_files / "*"))
    assert [p.rsplit("/", 1)[1] for p in supplier.paths] == ["a.txt", "b.txt", "c.txt", "d.txt"]
    verify_processor(supplier, expected=["a1", "", "a3", "b1", "b2", "d1", "d2"])


def test_files_source_splits_files_over_instances(text_files):
    supplier = files_source(str(text_files / "*.txt"))
    verify_processor(supplier, context=instance(0, 2), expected=["a1", "", "a3"])  # a.txt, c.txt
    verify_processor(supplier, context=instance(1, 2), expected=["b1", "b2", "d1", "d2"])
    verify_processor(supplier, context=instance(4, 5), expected=[])


def test_files_source_reads_big_files_in_chunks(tmp_path):
    lines = [f"line {i} " + "x" * (i % 50) for i in range(20_000)]
    (tmp_path / "big.txt").write_text("\n".join(lines) + "\n")
    report = verify_processor(files_source(str(tmp_path / "big.txt")), expected=lines)
    assert report.runs[0].calls > 2  # several chunks, not one huge batch


def open_files() -> set[str]:
    """The paths this process has open."""
    return {f.path for f in psutil.Process().open_files()}


def test_files_source_is_non_cooperative_and_closes_its_file(tmp_path):
    (tmp_path / "f.txt").write_text("1\n2\n")
    p = files_source(str(tmp_path / "f.txt"))()
    assert p.is_cooperative is False
    p.init(Outbox(1, capacity=1), ProcessorContext("files", 0, 0, 1, 1))
    assert p.complete() is False  # emitted the first chunk, file still open
    path = str(tmp_path / "f.txt")
    assert path in open_files()
    p.close()
    assert path not in open_files()


def test_files_source_without_match_fails_at_creation(tmp_path):
    with pytest.raises(JetbenchError, match="no file matches"):
        files_source(str(tmp_path / "missing-*.txt"))


# -- generator --------------------------------------------------------------------------------


def test_generator_with_count_emits_every_sequence_number():
    verify_processor(generator_source(1e9, timestamped=False, count=10), expected=list(range(10)))


def test_generator_spreads_sequence_numbers_over_instances():
    source = generator_source(1e9, item_fn=lambda s: f"#{s}", timestamped=False, count=10)
    verify_processor(source, context=instance(1, 3), expected=["#1", "#4", "#7"])
    verify_processor(source, context=instance(2, 3), expected=["#2", "#5", "#8"])
    verify_processor(generator_source(1e9, count=2), context=instance(3, 4), expected=[])


def test_generator_timestamps_are_wall_clock_ms():
    before = time.time_ns() / 1e6

    def check(output):
        after = time.time_ns() / 1e6
        assert [item for _, item in output] == list(range(50))
        assert all(isinstance(ts, float) and before <= ts <= after for ts, _ in output)

    verify_processor(generator_source(1e9, count=50), assert_output=check)


def test_generator_emits_only_what_is_due_and_never_completes_without_count():
    clock = MockClock()  # the test moves the time: no real sleep a loaded machine can stretch
    p = GeneratorP(rate_per_s=10, timestamped=False)  # one item per 100 ms
    outbox = Outbox(1, capacity=100)
    p.init(outbox, ProcessorContext("gen", 0, 0, 1, 1, clock=clock))
    assert p.complete() is False
    assert outbox.take_bucket(0) == [0]  # seq 0 is due at once
    accepted = outbox.accepted
    clock.advance(0.099)
    for _ in range(100):  # nothing due until 100 ms: no offer at all, so the worker can idle
        assert p.complete() is False
    assert outbox.accepted == accepted
    clock.advance(0.151)  # 250 ms: seqs 1 and 2 are due, 3 is not
    assert p.complete() is False
    assert outbox.take_bucket(0) == [1, 2]
    clock.advance(10.0)
    assert p.complete() is False  # without a count it never completes


def test_generator_respects_outbox_room():
    p = GeneratorP(rate_per_s=1e9, timestamped=False, count=5000)
    outbox = Outbox(1, capacity=300)
    p.init(outbox, ProcessorContext("gen", 0, 0, 1, 1))
    time.sleep(0.01)
    assert p.complete() is False
    assert outbox.take_bucket(0) == list(range(300))


@pytest.mark.parametrize("kwargs", [{"rate_per_s": 0}, {"rate_per_s": -1}, {"rate_per_s": "fast"},
                                    {"rate_per_s": 10, "count": -1}, {"rate_per_s": 10, "item_fn": 3}])
def test_generator_rejects_bad_arguments(kwargs):
    with pytest.raises(JetbenchError):
        generator_source(**kwargs)


# -- test stream ------------------------------------------------------------------------------


def test_test_stream_emits_events_in_order_from_instance_zero():
    events = [(30, "c"), (10, "a"), [20, "b"]]
    source = event_stream_source(events)
    verify_processor(source, expected=[(30, "c"), (10, "a"), (20, "b")])
    verify_processor(source, context=instance(1, 2), expected=[])


@pytest.mark.parametrize("events", [[(1, 2, 3)], ["ab"], [("late", 1)], [(True, 1)]])
def test_test_stream_rejects_malformed_events(events):
    with pytest.raises(JetbenchError):
        event_stream_source(events)


# -- sinks ------------------------------------------------------------------------------------


def test_to_dict_sink_last_value_wins():
    supplier = to_dict_sink()
    report = verify_processor(supplier, input=[("a", 1), ("b", 2), ("a", 3)], output_ordinals=0)
    for run in report.runs:
        assert run.processor.result_part() == {"a": 3, "b": 2}
    assert supplier.merge_results([{"a": 1, "b": 1}, {"b": 2}]) == {"a": 1, "b": 2}
    assert supplier.merge_results([{}]) == {}


def test_callback_sink_calls_fn_per_item():
    seen = []
    verify_processor(callback_sink(seen.append), input=[1, 2, 3], output_ordinals=0)
    assert seen == [1, 2, 3] * 2  # two runs
    with pytest.raises(JetbenchError):
        callback_sink("not callable")


class Point(NamedTuple):
    x: int
    y: str


@dataclasses.dataclass
class Row:
    x: int
    y: str


@pytest.mark.parametrize("make", [Point, Row, lambda x, y: {"x": x, "y": y}], ids=["namedtuple", "dataclass", "dict"])
def test_pandas_sink_makes_columns(make):
    report = verify_processor(pandas_sink(), input=[make(1, "a"), make(2, "b")], output_ordinals=0)
    part = report.runs[0].processor.result_part()
    df = pandas_sink().merge_results([part, [make(3, "c")]])
    assert list(df.columns) == ["x", "y"]
    assert df["x"].tolist() == [1, 2, 3]
    assert df["y"].tolist() == ["a", "b", "c"]


def test_pandas_sink_of_nothing_is_an_empty_frame():
    assert pandas_sink().merge_results([[], []]).empty


def test_files_sink_writes_part_files(tmp_path):
    out = tmp_path / "out" / "nested"
    supplier = files_sink(out)
    assert supplier().is_cooperative is False
    # without a guarantee: one file per instance (the two-phase files: tests/processors/test_snapshots.py)
    verify_processor(supplier, input=["a", 1, (2, 3)], output_ordinals=0, context=instance(3, 4), snapshots=False)
    assert (out / "part-00003").read_text() == "a\n1\n(2, 3)\n"


def test_files_sink_close_flushes_and_releases_its_file(tmp_path):
    p = files_sink(tmp_path / "out")()
    p.init(Outbox(1), ProcessorContext("files", 0, 2, 1, 3))
    p.process(0, Inbox(["a", 1]))
    path = tmp_path / "out" / "part-00002"
    assert str(path) in open_files()
    p.close()
    assert str(path) not in open_files()
    assert path.read_text() == "a\n1\n"
    p.close()  # closing twice is harmless and changes nothing
    assert path.read_text() == "a\n1\n"


def test_files_sink_close_without_init_creates_nothing(tmp_path):
    files_sink(tmp_path / "never-created")().close()
    assert not (tmp_path / "never-created").exists()


# -- latency ----------------------------------------------------------------------------------


def test_latency_sink_measures_now_minus_timestamp():
    now = time.time_ns() / 1e6
    events = [(now - 50, "a"), (now - 10, "b"), (now - 30, "c")]
    report = verify_processor(latency_sink(), input=events, output_ordinals=0)
    summary = latency_sink().merge_results([run.processor.result_part() for run in report.runs])
    assert summary["count"] == 3 * len(report.runs)
    assert 30 <= summary["p50_ms"] < 1030  # the 30 ms one, plus the time the test took
    assert summary["max_ms"] >= 50 and summary["mean_ms"] >= 30
    assert summary["p50_ms"] <= summary["p90_ms"] <= summary["p99_ms"] <= summary["p999_ms"] <= summary["max_ms"]


def test_latency_percentiles_are_nearest_rank():
    parts = [(100, float(sum(range(1, 101))), 100.0, [float(v) for v in range(1, 101)])]
    s = summarize_latency(parts)
    assert (s["count"], s["mean_ms"], s["max_ms"]) == (100, 50.5, 100.0)
    assert (s["p50_ms"], s["p90_ms"], s["p99_ms"], s["p999_ms"]) == (50.0, 90.0, 99.0, 100.0)


def test_latency_summary_of_nothing():
    s = summarize_latency([LatencySinkP().result_part()])
    assert s == {"count": 0, "mean_ms": None, "p50_ms": None, "p90_ms": None, "p99_ms": None,
                 "p999_ms": None, "max_ms": None}


def test_latency_reservoir_keeps_a_bounded_uniform_sample():
    p = LatencySinkP(limit=1000, seed=7)
    now = time.time_ns() / 1e6
    for start in range(0, 20_000, 500):  # latencies 0..20 s in 1 ms steps, oldest first
        p.process(0, Inbox([(now - v, None) for v in range(start, start + 500)]))
    count, total, biggest, samples = p.result_part()
    assert count == 20_000 and len(samples) == 1000
    assert biggest >= 19_999
    s = summarize_latency([p.result_part()])
    assert s["mean_ms"] == pytest.approx(10_000, rel=0.01)  # exact, from the sum
    assert s["p50_ms"] == pytest.approx(10_000, rel=0.15)  # from the sample


def test_latency_merge_weighs_sampled_parts():
    # part A: 10 items all at 1 ms, fully kept; part B: 10,000 items at 100 ms, sampled to 10
    a = (10, 10.0, 1.0, [1.0] * 10)
    b = (10_000, 1e6, 100.0, [100.0] * 10)
    s = summarize_latency([a, b])
    assert s["p50_ms"] == 100.0  # unweighted, half the samples would say 1 ms
    assert s["mean_ms"] == pytest.approx((10 + 1e6) / 10_010)
