"""SlidingWindowP / SessionWindowP: the processor harness, examples, and property tests against
plain-Python references (tests/processors/window_helpers.py)."""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from operator import itemgetter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples
from stamped_helpers import reading_pairs
from window_helpers import (
    assert_matches,
    drive,
    reference_session,
    reference_sliding,
    split_segments,
)

from jetbench.core.errors import JetbenchError
from jetbench.core.items import Watermark
from jetbench.processors.aggregate_operation import (
    AggregateOperation,
    adds_one,
    counting,
    summing,
    to_list,
)
from jetbench.processors.window_aggregate import SessionWindowP, SlidingWindowP, window_aggregate
from jetbench.processors.window_definition import (
    WindowDefinition,
    WindowResult,
    session,
    sliding,
    tumbling,
)
from jetbench.testing import verify_processor

key0 = itemgetter(0)
value_sum = summing(itemgetter(1))  # has combine and deduct
value_sum_no_deduct = dataclasses.replace(value_sum, deduct=None)
sorted_values = dataclasses.replace(to_list(), finish=lambda acc: tuple(sorted(v for _, v in acc)))


def _counter_acc(c: Counter, item) -> Counter:
    c[item[1]] += 1
    return c


def _counter_combine(a: Counter, b: Counter) -> Counter:
    a.update(b)  # in place: a running window must not hand this object out
    return a


def _counter_deduct(a: Counter, b: Counter) -> Counter:
    a.subtract(b)
    return a


#: A mutable accumulator, identity finish, with deduct.
counter_op = AggregateOperation(
    create=Counter, accumulate=_counter_acc, combine=_counter_combine, deduct=_counter_deduct
)

OPS = {
    "sum": value_sum,
    "sum_no_deduct": value_sum_no_deduct,
    "count": counting(),
    "counter": counter_op,
    "sorted_list": sorted_values,
}


def W(ts: int) -> Watermark:  # noqa: N802 - reads like the type
    return Watermark(ts)


def R(start, end, key, value):  # noqa: N802
    return (end, WindowResult(start, end, key, value))


# -- examples -----------------------------------------------------------------------------------


def test_tumbling_keyed_example():
    steps = [
        (1, ("a", 1)),
        (3, ("b", 2)),
        (12, ("a", 4)),
        (7, ("a", 8)),
        W(10),
        (15, ("b", 16)),
        W(20),
    ]
    out = drive(SlidingWindowP(key0, value_sum, tumbling(10)), steps)
    assert out == [
        R(0, 10, "a", 9), R(0, 10, "b", 2), W(10),
        R(10, 20, "a", 4), R(10, 20, "b", 16), W(20),
    ]  # fmt: skip


@pytest.mark.parametrize("op", [value_sum, value_sum_no_deduct], ids=["deduct", "recombine"])
def test_sliding_partially_late_event_goes_to_open_windows_only(op):
    steps = [(5, ("k", 1)), (15, ("k", 2)), W(20), (5, ("k", 100)), (3, ("k", 1000))]
    p = SlidingWindowP(None, op, sliding(30, 10))
    out = drive(p, steps)
    # ts=5 is in windows ending 10, 20, 30: 10 and 20 went out with W(20), so only 30 gets it
    assert out == [
        R(-20, 10, None, 1), R(-10, 20, None, 3), W(20),
        R(0, 30, None, 1103), R(10, 40, None, 2),
    ]  # fmt: skip
    assert p.late_events_dropped == 0


def test_fully_late_events_are_dropped_and_counted():
    p = SlidingWindowP(None, counting(), sliding(20, 10))
    out = drive(p, [(25, "x"), W(30), (9, "late"), (20, "ok: [10, 30) is out, [20, 40) is not")])
    assert out == [R(10, 30, None, 1), W(30), R(20, 40, None, 2)]
    assert p.late_events_dropped == 1


