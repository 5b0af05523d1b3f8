"""Early results of windows (``WindowDefinition.early_results_period``): the window processors
driven with a `MockClock`, against the plain-Python window references
(tests/processors/window_helpers.py): at each period, every window not closed yet emits its
current result; the other results are exactly those of the same processor without early results."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples
from test_windows import OPS, key0, scenarios
from window_helpers import canon, reference_session, reference_sliding

from jetbench import Pipeline, sources, window
from jetbench.core.clock import MockClock
from jetbench.core.errors import JetbenchError
from jetbench.core.inbox import Inbox
from jetbench.core.items import Watermark
from jetbench.core.outbox import Outbox
from jetbench.core.processor import ProcessorContext
from jetbench.pipeline.errors import PipelineError
from jetbench.processors.aggregate_operation import AggregateOperation, counting
from jetbench.processors.kind_params import read_window, window_code, window_of
from jetbench.processors.window_aggregate import window_aggregate, window_processor
from jetbench.processors.window_definition import WindowResult, session, sliding, tumbling
from jetbench.testing import verify_processor

PERIOD_MS = 100
PERIOD_NS = PERIOD_MS * 1_000_000
#: steps that move the clock on (one period, a third of one), then call try_process()
MOVES = {"tick": PERIOD_NS, "nudge": PERIOD_NS // 3}


def run_steps(processor, steps, clock):
    """Feed ``steps`` one at a time (try_process after each); per clock move, (the clock's time,
    its output), and the other output (results and watermarks) in order."""
    box = Outbox(1, 1 << 16)
    processor.init(box, ProcessorContext("window", 0, 0, 1, 1, clock=clock))
    moves: list[tuple[int, list]] = []
    other: list = []

    def drain(into: list) -> None:
        into.extend(box.take_bucket(0))
        wm = box.take_watermark()
        if wm is not None:
            into.append(wm)

    def until_true(fn, into: list) -> None:
        for _ in range(1000):
            done = fn()
            drain(into)
            if done:
                return
        raise AssertionError(f"{fn} not done")

    for step in steps:
        if step in MOVES:
            clock.advance(MOVES[step] / 1e9)
            moves.append((clock.monotonic_ns(), []))
            until_true(processor.try_process, moves[-1][1])
        elif isinstance(step, Watermark):
            until_true(lambda s=step: processor.try_process_watermark(s), other)
        else:
            processor.process(0, Inbox([step]))
            drain(other)
            until_true(processor.try_process, other)
    until_true(processor.complete, other)
    return moves, other


@st.composite
def with_ticks(draw):
    steps = draw(scenarios())
    out: list = []
    for step in steps:
        out.append(step)
        out.extend(draw(st.lists(st.sampled_from(list(MOVES)), max_size=2)))
    return out


def _canon(step):
    return step if isinstance(step, Watermark) else canon(step)


_WINDOWS = st.one_of(
    st.builds(tumbling, st.integers(1, 60)),
    st.builds(lambda slide, frames: sliding(slide * frames, slide), st.integers(1, 25), st.integers(2, 4)),
    st.builds(session, st.integers(1, 50)),
)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=with_ticks(), wd=_WINDOWS, op_name=st.sampled_from(list(OPS)), keyed=st.booleans())
def test_early_results_match_the_reference(steps, wd, op_name, keyed):
    key_fn, op = (key0 if keyed else None), OPS[op_name]
    moves, other = run_steps(window_processor(key_fn, op, wd.early_results_period(PERIOD_MS)), steps, MockClock())
    _, plain = run_steps(window_processor(key_fn, op, wd), [s for s in steps if s not in MOVES], MockClock())
    assert list(map(_canon, other)) == list(map(_canon, plain))  # the final results, as without early ones
    due = PERIOD_NS  # the timer's model: the first period from the start, the next a period after each
    moved = iter(moves)
    for n, step in enumerate(steps):
        if step not in MOVES:
            continue
        now, got = next(moved)
        if now < due:
            assert got == [], f"early results before their time, at step {n}"
            continue
        due = now + PERIOD_NS
        events = [s for s in steps[:n] if s not in MOVES]
        if wd.kind == "session":
            segments, _ = reference_session(events, key_fn, op, wd.gap)
        else:
            segments, _ = reference_sliding(events, key_fn, op, wd.size, wd.slide)
        assert Counter(map(canon, got)) == Counter(map(canon, segments[-1])), f"at step {n}"  # the open windows
        ends = [end for end, _ in got]
        assert ends == sorted(ends)
        assert all(isinstance(r, WindowResult) and r.end == end for end, r in got)


def test_early_results_come_once_per_period_of_the_context_clock():
    clock = MockClock()
    p = window_processor(None, counting(), tumbling(10).early_results_period(PERIOD_MS))
    moves, other = run_steps(p, [(1, "a"), "nudge", "nudge", (12, "b"), "tick", "tick", Watermark(10), "tick"],
                             clock)
    assert [out for _, out in moves] == [[], [],
        [(10, WindowResult(0, 10, None, 1)), (20, WindowResult(10, 20, None, 1))],
        [(10, WindowResult(0, 10, None, 1)), (20, WindowResult(10, 20, None, 1))],
        [(20, WindowResult(10, 20, None, 1))],
    ]
    assert other == [(10, WindowResult(0, 10, None, 1)), Watermark(10), (20, WindowResult(10, 20, None, 1))]


def test_a_pipeline_window_with_early_results_plans_and_checks_its_operation():
    no_combine = AggregateOperation(create=lambda: 0, accumulate=lambda a, x: a + 1)
    with pytest.raises(JetbenchError, match="early results need an AggregateOperation with combine"):
        window_aggregate(None, no_combine, tumbling(10).early_results_period(5))
    p = Pipeline()
    stage = p.read_from(sources.test_stream([(0, "a")]))
    with pytest.raises(PipelineError, match=r"stage 'test_stream': early results \(tumbling\(10\).early_results_period\(5\)\) need"):
        stage.window(tumbling(10).early_results_period(5)).aggregate(no_combine)
    for bad in (-1, 1.5, True):
        with pytest.raises(JetbenchError, match="early results period must be a positive int"):
            window.session(10).early_results_period(bad)
    assert repr(window.sliding(20, 10).early_results_period(5)) == "sliding(20, 10).early_results_period(5)"
    assert window.tumbling(10).early_results_period(5).early_results_period(0) == window.tumbling(10)


@pytest.mark.parametrize("wd", [tumbling(10), sliding(20, 10).early_results_period(5), session(7).early_results_period(3)])
def test_the_builder_shows_reads_and_writes_the_period(wd):
    p = read_window(wd)
    assert p.get("early", 0) == wd.early_results_ms
    assert window_of(p) == wd
    assert eval(window_code(p), {"window": window}) == wd


@pytest.mark.parametrize("wd", [tumbling(10), sliding(20, 10), session(10)])
def test_verify_processor_with_early_results_on_a_moving_clock(wd):
    """Every test mode (snapshots restored into new instances too), on a clock that moves half a
    period at each reading: early results come along, and each window's last result is its
    final one (a restored instance starts its period again)."""
    events = [(1, (0, 1)), (4, (1, 2)), (12, (0, 3)), Watermark(12), (15, (0, 4)), (27, (1, 5)), Watermark(30),
              (33, (1, 6))]
    op = OPS["sum"]
    _, plain = run_steps(window_processor(key0, op, wd), events, MockClock())
    final = {(r.start, r.end, r.key): r.value for item in plain if not isinstance(item, Watermark) for r in [item[1]]}

    sizes = []

    def check(output):
        results = [item[1] for item in output if not isinstance(item, Watermark)]
        last = {(r.start, r.end, r.key): r.value for r in results}
        sizes.append(len(results))
        if wd.kind != "session":
            assert last == final
            return
        # a session's early result may be of a session that later grew or merged into another
        assert final.items() <= last.items()
        for start, end, key in last.keys() - final.keys():
            assert any(k == key and s <= start and end <= e for s, e, k in final), (start, end, key)

    verify_processor(lambda: window_processor(key0, op, wd.early_results_period(PERIOD_MS)), input=events,
                     assert_output=check, context={"clock": MockClock(step=PERIOD_MS / 2000)})
    assert max(sizes) > len(final)  # early results came (in the modes whose instances live long enough)


@pytest.mark.parametrize("wd", [tumbling(10), sliding(10, 5), session(10)], ids=repr)
def test_the_timer_idle_strategy_parks_a_window_until_input_or_its_next_early_results(wd):
    """``next_wake_time``: without early results a window processor is input-driven (+inf), so
    the timer strategy parks its worker until input comes (notebook 04 shows those parks); with
    them, the time the next are due on the context's clock."""
    import math

    clock = MockClock()
    plain = window_processor(key0, counting(), wd)
    plain.init(Outbox(1), ProcessorContext("window", 0, 0, 1, 1, clock=clock))
    assert plain.next_wake_time() == math.inf
    early = window_processor(key0, counting(), wd.early_results_period(PERIOD_MS))
    early.init(Outbox(1), ProcessorContext("window", 0, 0, 1, 1, clock=clock))
    due = early.next_wake_time()
    assert due is not None and abs(due - (clock.monotonic() + PERIOD_MS / 1000)) < 1e-6
