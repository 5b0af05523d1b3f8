"""``window(...).distinct()``, grouped and not, over tumbling, sliding and session windows: the
window processors with `PICK_FIRST` against the plain-Python window references
(tests/processors/window_helpers.py), and whole pipelines against a plain model."""

from __future__ import annotations

import math
from collections import Counter
from operator import itemgetter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples
from test_windows import scenarios
from window_helpers import drive, reference_session, reference_sliding, split_segments

from jetbench import Pipeline, run, sinks, sources, window
from jetbench.core.items import Watermark
from jetbench.processors.aggregate_operation import to_list
from jetbench.processors.distinct import PICK_FIRST, itself
from jetbench.processors.window_aggregate import window_processor
from jetbench.processors.window_definition import WindowResult, session, sliding, tumbling
from jetbench.testing import verify_processor

key0 = itemgetter(0)
_SETTINGS = settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow])
_DRIVE = st.tuples(st.sampled_from([1, 3, 1024]), st.sampled_from([1, 4, 1024]))
_WINDOWS = st.one_of(
    st.builds(tumbling, st.integers(1, 80)),
    st.builds(lambda slide, frames: sliding(slide * frames, slide), st.integers(1, 25), st.integers(2, 4)),
    st.builds(session, st.integers(1, 50)),
)


@st.composite
def crowded(draw):
    """Many events of few keys, close in time (several of a key per window), now and then a
    watermark: events behind it are late."""
    steps: list = []
    wm = -100
    events = st.tuples(st.integers(0, 120), st.tuples(st.integers(0, 2), st.integers(0, 9)), st.integers(0, 9))
    for ts, item, roll in draw(st.lists(events, min_size=2, max_size=40)):
        if roll == 0:
            wm = max(wm, ts - 20)
            steps.append(Watermark(wm))
        steps.append((ts, item))
    return steps


def _reference(steps, key_fn, wd):
    """Per watermark segment, the items of each (window, key): the references with ``to_list``."""
    if wd.kind == "session":
        return reference_session(steps, key_fn, to_list(), wd.gap)
    return reference_sliding(steps, key_fn, to_list(), wd.size, wd.slide)


def test_pick_first_keeps_the_first_and_combines_in_order():
    op = PICK_FIRST
    a = op.accumulate(op.accumulate(op.create(), None), "x")  # a None item is an item
    b = op.accumulate(op.create(), "y")
    assert op.finish_fn(a) is None
    assert op.finish_fn(op.combine(b, a)) == "y"
    assert op.finish_fn(op.combine(op.create(), a)) is None
    assert op.finish_fn(op.combine(op.create(), b)) == "y"


@_SETTINGS
@given(steps=st.one_of(scenarios(), crowded()), wd=_WINDOWS, keyed=st.booleans(), drive_args=_DRIVE)
def test_window_distinct_matches_the_reference(steps, wd, keyed, drive_args):
    """Each window emits, per key (the item itself when not grouped), one item of that key among
    the window's items, at the same watermark as any aggregation; late items are dropped the
    same; a tumbling window's item is the first of its key to arrive."""
    key_fn = key0 if keyed else itself
    p = window_processor(key_fn, PICK_FIRST, wd)
    out = drive(p, steps, *drive_args)
    expected, late = _reference(steps, key_fn, wd)
    segments, wms = split_segments(out)
    assert wms == [s for s in steps if isinstance(s, Watermark)]
    assert len(segments) == len(expected)
    for got, want in zip(segments, expected, strict=True):
        members = {(r.start, r.end, r.key): r.value for _, r in want}
        assert Counter((r.start, r.end, r.key) for _, r in got) == Counter(list(members))
        for end, r in got:
            assert end == r.end
            items = members[r.start, r.end, r.key]
            assert r.value in items
            if not keyed:
                assert r.value == r.key
            if wd.is_tumbling:
                assert r.value == items[0]
    assert p.late_events_dropped == late