def test_complete_emits_everything_in_order_of_end():
    p = SlidingWindowP(key0, value_sum, sliding(4, 2))
    out = drive(p, [(9, ("a", 1)), (0, ("b", 2)), (5, ("a", 4))])
    assert [(e, wr.key, wr.value) for e, wr in out] == [
        (2, "b", 2),
        (4, "b", 2),
        (6, "a", 4),
        (8, "a", 4),
        (10, "a", 1),
        (12, "a", 1),
    ]


def test_mutable_running_accumulator_is_not_shared_with_emitted_results():
    p = SlidingWindowP(None, counter_op, sliding(30, 10))
    out = drive(p, [(1, ("k", "a")), (11, ("k", "b")), (21, ("k", "c")), W(100)])
    values = [wr.value for _, wr in out[:-1]]
    assert values == [
        Counter(a=1),
        Counter(a=1, b=1),
        Counter(a=1, b=1, c=1),
        Counter(b=1, c=1),
        Counter(c=1),
    ]


def test_float_timestamps():
    p = SlidingWindowP(None, counting(), tumbling(10))
    out = drive(p, [(0.5, "a"), (9.99, "b"), (10.0, "c"), (-0.5, "d"), W(10)])
    assert out == [R(-10, 0, None, 1), R(0, 10, None, 2), W(10), R(10, 20, None, 1)]
    assert all(type(e) is int and type(wr.start) is int for e, wr in out[:2] + out[3:])


