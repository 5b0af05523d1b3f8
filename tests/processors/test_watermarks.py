"""InsertWatermarksP: limiting-lag watermarks throttled to frames, idle marker; and a job running
insert_watermarks -> window_aggregate on the engine."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from operator import itemgetter

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples
from window_helpers import CONTEXT, canon, drive, reference_sliding

from jetbench import DAG, Edge, ExecutionService
from jetbench.core.clock import MockClock
from jetbench.core.errors import JetbenchError
from jetbench.core.inbox import Inbox
from jetbench.core.items import IDLE_MESSAGE, Watermark
from jetbench.core.outbox import Outbox
from jetbench.core.processor import ProcessorContext
from jetbench.processors import collect_sink, items_source
from jetbench.processors.aggregate_operation import summing
from jetbench.processors.insert_watermarks import InsertWatermarksP, insert_watermarks
from jetbench.processors.window_aggregate import window_aggregate
from jetbench.processors.window_definition import WindowResult, sliding, tumbling
from jetbench.testing import verify_processor


def reference_insert(items: list, ts_fn, lag, frame) -> list:
    """Per item: stamp it, then a watermark if the throttled limiting-lag candidate went up."""
    out: list = []
    last = None
    top = -math.inf
    for x in items:
        ts = x[0] if ts_fn is None else ts_fn(x)
        out.append(x if ts_fn is None else (ts, x))
        top = max(top, ts)
        wm = int((top - lag) // frame) * frame  # floor division, as the processor: exact even for tiny lags
        if last is None or wm > last:
            out.append(Watermark(wm))
            last = wm
    return out


STAMPED = [(t, f"e{t}") for t in [5, 3, 12, 40, 38, 41, 95, 60, 100, 101, 250, 7]]


def test_verify_processor_with_ts_fn():
    items = [t for t, _ in STAMPED]
    expected = reference_insert(items, lambda x: 10 * x, 25, 100)
    assert sum(isinstance(x, Watermark) for x in expected) == 4
    report = verify_processor(
        insert_watermarks(lambda x: 10 * x, allowed_lag=25, throttle_frame=100),
        input=items,
        expected=expected,
    )
    assert [r.processor.watermarks_emitted for r in report.runs] == [4] * 5  # restored with the state


def test_verify_processor_passes_stamped_pairs_through_and_swallows_upstream_watermarks():
    steps = STAMPED[:5] + [Watermark(7)] + STAMPED[5:]
    verify_processor(
        insert_watermarks(None, allowed_lag=2, throttle_frame=10),
        input=steps,
        expected=reference_insert(STAMPED, None, 2, 10),
    )


def test_watermark_goes_right_after_the_item_that_raised_it():
    p = InsertWatermarksP(None, allowed_lag=0, throttle_frame=10)
    out = drive(p, STAMPED, batch=1024)
    assert out == [
        (5, "e5"), Watermark(0), (3, "e3"), (12, "e12"), Watermark(10), (40, "e40"), Watermark(40),
        (38, "e38"), (41, "e41"), (95, "e95"), Watermark(90), (60, "e60"), (100, "e100"),
        Watermark(100), (101, "e101"), (250, "e250"), Watermark(250), (7, "e7"),
    ]  # fmt: skip
    assert p.watermarks_emitted == 6


def test_a_batch_without_a_new_watermark_is_emitted_whole():
    p = InsertWatermarksP(None, allowed_lag=0, throttle_frame=1000)
    box = Outbox(1, capacity=1024)
    p.init(box, CONTEXT)
    p.process(0, Inbox([(1, "first")]))
    assert box.take_bucket(0) == [(1, "first")] and p.try_process()
    box.take_watermark()
    batch = [(t, t) for t in range(500)]
    p.process(0, Inbox(list(batch)))
    assert box.take_bucket(0) == batch and box.pending_watermark is None


@settings(max_examples=examples(50), deadline=None)
@given(
    stamps=st.lists(st.one_of(st.integers(-50, 500), st.floats(-50, 500)), max_size=40),
    lag=st.one_of(st.integers(0, 30), st.floats(0, 30)),
    frame=st.integers(1, 40),
    batch=st.sampled_from([1, 3, 1024]),
    capacity=st.sampled_from([1, 2, 1024]),
)
@example(stamps=[-1.0, -2.5497559739923395e-95], lag=1, frame=1, batch=1024, capacity=1024)
@example(stamps=[3, 1e-17 - 1.0, 2.0], lag=2.0, frame=1, batch=3, capacity=1024)
def test_matches_per_item_reference_whatever_the_batching(stamps, lag, frame, batch, capacity):
    items = [(ts, i) for i, ts in enumerate(stamps)]
    p = InsertWatermarksP(None, allowed_lag=lag, throttle_frame=frame)
    assert drive(p, items, batch=batch, capacity=capacity) == reference_insert(
        items, None, lag, frame
    )


@settings(max_examples=examples(50), deadline=None)
@given(
    stamps=st.lists(st.one_of(st.integers(-50, 500), st.floats(-50, 500)), max_size=40).map(sorted),
    lag=st.one_of(st.integers(0, 30), st.floats(0, 30)),
    frame=st.integers(1, 40),
    batch=st.sampled_from([1, 3, 1024]),
    capacity=st.sampled_from([1, 2, 1024]),
)
# a stamp a rounding below the threshold whose ``ts - lag`` rounds up onto the next frame
@example(stamps=[-1.0, -2.5497559739923395e-95], lag=1, frame=1, batch=1, capacity=1)
@example(stamps=[-1.0, -2.5497559739923395e-95], lag=1, frame=1, batch=1024, capacity=1024)
def test_ordered_input_matches_the_reference(stamps, lag, frame, batch, capacity):
    """``ordered``: a batch's last timestamp is its largest, and the items that raise the
    watermark are found by bisection; on timestamps that never decrease, the same output."""
    items = [(ts, i) for i, ts in enumerate(stamps)]
    p = InsertWatermarksP(None, allowed_lag=lag, throttle_frame=frame, ordered=True)
    assert drive(p, items, batch=batch, capacity=capacity) == reference_insert(items, None, lag, frame)


@settings(max_examples=examples(50), deadline=None)
@given(
    stamps=st.lists(st.integers(-50, 500), max_size=40),
    lag=st.integers(0, 30),
    frame=st.integers(1, 40),
    batch=st.sampled_from([1, 3, 1024]),
)
def test_ordered_said_of_unordered_input_only_delays_watermarks(stamps, lag, frame, batch):
    """A source wrongly said to be ordered: each watermark is at or below the one the reference
    has reached by then, so no item counts as late that would not otherwise."""
    items = [(ts, i) for i, ts in enumerate(stamps)]
    out = drive(InsertWatermarksP(None, allowed_lag=lag, throttle_frame=frame, ordered=True), items, batch=batch)
    assert [x for x in out if not isinstance(x, Watermark)] == items
    expected = reference_insert(items, None, lag, frame)
    reached, seen, by_position = None, 0, {0: None}  # the reference's watermark after each item
    for x in expected:
        if isinstance(x, Watermark):
            reached = x.timestamp
        else:
            seen += 1
        by_position[seen] = reached
    seen, last = 0, None
    for x in out:
        if isinstance(x, Watermark):
            assert by_position[seen] is not None and x.timestamp <= by_position[seen]
            assert last is None or x.timestamp > last
            last = x.timestamp
        else:
            seen += 1


def test_the_planner_passes_a_source_s_order_on():
    from jetbench import Pipeline, sinks
    from jetbench.nexmark.source import from_events
    from jetbench.pipeline.connectors import Source
    from jetbench.processors.items_source import stamped_items_source

    def watermarks_of(source):
        p = Pipeline()
        p.read_from(source).window(tumbling(10)).aggregate(summing()).write_to(sinks.collect())
        return next(v for v in p.to_dag().vertices if v.name.endswith("-watermarks")).supplier

    assert watermarks_of(from_events([(1, "a"), (5, "b"), (5, "c")])).params["ordered"] is True
    assert not watermarks_of(from_events([(5, "a"), (1, "b")])).params["ordered"]
    plain = Source("s", stamped_items_source([1, 2], [1, 2]), timestamped=True)
    assert not watermarks_of(plain).params["ordered"]


def test_throttled_to_frames_and_never_decreasing():
    p = InsertWatermarksP(None, allowed_lag=5, throttle_frame=100)
    out = drive(
        p, [(104, "a"), (106, "b"), (50, "late"), (199, "c"), (205, "d"), (304, "e")], batch=1
    )
    assert out == [
        (104, "a"), Watermark(0), (106, "b"), Watermark(100), (50, "late"), (199, "c"), (205, "d"),
        Watermark(200), (304, "e"),
    ]  # fmt: skip


def test_float_timestamps_and_negative_watermarks():
    p = InsertWatermarksP(lambda x: x, allowed_lag=0.5, throttle_frame=10)
    assert drive(p, [-3.0, 12.25], batch=1) == [
        (-3.0, -3.0),
        Watermark(-10),
        (12.25, 12.25),
        Watermark(10),
    ]


def _on_mock_clock(clock: MockClock) -> ProcessorContext:
    """A context whose clock is ``clock`` (InsertWatermarksP reads the time from it)."""
    return replace(CONTEXT, clock=clock)


def test_idle_marker_once_per_idle_period():
    clock = MockClock(start=1000.0)
    context = _on_mock_clock(clock)
    p = InsertWatermarksP(None, allowed_lag=0, throttle_frame=10, idle_timeout_ms=500)
    box = Outbox(1, capacity=16)
    p.init(box, context)
    clock.advance(0.499)
    assert p.try_process() and box.pending_watermark is None
    clock.advance(0.001)
    assert p.try_process() and box.pending_watermark is IDLE_MESSAGE
    box.take_watermark()
    clock.advance(5)
    assert p.try_process() and box.pending_watermark is None  # once only
    p.process(0, Inbox([(15, "x")]))
    assert box.take_bucket(0) == [(15, "x")]
    assert p.try_process() and box.pending_watermark == Watermark(10)
    box.take_watermark()
    clock.advance(0.4)
    assert p.try_process() and box.pending_watermark is None
    clock.advance(0.1)
    assert p.try_process() and box.pending_watermark is IDLE_MESSAGE
    assert (p.watermarks_emitted, p.idle_messages_emitted) == (1, 2)


def test_idle_marker_waits_for_pending_output():
    clock = MockClock(start=1000.0)
    context = _on_mock_clock(clock)
    p = InsertWatermarksP(None, allowed_lag=0, throttle_frame=10, idle_timeout_ms=100)
    box = Outbox(1, capacity=1)
    p.init(box, context)
    p.process(0, Inbox([(1, "a")]))
    clock.advance(1)
    assert not p.try_process()  # the watermark is still waiting behind (1, "a")
    assert box.take_bucket(0) == [(1, "a")]
    assert not p.try_process()  # the watermark went out, the idle marker waits behind it
    assert box.pending_watermark == Watermark(0)
    box.take_watermark()
    assert p.try_process() and box.pending_watermark is IDLE_MESSAGE
    box.take_watermark()
    assert p.try_process() and box.pending_watermark is None


def test_idle_disabled():
    clock = MockClock(start=1000.0)
    context = _on_mock_clock(clock)
    p = InsertWatermarksP(None, allowed_lag=0, throttle_frame=10, idle_timeout_ms=None)
    box = Outbox(1)
    p.init(box, context)
    clock.advance(10**6)
    assert p.try_process() and box.pending_watermark is None


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(ts_fn="x"), "ts_fn"),
        (dict(ts_fn=None, allowed_lag=-1), "allowed_lag"),
        (dict(ts_fn=None, throttle_frame=0), "throttle_frame"),
        (dict(ts_fn=None, throttle_frame=2.5), "throttle_frame"),
    ],
)
def test_argument_checks(kwargs, match):
    with pytest.raises(JetbenchError, match=match):
        insert_watermarks(**kwargs)


def test_supplier():
    s = insert_watermarks(None, allowed_lag=20, throttle_frame=100)
    assert repr(s) == "insert_watermarks(lag=20, frame=100)"
    a, b = s(), s()
    assert isinstance(a, InsertWatermarksP) and a is not b
    assert (a.allowed_lag, a.throttle_frame, a.idle_timeout_ms) == (20, 100, 60_000)


# -- on the engine -------------------------------------------------------------------------------


@pytest.mark.parametrize("wd", [tumbling(50), sliding(100, 25)], ids=repr)
def test_job_insert_watermarks_then_window_aggregate(threads, wd):
    events = [(t, (t % 3, t)) for t in range(0, 1000, 7)]  # in order: nothing is late
    op = summing(itemgetter(1))
    key_fn = itemgetter(0)
    dag = DAG()
    src = dag.new_vertex("src", items_source(events), local_parallelism=2)
    ins = dag.new_vertex(
        "wm", insert_watermarks(None, allowed_lag=0, throttle_frame=25), local_parallelism=2
    )
    win = dag.new_vertex("win", window_aggregate(key_fn, op, wd), local_parallelism=2)
    out = dag.new_vertex("out", collect_sink(), local_parallelism=1)
    dag.edge(Edge.between(src, ins).isolated())
    dag.edge(Edge.between(ins, win).partitioned(lambda pair: key_fn(pair[1])))
    dag.edge(Edge.between(win, out))
    result = ExecutionService(cooperative_threads=threads).run(dag, timeout=30)
    assert all(isinstance(r[1], WindowResult) for r in result)
    (expected,), _ = reference_sliding(events, key_fn, op, wd.size, wd.slide)
    assert Counter(map(canon, result)) == Counter(map(canon, expected))