# -- whole pipelines ------------------------------------------------------------------------------


def _model(events, wd, key_fn):
    """Plain model without late items: window (start, end) -> key -> the window's items of that key."""
    windows: dict = {}
    if wd.kind == "session":
        by_key: dict = {}
        for ts, item in events:
            by_key.setdefault(key_fn(item), []).append((ts, item))
        for key, evs in by_key.items():
            evs.sort(key=itemgetter(0))
            start, end, items = evs[0][0], evs[0][0] + wd.gap, []
            for ts, item in evs:
                if ts > end:
                    windows.setdefault((start, end), {})[key] = items
                    start, items = ts, []
                end = max(end, ts + wd.gap)
                items.append(item)
            windows.setdefault((start, end), {})[key] = items
        return windows
    for ts, item in events:
        first_end = math.floor(ts / wd.slide) * wd.slide + wd.slide
        for end in range(first_end, first_end + wd.size, wd.slide):
            windows.setdefault((end - wd.size, end), {}).setdefault(key_fn(item), []).append(item)
    return windows


_EVENTS = st.lists(st.tuples(st.integers(0, 200), st.tuples(st.integers(0, 3), st.integers(0, 5))), max_size=30)


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=_EVENTS, wd=_WINDOWS, keyed=st.booleans())
def test_pipeline_window_distinct_matches_a_plain_model(events, wd, keyed):
    p = Pipeline()
    stage = p.read_from(sources.test_stream(events, allowed_lag=10**6))  # nothing late
    windowed = stage.group_by(key0).window(wd) if keyed else stage.window(wd)
    windowed.distinct().write_to(sinks.collect())
    got = run(p)
    model = _model(events, wd, key0 if keyed else itself)
    assert all(isinstance(r, WindowResult) for r in got)
    if keyed:
        assert Counter((r.start, r.end, r.key) for r in got) == Counter(
            (start, end, key) for (start, end), keys in model.items() for key in keys)
        for r in got:
            assert r.value in model[r.start, r.end][r.key]
    else:
        assert Counter(got) == Counter(
            WindowResult(start, end, None, item) for (start, end), items in model.items() for item in items)


def test_pipeline_window_distinct_of_a_stream_needs_hashable_items_only_when_not_grouped():
    p = Pipeline()
    stage = p.read_from(sources.test_stream([(0, ["a", 1]), (3, ["a", 2]), (4, ["b", 3])]))
    stage.group_by(lambda e: e[0]).window(window.tumbling(10)).distinct().write_to(sinks.collect())
    assert sorted((r.key, r.value) for r in run(p)) == [("a", ["a", 1]), ("b", ["b", 3])]


@pytest.mark.parametrize("wd", [tumbling(10), sliding(20, 10), session(5)], ids=repr)
@pytest.mark.parametrize("keyed", [True, False])
def test_verify_processor_window_distinct(wd, keyed):
    """Every test mode, Jet's three snapshot modes too: a window's item of each key survives
    snapshots and restores."""
    events = [(1, (0, 1)), (4, (1, 2)), (3, (0, 1)), (12, (0, 3)), Watermark(12), (15, (0, 4)), (13, (0, 3)),
              (27, (1, 5)), Watermark(30), (33, (1, 6)), (31, (1, 7))]
    key_fn = key0 if keyed else itself
    expected, _ = _reference(events, key_fn, wd)

    def check(output):
        results = [item[1] for item in output if not isinstance(item, Watermark)]
        members = {(r.start, r.end, r.key): r.value for segment in expected for _, r in segment}
        assert Counter((r.start, r.end, r.key) for r in results) == Counter(list(members))
        assert all(r.value in members[r.start, r.end, r.key] for r in results)

    report = verify_processor(lambda: window_processor(key_fn, PICK_FIRST, wd), input=events, assert_output=check)
    assert len(report.modes) == 5