@pytest.mark.parametrize(
    "op", [value_sum, value_sum_no_deduct, counting()], ids=["deduct", "recombine", "tumbling"]
)
def test_huge_watermark_jumps_skip_empty_windows(op):
    wd = tumbling(1) if op is counting() else sliding(5, 1)
    steps = [
        (0, ("k", 1)),
        (10**12, ("k", 1)),
        W(10**12 - 10),
        W(2 * 10**12),
        (3 * 10**12, ("k", 1)),
    ]
    start = time.perf_counter()
    out = drive(SlidingWindowP(None, op, wd), steps)
    assert time.perf_counter() - start < 1.0
    segments, _ = split_segments(out)
    assert [len(s) for s in segments] == [wd.size // wd.slide] * 3


def test_watermark_is_forwarded_only_after_all_results():
    p = SlidingWindowP(key0, counting(), tumbling(10))
    steps = [(i % 10, (k, 0)) for i in range(10) for k in range(7)] + [W(10), (15, (1, 0)), W(20)]
    out = drive(p, steps, capacity=3)
    assert out.index(W(10)) == 7
    assert out[8:] == [R(10, 20, 1, 1), W(20)]


def test_sliding_without_combine_is_rejected_tumbling_allowed():
    no_combine = AggregateOperation(create=lambda: 0, accumulate=lambda a, x: a + 1)
    with pytest.raises(JetbenchError, match="combine"):
        SlidingWindowP(None, no_combine, sliding(20, 10))
    with pytest.raises(JetbenchError, match="combine"):
        window_aggregate(None, no_combine, sliding(20, 10))
    out = drive(SlidingWindowP(None, no_combine, tumbling(10)), [(1, "a"), (2, "b")])
    assert out == [R(0, 10, None, 2)]


def test_session_without_combine_is_rejected():
    no_combine = AggregateOperation(create=lambda: 0, accumulate=lambda a, x: a + 1)
    with pytest.raises(
        JetbenchError, match="session windows need an AggregateOperation with combine"
    ):
        SessionWindowP(None, no_combine, 10)
    with pytest.raises(JetbenchError, match="combine"):
        window_aggregate(None, no_combine, session(10))


def test_bad_window_definitions():
    with pytest.raises(JetbenchError, match="unknown window definition"):
        window_aggregate(None, counting(), WindowDefinition("hopping", 10, 5))
    with pytest.raises(JetbenchError):
        SlidingWindowP(None, counting(), session(5))
    with pytest.raises(JetbenchError):
        SessionWindowP(None, counting(), 0)
    with pytest.raises(JetbenchError, match="key_fn"):
        window_aggregate("not callable", counting(), tumbling(5))


def test_window_aggregate_supplier():
    s = window_aggregate(key0, counting(), sliding(20, 10))
    assert repr(s) == "window_aggregate(sliding(20, 10), keyed)"
    assert repr(window_aggregate(None, counting(), tumbling(5))) == "window_aggregate(tumbling(5))"
    assert repr(window_aggregate(None, counting(), session(7))) == "window_aggregate(session(7))"
    p1, p2 = s(), s()
    assert isinstance(p1, SlidingWindowP) and p1 is not p2
    assert isinstance(window_aggregate(None, counting(), session(7))(), SessionWindowP)


def test_session_example():
    steps = [
        (1, ("a", 1)), (5, ("a", 2)), (30, ("a", 4)), (3, ("b", 8)), W(16),
        (20, ("a", 16)), (11, ("a", 1000)), W(40), (12, ("b", 32)),
    ]  # fmt: skip
    p = SessionWindowP(key0, value_sum, 10)
    out = drive(p, steps)
    assert out == [
        R(3, 13, "b", 8), R(1, 15, "a", 3), W(16),
        R(11, 40, "a", 1020), W(40),
    ]  # fmt: skip
    # (11, a) was not late (21 > 16): it opened [11, 21), which [20, 30) and [30, 40) joined;
    # (12, b) is late (22 <= 40)
    assert p.late_events_dropped == 1


def test_session_out_of_order_event_bridges_sessions():
    steps = [(0, ("k", 1)), (30, ("k", 2)), (60, ("k", 4)), (20, ("k", 8)), (40, ("k", 16))]
    out = drive(SessionWindowP(None, value_sum, 10), steps)
    assert out == [R(0, 10, None, 1), R(20, 50, None, 26), R(60, 70, None, 4)]


def test_session_touching_events_merge():
    out = drive(SessionWindowP(None, counting(), 10), [(0, "a"), (10, "b"), (25, "c")])
    assert out == [R(0, 20, None, 2), R(25, 35, None, 1)]


# -- verify_processor ----------------------------------------------------------------------------

_EVENTS = [
    (3, (1, 1)), (14, (2, 2)), (7, (1, 4)), W(10), (5, (2, 8)), (25, (1, 16)), (11, (2, 32)),
    (19, (1, 64)), W(21), (40, (3, 128)), (22, (1, 256)), (-4, (2, 512)), W(35), (66, (1, 1024)),
]  # fmt: skip

_CASES = {
    "tumbling": (key0, value_sum, tumbling(10)),
    "tumbling-unkeyed": (None, counting(), tumbling(7)),
    "sliding-deduct": (key0, value_sum, sliding(20, 5)),
    "sliding-recombine": (key0, value_sum_no_deduct, sliding(20, 5)),
    "sliding-counter": (None, counter_op, sliding(15, 5)),
    "session": (key0, value_sum, session(6)),
    "session-unkeyed": (None, sorted_values, session(4)),
}


@pytest.mark.parametrize("form", ["columns", "pairs"])
@pytest.mark.parametrize("case", list(_CASES))
def test_verify_processor(case, form):
    key_fn, op, wd = _CASES[case]
    supplier = window_aggregate(key_fn, op, wd)
    assert supplier().accepts_stamped  # windows read a stamped chunk's columns
    if form == "pairs":
        supplier = reading_pairs(supplier)
    if wd.kind == "session":
        expected, _ = reference_session(_EVENTS, key_fn, op, wd.gap)
    else:
        expected, _ = reference_sliding(_EVENTS, key_fn, op, wd.size, wd.slide)
    assert sum(map(len, expected)) >= 4
    report = verify_processor(
        supplier,
        input=_EVENTS,
        assert_output=lambda output: assert_matches(output, _EVENTS, expected),
    )
    assert len(report.modes) == 5  # the two plain modes and Jet's three snapshot modes


# -- property tests against the references --------------------------------------------------------


@st.composite
def scenarios(draw):
    """Out-of-order events (ts, (key, value)) interleaved with increasing watermarks."""
    steps: list = []
    wm = draw(st.integers(-30, 30))
    for _ in range(draw(st.integers(0, 40))):
        if draw(st.integers(0, 4)) == 0:
            wm += draw(st.one_of(st.integers(1, 40), st.just(10**6)))
            steps.append(Watermark(wm))
        else:
            ts = draw(st.integers(wm - 60, wm + 120)) if steps else draw(st.integers(-50, 150))
            steps.append((ts, (draw(st.integers(0, 3)), draw(st.integers(0, 9)))))
    return steps


_DRIVE = st.tuples(st.sampled_from([1, 2, 7, 1024]), st.sampled_from([1, 2, 5, 1024]))
_SETTINGS = settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: a sliding (or tumbling) window's cases: events, frame, frames per window, operation, key, drive
_SLIDING_CASES = dict(steps=scenarios(), slide=st.integers(1, 25), frames=st.integers(1, 5),
                      op_name=st.sampled_from(list(OPS)), keyed=st.booleans(), drive_args=_DRIVE)
#: a session window's cases
_SESSION_CASES = dict(steps=scenarios(), gap=st.integers(1, 50),
                      op_name=st.sampled_from(["sum", "count", "counter", "sorted_list"]), keyed=st.booleans(),
                      drive_args=_DRIVE)


@_SETTINGS
@given(**_SLIDING_CASES)
def test_sliding_matches_reference(steps, slide, frames, op_name, keyed, drive_args):
    op, key_fn = OPS[op_name], (key0 if keyed else None)
    if frames > 1 and op.combine is None:
        return
    wd = sliding(slide * frames, slide)
    p = SlidingWindowP(key_fn, op, wd)
    out = drive(p, steps, *drive_args)
    expected, late = reference_sliding(steps, key_fn, op, wd.size, wd.slide)
    assert_matches(out, steps, expected)
    assert p.late_events_dropped == late


@_SETTINGS
@given(**_SESSION_CASES)
def test_session_matches_reference(steps, gap, op_name, keyed, drive_args):
    op, key_fn = OPS[op_name], (key0 if keyed else None)
    p = SessionWindowP(key_fn, op, gap)
    out = drive(p, steps, *drive_args)
    expected, late = reference_session(steps, key_fn, op, gap)
    assert_matches(out, steps, expected)
    assert p.late_events_dropped == late


@_SETTINGS
@given(
    gaps=st.lists(st.integers(0, 30), max_size=200),
    size=st.integers(1, 200),
    lag=st.integers(0, 50),
    drive_args=_DRIVE,
)
def test_whole_batch_folding_equals_item_by_item(gaps, size, lag, drive_args):
    """counting's ``accumulate_all`` fast path (batches inside one frame) changes no result."""
    steps, ts = [], 0
    for i, gap in enumerate(gaps):
        ts += gap
        steps.append((ts - (i % 3) * lag // 2, (0, i)))  # mostly ordered, some stragglers
        if i % 17 == 16:
            steps.append(Watermark(ts - lag))
    one_by_one = dataclasses.replace(counting(), accumulate_all=None)
    fast, slow = SlidingWindowP(None, counting(), tumbling(size)), SlidingWindowP(None, one_by_one, tumbling(size))
    assert fast.folds_batches and not slow.folds_batches
    assert drive(fast, steps, *drive_args) == drive(slow, steps, *drive_args)
    assert fast.late_events_dropped == slow.late_events_dropped


@_SETTINGS
@given(steps=scenarios(), gap=st.integers(1, 50), keyed=st.booleans(), drive_args=_DRIVE)
def test_session_last_of_each_key_is_its_latest_session(steps, gap, keyed, drive_args):
    """The in-order path's shortcut to each key's last session stays that session, through
    merges, out-of-order inserts and closes (``complete=False``: some sessions stay open)."""
    p = SessionWindowP(key0 if keyed else None, OPS["sum"], gap)
    drive(p, steps, *drive_args, complete=False)
    assert p._last.keys() == p.sessions.keys()
    assert all(p._last[k] is ss[-1] for k, ss in p.sessions.items())


@_SETTINGS
@given(steps=scenarios(), gap=st.integers(1, 50), keyed=st.booleans(), drive_args=_DRIVE)
def test_session_counting_in_place_equals_accumulate_calls(steps, gap, keyed, drive_args):
    """counting in session windows adds one in place on the in-order path (`adds_one`); the
    same operation with an accumulate of its own goes through the calls: the same results."""
    by_calls = dataclasses.replace(counting(), accumulate=lambda acc, _item: acc + 1)
    assert adds_one(counting()) and not adds_one(by_calls)
    key_fn = key0 if keyed else None
    fast, slow = SessionWindowP(key_fn, counting(), gap), SessionWindowP(key_fn, by_calls, gap)
    assert drive(fast, steps, *drive_args) == drive(slow, steps, *drive_args)
    assert fast.late_events_dropped == slow.late_events_dropped


# -- stamped chunks: columns in give what pairs in give ---------------------------------------------

#: how the batches of a run go in: all as columns, or every other one (pairs and columns mixed,
#: as a processor behind producers of both kinds gets them)
_FORMS = {"columns": True, "mixed": lambda n: n % 2 == 1}


@_SETTINGS
@given(
    **_SLIDING_CASES,
    form=st.sampled_from(sorted(_FORMS)),
)
def test_sliding_reads_columns_as_it_reads_pairs(steps, slide, frames, op_name, keyed, drive_args, form):
    """Late events, watermarks, the running and the recombining paths, and the whole-batch fold
    (counting, keyed and not) over columns: the reference's results, the same as over pairs."""
    op, key_fn = OPS[op_name], (key0 if keyed else None)
    if frames > 1 and op.combine is None:
        return
    wd = sliding(slide * frames, slide)
    columns, pairs = SlidingWindowP(key_fn, op, wd), SlidingWindowP(key_fn, op, wd)
    out = drive(columns, steps, *drive_args, stamped=_FORMS[form])
    expected, late = reference_sliding(steps, key_fn, op, wd.size, wd.slide)
    assert_matches(out, steps, expected)
    assert out == drive(pairs, steps, *drive_args)
    assert columns.late_events_dropped == pairs.late_events_dropped == late


@_SETTINGS
@given(
    gaps=st.lists(st.integers(0, 30), max_size=200),
    size=st.integers(1, 200),
    lag=st.integers(0, 50),
    drive_args=_DRIVE,
    keyed=st.booleans(),
)
def test_whole_batch_folding_over_columns_equals_item_by_item(gaps, size, lag, drive_args, keyed):
    """The fold over a stamped chunk's columns (`SlidingWindowP._fold_columns`) against the
    per-item path over pairs: mostly ordered events with stragglers, keyed and global."""
    steps, ts = [], 0
    for i, gap in enumerate(gaps):
        ts += gap
        steps.append((ts - (i % 3) * lag // 2, (i % 4, i)))
        if i % 17 == 16:
            steps.append(Watermark(ts - lag))
    one_by_one = dataclasses.replace(counting(), accumulate_all=None, accumulate_groups=None)
    key_fn = key0 if keyed else None
    fast, slow = SlidingWindowP(key_fn, counting(), tumbling(size)), SlidingWindowP(key_fn, one_by_one, tumbling(size))
    assert fast.folds_batches and not slow.folds_batches
    assert drive(fast, steps, *drive_args, stamped=True) == drive(slow, steps, *drive_args)
    assert fast.late_events_dropped == slow.late_events_dropped


def test_a_folded_batch_of_columns_counts_its_items_not_their_timestamps():
    """The fold takes the items column as the items: a zip the wrong way round (or the
    timestamps folded) gives other keys and values."""
    p = SlidingWindowP(key0, summing(itemgetter(1)), tumbling(100))
    out = drive(p, [(1, ("a", 5)), (2, ("b", 7)), (3, ("a", 11))], stamped=True)
    assert out == [R(0, 100, "a", 16), R(0, 100, "b", 7)]
    q = SlidingWindowP(None, counting(), tumbling(100))
    assert q.folds_batches
    assert drive(q, [(1, "x"), (2, "y"), (250, "z")], stamped=True) == [R(0, 100, None, 2), R(200, 300, None, 1)]


@_SETTINGS
@given(
    **_SESSION_CASES,
    form=st.sampled_from(sorted(_FORMS)),
)
def test_session_reads_columns_as_it_reads_pairs(steps, gap, op_name, keyed, drive_args, form):
    op, key_fn = OPS[op_name], (key0 if keyed else None)
    columns, pairs = SessionWindowP(key_fn, op, gap), SessionWindowP(key_fn, op, gap)
    out = drive(columns, steps, *drive_args, stamped=_FORMS[form])
    expected, late = reference_session(steps, key_fn, op, gap)
    assert_matches(out, steps, expected)
    assert out == drive(pairs, steps, *drive_args)
    assert columns.late_events_dropped == pairs.late_events_dropped == late


@st.composite
def ordered_runs(draw):
    """Events mostly in order (timestamps that never decrease, keys mixed), now and then one
    from the past (on time or late), increasing watermarks between: what an ordered source gives
    a session window, and the batches that break its in-order loop's conditions."""
    steps: list = []
    ts, wm = draw(st.integers(-20, 20)), -(10**9)
    for _ in range(draw(st.integers(0, 60))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            new = ts - draw(st.integers(0, 30))
            if new > wm:
                wm = new
                steps.append(Watermark(wm))
        elif kind == 1:  # a straggler
            steps.append((ts - draw(st.integers(1, 80)), (draw(st.integers(0, 3)), draw(st.integers(0, 9)))))
        else:
            ts += draw(st.integers(0, 15))
            steps.append((ts, (draw(st.integers(0, 3)), draw(st.integers(0, 9)))))
    return steps


@_SETTINGS
@given(steps=ordered_runs(), gap=st.integers(1, 30), keyed=st.booleans(), drive_args=_DRIVE)
def test_session_counting_in_order_matches_the_reference(steps, gap, keyed, drive_args):
    """Counting over columns in order takes the in-order loop (`_count_in_order`), stragglers
    and late events the general one: the reference's results, the same as over pairs."""
    key_fn = key0 if keyed else None
    columns, pairs = SessionWindowP(key_fn, counting(), gap), SessionWindowP(key_fn, counting(), gap)
    out = drive(columns, steps, *drive_args, stamped=True)
    expected, late = reference_session(steps, key_fn, counting(), gap)
    assert_matches(out, steps, expected)
    assert out == drive(pairs, steps, *drive_args)
    assert columns.late_events_dropped == pairs.late_events_dropped == late


@pytest.mark.parametrize(("batch", "in_order"), [
    ([(20, "a"), (20, "b"), (25, "a")], True),  # in order, from at or after every earlier event
    ([(25, "a"), (20, "b")], False),  # not in order
    ([(19, "b"), (30, "a")], False),  # in order, but before the earlier batch's last event
    ([(0, "b"), (30, "a")], False),  # in order, but (0, "b") is late
])
def test_the_in_order_loop_takes_only_batches_in_order_after_all_before(batch, in_order):
    p = SessionWindowP(key0, counting(), 10)
    taken = []
    loop = p._count_in_order
    p._count_in_order = lambda events: taken.append(True) or loop(events)
    before = [(5, "a"), (20, "a"), Watermark(12)]
    first = drive(p, before, stamped=True, complete=False)
    assert taken == [True]
    out = drive(p, batch, stamped=True)
    assert taken == ([True, True] if in_order else [True])
    assert first + out == drive(SessionWindowP(key0, counting(), 10), [*before, *batch], batch=1)
