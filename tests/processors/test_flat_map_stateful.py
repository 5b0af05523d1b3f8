"""`FlatMapStatefulP`: per-key state, an event-time timer per key, items as they come or in
timestamp order; through every mode of `verify_processor` (inbox limits, and snapshots restored
into a new instance at every step), in a pipeline on 1 and 2 instances, and its errors."""

from __future__ import annotations

import math

import pytest
from hypothesis_budget import examples
from stamped_helpers import reading_pairs

from jetbench import Pipeline, run, sinks, sources
from jetbench.core.errors import JetbenchError
from jetbench.core.items import Watermark
from jetbench.processors.flat_map_stateful import (
    FlatMapStatefulP,
    FlatMapStatefulSpec,
    flat_map_stateful,
)
from jetbench.testing import verify_processor


def key_of(x):
    return x[0]


def total_with_expiry(k, x):
    """Running total per key; the key is forgotten 10 ms after its last item."""
    k.state += x[1]
    k.timer = k.time + 10
    return [(k.key, k.state)]


def test_state_per_key_and_a_timer_that_expires_it():
    # key a: 1 at 0, 2 at 5 (timer 15); key b: 4 at 3 (timer 13). Watermark 14 passes 13: b is
    # forgotten, so b's next item starts again from 0; a's timer (15) has not passed yet.
    verify_processor(
        flat_map_stateful(key_of, int, total_with_expiry),
        input=[(0, ("a", 1)), (3, ("b", 4)), (5, ("a", 2)), Watermark(14), (14, ("b", 1)), (15, ("a", 1)),
               Watermark(100)],
        expected=[(0, ("a", 1)), (3, ("b", 4)), (5, ("a", 3)), Watermark(14), (14, ("b", 1)), (15, ("a", 4)),
                  Watermark(100)],
        snapshots=True,
    )


def test_a_timer_fires_only_once_the_watermark_is_past_it():
    # a timer at 10 fires at watermark 11, not 10: an item at 10 may still come after watermark 10
    def fn(k, x):
        k.state.append(x[1])
        k.timer = 10
        return None

    def on_timer(k):
        return [(k.key, sorted(k.state), k.time)]

    verify_processor(
        flat_map_stateful(key_of, list, fn, on_timer),
        input=[(2, ("a", 1)), Watermark(10), (10, ("a", 2)), Watermark(11), Watermark(20)],
        expected=[Watermark(10), (10, ("a", [1, 2], 10)), Watermark(11), Watermark(20)],
        snapshots=True,
    )


def test_on_timer_may_emit_re_arm_and_keep_state():
    # every 10 ms a key reports its count and re-arms; at the end of the input the pending
    # timers fire once more in order of time (a at 25, b at 30), and do not re-arm then
    def fn(k, x):
        k.state += 1
        if k.timer is None:
            k.timer = k.time + 10
        return None

    def on_timer(k):
        k.timer = k.time + 10
        return [(k.key, k.state)]

    verify_processor(
        flat_map_stateful(key_of, int, fn, on_timer),
        input=[(5, ("a", 0)), (6, ("a", 0)), (20, ("b", 0)), Watermark(21), (22, ("a", 0))],
        expected=[(15, ("a", 2)), Watermark(21), (25, ("a", 3)), (30, ("b", 1))],
        snapshots=True,
    )


def test_a_timer_at_infinity_fires_at_the_end_of_input_only():
    def fn(k, x):
        k.state = x[1]
        k.timer = math.inf
        return [("now", k.key, x[1])]

    def on_timer(k):
        k.state = None
        return [("final", k.key, k.state)]

    verify_processor(
        flat_map_stateful(key_of, int, fn, on_timer),
        input=[(1, ("a", 7)), (2, ("b", 8)), Watermark(10**12), (10**12, ("a", 9))],
        expected=[(1, ("now", "a", 7)), (2, ("now", "b", 8)), Watermark(10**12), (10**12, ("now", "a", 9)),
                  (math.inf, ("final", "a", None)), (math.inf, ("final", "b", None))],
        snapshots=True,
    )


def test_without_on_timer_a_timer_drops_the_state_and_no_timer_is_state_forever():
    seen = []

    def fn(k, x):
        seen.append((k.key, k.state))
        k.state = x[1]
        if x[1] == "expire":
            k.timer = k.time
        return None

    p = FlatMapStatefulP(key_of, lambda: "new", fn)
    verify_processor(lambda: FlatMapStatefulP(key_of, lambda: "new", fn),
                     input=[(1, ("a", "x")), (1, ("b", "expire")), Watermark(5), (6, ("a", "y")), (6, ("b", "z"))],
                     expected=[Watermark(5)], snapshots=False)
    assert seen[:4] == [("a", "new"), ("b", "new"), ("a", "x"), ("b", "new")]
    assert p.snapshot_support == "supported"


def test_a_key_whose_state_is_none_and_has_no_timer_is_forgotten():
    def fn(k, x):
        k.state = None if x[1] == "forget" else (k.state or 0) + 1
        return [k.state]

    verify_processor(flat_map_stateful(key_of, lambda: None, fn),
                     input=[(1, ("a", 1)), (2, ("a", 1)), (3, ("a", "forget")), (4, ("a", 1))],
                     expected=[(1, 1), (2, 2), (3, None), (4, 1)], snapshots=True)


def test_sorted_input_hands_items_over_in_timestamp_order_with_timers_between():
    # items arrive out of order; each watermark hands over those before it, by timestamp, and
    # the timer at 6 (set by the item at 1) fires after the item at 6 and before the one at 7
    def fn(k, x):
        k.state.append(x[1])
        if k.timer is None:
            k.timer = k.time + 5
        return [tuple(k.state)]

    def on_timer(k):
        return [("timer", tuple(k.state))]

    verify_processor(
        flat_map_stateful(key_of, list, fn, on_timer, sorted_input=True),
        input=[(7, ("a", "d")), (1, ("a", "a")), (6, ("a", "c")), (3, ("a", "b")), Watermark(5), (9, ("a", "e")),
               Watermark(8)],
        expected=[(1, ("a",)), (3, ("a", "b")), Watermark(5), (6, ("a", "b", "c")),
                  (6, ("timer", ("a", "b", "c"))), (7, ("a", "b", "c", "d")), Watermark(8),
                  (9, ("a", "b", "c", "d", "e")), (12, ("timer", ("a", "b", "c", "d", "e")))],
        snapshots=True,
    )


def test_a_timer_behind_the_watermark_fires_at_the_next_one_stamped_with_the_last_forwarded():
    def fn(k, x):
        k.timer = 0  # long past
        return None

    def on_timer(k):
        return ["late timer"]

    verify_processor(flat_map_stateful(key_of, int, fn, on_timer),
                     input=[Watermark(50), (60, ("a", 1)), Watermark(70)],
                     expected=[Watermark(50), (50, "late timer"), Watermark(70)], snapshots=True)


def test_bad_arguments_are_clear_errors():
    with pytest.raises(JetbenchError, match="fn must be callable"):
        flat_map_stateful(key_of, int, 3)
    with pytest.raises(JetbenchError, match="on_timer must be callable"):
        flat_map_stateful(key_of, int, total_with_expiry, on_timer="x")
    with pytest.raises(JetbenchError, match="create_fn"):
        FlatMapStatefulSpec(key_of, None, total_with_expiry)


def total_then_final(k, x):
    k.state += x[1]
    k.timer = math.inf
    return [(k.key, k.state)]


def final_total(k):
    return [(k.key, "final", k.state)]


def running_totals(instances):
    items = [(t, (f"k{t % 7}", t)) for t in range(0, 3000, 3)]
    p = Pipeline()
    (p.read_from(sources.test_stream(items)).apply(FlatMapStatefulSpec(key_of, int, total_then_final, final_total))
     .set_local_parallelism(instances).write_to(sinks.collect()))
    return run(p, progress=False, cooperative_threads=2)


@pytest.mark.parametrize("instances", [1, 2])
def test_in_a_pipeline_each_key_lives_in_one_instance(instances):
    expected, totals = [], {}
    for t in range(0, 3000, 3):
        k = f"k{t % 7}"
        totals[k] = totals.get(k, 0) + t
        expected.append((k, totals[k]))
    expected += [(k, "final", v) for k, v in totals.items()]
    assert sorted(running_totals(instances), key=repr) == sorted(expected, key=repr)


def test_in_a_pipeline_without_timestamps_is_an_error():
    p = Pipeline()
    p.read_from(sources.items([("a", 1)])).apply(FlatMapStatefulSpec(key_of, int, total_with_expiry)) \
        .write_to(sinks.collect())
    with pytest.raises(JetbenchError, match="timestamped"):
        run(p, progress=False)


def test_sorted_input_orders_equal_timestamps_by_order_key():
    def fn(k, x):
        return [x[1]]

    verify_processor(flat_map_stateful(key_of, int, fn, sorted_input=True, order_key=lambda x: -x[1]),
                     input=[(5, ("a", 1)), (5, ("a", 3)), (4, ("a", 0)), (5, ("a", 2)), Watermark(6)],
                     expected=[(4, 0), (5, 3), (5, 2), (5, 1), Watermark(6)], snapshots=True)
    with pytest.raises(JetbenchError, match="order_key"):
        flat_map_stateful(key_of, int, fn, sorted_input=True, order_key=5)


def test_in_a_job_taking_snapshots_every_millisecond_the_results_are_the_same():
    from jetbench.core.job_config import JobConfig

    items = [(t, (f"k{t % 7}", t)) for t in range(0, 3000, 3)]
    p = Pipeline()
    (p.read_from(sources.test_stream(items)).apply(FlatMapStatefulSpec(key_of, int, total_then_final, final_total))
     .set_local_parallelism(2).write_to(sinks.collect()))
    got = run(p, progress=False, cooperative_threads=2,
              config=JobConfig(processing_guarantee="exactly_once", snapshot_interval_ms=1))
    assert sorted(got, key=repr) == sorted(running_totals(1), key=repr)


# -- the batch form (fn_all) ----------------------------------------------------------------------


def total_to_limit(k, x):
    """Running total per key, forgotten when it passes 20 (the next item starts from 0) or 10 ms
    after its last item; a timer fires with the total."""
    k.state += x[1]
    if k.state > 20:
        k.state, k.timer = None, None
        return [(k.key, "over")]
    k.timer = k.time + 10
    return [(k.key, k.state)] if x[1] % 2 else None


def total_to_limit_all(k, pairs):
    """`total_to_limit` over one key's pairs of a batch, in one loop (restarting from 0 once forgotten)."""
    out = []
    for ts, x in pairs:
        if k.state is None:
            k.state = 0
        k.state += x[1]
        if k.state > 20:
            k.state, k.timer = None, None
            out.append((ts, (k.key, "over")))
            continue
        k.timer = ts + 10
        if x[1] % 2:
            out.append((ts, (k.key, k.state)))
    return out


def on_total_timer(k):
    return [(k.key, "timer", k.state)]


def drive(processor, steps, stamped=False):
    """Run ``processor`` over ``steps`` (lists of (ts, item) pairs and watermarks), then complete
    it; its output per key, in order, and the watermarks, in order. ``stamped``: a batch goes in
    as a stamped chunk's columns (a function of the step's index: per step), else as pairs."""
    from jetbench.core.inbox import Inbox
    from jetbench.core.items import Stamped
    from jetbench.core.outbox import Outbox
    from jetbench.core.processor import ProcessorContext

    box = Outbox(ordinal_count=1, capacity=1 << 16)
    processor.init(box, ProcessorContext("fms", 0, 0, 1, 1))
    out = []
    for i, step in enumerate(steps):
        if isinstance(step, Watermark):
            while not processor.try_process_watermark(step):
                out += box.take_bucket(0)
            out += box.take_bucket(0)
            out.append(box.take_watermark())
        else:
            as_columns = stamped(i) if callable(stamped) else stamped
            inbox = Inbox(Stamped([t for t, _ in step], [x for _, x in step]) if as_columns else list(step))
            while len(inbox):
                processor.process(0, inbox)
                out += box.take_bucket(0)
    while not processor.complete():
        out += box.take_bucket(0)
    out += box.take_bucket(0)
    per_key = {}
    for item in out:
        if not isinstance(item, Watermark):
            per_key.setdefault(item[1][0], []).append(item)
    return per_key, [w for w in out if isinstance(w, Watermark)], processor.keys


def batches_and_watermarks():
    from hypothesis import strategies as st

    pair = st.tuples(st.integers(0, 60), st.tuples(st.sampled_from("abc"), st.integers(0, 9)))
    return st.lists(st.one_of(st.lists(pair, max_size=8), st.integers(0, 80).map(Watermark)), max_size=10)


def test_the_batch_form_equals_calling_fn_item_by_item():
    from hypothesis import given, settings

    @settings(max_examples=examples(200), deadline=None)
    @given(batches_and_watermarks())
    def check(steps):
        per_item = drive(FlatMapStatefulP(key_of, int, total_to_limit, on_total_timer), steps)
        batched = drive(FlatMapStatefulP(key_of, int, total_to_limit, on_total_timer, fn_all=total_to_limit_all),
                        steps)
        assert batched == per_item

    check()


def sorted_totals(k, x):
    """Sorted mode: a running total per key, emitted per item; a timer 5 ms after the first item."""
    k.state += x[1]
    if k.timer is None:
        k.timer = k.time + 5
    return [(k.key, k.state)]


@pytest.mark.parametrize("form", ["columns", "mixed"])
@pytest.mark.parametrize("mode", ["fn", "fn_all", "sorted"])
def test_columns_in_give_what_pairs_in_give(mode, form):
    """Every input path (item by item, the batch form grouping by key, sorted mode holding items
    back) over a stamped chunk's columns, all batches or every other one: what pairs give."""
    from hypothesis import given, settings

    def make():
        if mode == "sorted":
            return FlatMapStatefulP(key_of, int, sorted_totals, on_total_timer, sorted_input=True,
                                    order_key=lambda x: x[1])
        return FlatMapStatefulP(key_of, int, total_to_limit, on_total_timer,
                                fn_all=total_to_limit_all if mode == "fn_all" else None)

    stamped = True if form == "columns" else (lambda i: i % 2 == 1)

    @settings(max_examples=examples(100), deadline=None)
    @given(batches_and_watermarks())
    def check(steps):
        p = make()
        assert p.accepts_stamped
        assert drive(p, steps, stamped=stamped) == drive(make(), steps)

    check()


def test_the_batch_form_over_columns_pairs_each_item_with_its_own_timestamp():
    """The batch path builds each key's pairs from the columns: each item with its own
    timestamp, keys in the order first seen (a zip the wrong way round fails here)."""
    seen = []

    def fn_all(k, pairs):
        seen.append((k.key, list(pairs), k.time))
        return [(ts, (k.key, x[1])) for ts, x in pairs]

    p = FlatMapStatefulP(key_of, int, total_to_limit, fn_all=fn_all)
    per_key, _, _ = drive(p, [[(5, ("b", 1)), (7, ("a", 2)), (9, ("b", 3))]], stamped=True)
    assert seen == [("b", [(5, ("b", 1)), (9, ("b", 3))], 9), ("a", [(7, ("a", 2))], 7)]
    assert per_key == {"b": [(5, ("b", 1)), (9, ("b", 3))], "a": [(7, ("a", 2))]}


@pytest.mark.parametrize("form", ["columns", "pairs"])
@pytest.mark.parametrize("mode", ["fn", "fn_all", "sorted"])
def test_snapshots_restored_at_every_step_over_columns_and_over_pairs(mode, form):
    """`verify_processor` hands an opted-in processor each batch as columns, with snapshots
    saved and restored into a new instance at every step; opted out, the same input as pairs."""
    items = [(t, (f"k{t % 3}", t % 5)) for t in (3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7)]
    steps = items[:5] + [Watermark(4)] + items[5:10] + [Watermark(9)] + items[10:]
    if mode == "sorted":
        supplier = flat_map_stateful(key_of, int, sorted_totals, on_total_timer, sorted_input=True,
                                     order_key=lambda x: x[1])
    else:
        supplier = flat_map_stateful(key_of, int, total_to_limit, on_total_timer,
                                     fn_all=total_to_limit_all if mode == "fn_all" else None)
    # the expected output: one run over pairs, an item at a time, driven directly
    per_key, watermarks, _ = drive(supplier(), [s if isinstance(s, Watermark) else [s] for s in steps])
    expected_sorted = sorted((item for items in per_key.values() for item in items), key=repr)

    def check(output):
        data = [x for x in output if not isinstance(x, Watermark)]
        assert sorted(data, key=repr) == expected_sorted
        assert [w for w in output if isinstance(w, Watermark)] == watermarks

    report = verify_processor(supplier if form == "columns" else reading_pairs(supplier), input=steps,
                              assert_output=check, snapshots=True)
    assert len(report.modes) == 5


def test_the_batch_form_in_a_pipeline_gives_the_same_results():
    items = [(t, (f"k{t % 7}", t % 5)) for t in range(0, 3000, 3)]

    def results(fn_all):
        p = Pipeline()
        (p.read_from(sources.test_stream(items))
         .apply(FlatMapStatefulSpec(key_of, int, total_to_limit, on_total_timer, fn_all=fn_all))
         .write_to(sinks.collect()))
        return sorted(run(p, progress=False), key=repr)

    assert results(total_to_limit_all) == results(None)


def test_the_batch_form_is_checked():
    with pytest.raises(JetbenchError, match="fn_all must be callable"):
        flat_map_stateful(key_of, int, total_to_limit, fn_all=3)
    with pytest.raises(JetbenchError, match="sorted_input"):
        FlatMapStatefulSpec(key_of, int, total_to_limit, sorted_input=True, fn_all=total_to_limit_all)


def test_timers_moved_later_or_earlier_fire_once_at_their_last_time():
    """A model check of the timers: each item sets its key's timer to a time it carries (later,
    earlier, or None to cancel); a watermark fires every timer below it, in order of time, once.
    (A timer moved later keeps its heap entry until it comes up: that must not show.)"""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    def set_timer(k, x):
        k.timer = x[1]
        return None

    def fired(k):
        return [(k.key, k.time)]

    item = st.tuples(st.integers(0, 5), st.tuples(st.sampled_from("abcd"), st.one_of(st.none(), st.integers(0, 60))))
    steps_strategy = st.lists(st.one_of(st.lists(item, min_size=1, max_size=6), st.integers(0, 70).map(Watermark)),
                              max_size=12)

    @settings(max_examples=examples(300), deadline=None)
    @given(steps_strategy)
    def check(steps):
        timers, expected = {}, []
        for step in steps:
            if isinstance(step, Watermark):
                due = sorted((t, k) for k, t in timers.items() if t is not None and t < step.timestamp)
                expected += [(k, t) for t, k in due]
                for _, k in due:
                    del timers[k]
            else:
                for _, (k, t) in step:
                    timers[k] = t
        expected += [(k, t) for t, k in sorted((t, k) for k, t in timers.items() if t is not None)]
        got = drive(FlatMapStatefulP(key_of, int, set_timer, fired), steps)[0]
        assert sorted(r for rs in got.values() for _, r in rs) == sorted(expected)
        times = [r[1] for rs in got.values() for _, r in rs]
        assert len(times) == len(expected)

    check()


def sorted_mode_model(steps, order_key):
    """Sorted mode written out plainly: each watermark hands over the items before it, in order
    of (timestamp, order_key, arrival), every timer before an item's time firing first (an item
    at t before a timer at t), then the timers before the watermark; at the end the rest, then
    the timers at infinity. `sorted_totals` and `on_total_timer` per key; output per key."""
    held, state, timer, out = [], {}, {}, {}
    wm_out = -math.inf

    def fire(limit, inclusive=False):
        while True:
            due = [(t, k) for k, t in timer.items() if t is not None and (t < limit or (inclusive and t == limit))]
            if not due:
                return
            t, k = min(due)
            timer[k] = None
            out.setdefault(k, []).append((max(t, wm_out), (k, "timer", state[k])))

    def hand_over(limit):
        ready = sorted((e for e in held if e[0] < limit), key=lambda e: e[:3])
        held[:] = [e for e in held if e[0] >= limit]
        for ts, _, _, x in ready:
            fire(ts)
            k = x[0]
            state[k] = state.get(k, 0) + x[1]
            if timer.get(k) is None:
                timer[k] = ts + 5
            out.setdefault(k, []).append((ts, (k, state[k])))
        fire(limit)

    arrival = 0
    for step in steps:
        if isinstance(step, Watermark):
            hand_over(step.timestamp)
            wm_out = max(wm_out, step.timestamp)
        else:
            for ts, x in step:
                arrival += 1
                held.append((ts, order_key(x), arrival, x))
    hand_over(math.inf)
    fire(math.inf, inclusive=True)
    return out


@pytest.mark.parametrize("order", ["arrival", "order_key"])
def test_sorted_mode_equals_a_plain_model_of_it(order):
    """Sorted mode (items held until a watermark passes them, sorted then, timers fired between
    items) against the same rules written out plainly, over random batches and watermarks."""
    from hypothesis import given, settings

    order_key = (lambda x: x[1]) if order == "order_key" else None

    @settings(max_examples=examples(200), deadline=None)
    @given(batches_and_watermarks())
    def check(steps):
        p = FlatMapStatefulP(key_of, int, sorted_totals, on_total_timer, sorted_input=True, order_key=order_key)
        per_key, _, _ = drive(p, steps)
        assert per_key == sorted_mode_model(steps, order_key or (lambda x: 0))

    check()


# -- the batch form over items alone (fn_items) -----------------------------------------------------


def total_by_items(k, x):
    """`total_to_limit` reading no ``k.time``: the timer is a time the item carries."""
    k.state += x[1]
    if k.state > 20:
        k.state, k.timer = None, None
        return [(k.key, "over")]
    k.timer = x[1] * 8
    return [(k.key, k.state)] if x[1] % 2 else None


def total_by_items_batch(k, items):
    """`total_by_items` over one key's items of a batch, in one loop."""
    out = []
    for x in items:
        if k.state is None:
            k.state = 0
        k.state += x[1]
        if k.state > 20:
            k.state, k.timer = None, None
            out.append((k.key, "over"))
            continue
        k.timer = x[1] * 8
        if x[1] % 2:
            out.append((k.key, k.state))
    return out


@pytest.mark.parametrize("form", ["pairs", "columns", "mixed"])
def test_the_items_batch_form_equals_calling_fn_item_by_item(form):
    """fn_items, over pairs, columns or both: per key the same results in the same order as fn
    item by item, the same timers firing (stamped alike) and the same state left; only an item's
    results are stamped with its batch's latest timestamp instead of its own."""
    from hypothesis import given, settings

    stamped = {"pairs": False, "columns": True, "mixed": lambda i: i % 2 == 1}[form]

    @settings(max_examples=examples(200), deadline=None)
    @given(batches_and_watermarks())
    def check(steps):
        per_item = drive(FlatMapStatefulP(key_of, int, total_by_items, on_total_timer), steps)
        batched = drive(FlatMapStatefulP(key_of, int, total_by_items, on_total_timer,
                                         fn_items=total_by_items_batch), steps, stamped=stamped)
        assert per_item[1:] == batched[1:]  # watermarks, keys left (state, timer)
        assert per_item[0].keys() == batched[0].keys()
        for key, results in per_item[0].items():
            got = batched[0][key]
            assert [r for _, r in got] == [r for _, r in results]
            assert [t for t, r in got if r[1] == "timer"] == [t for t, r in results if r[1] == "timer"]

    check()


def test_the_items_batch_form_gets_each_key_its_items_and_the_batch_time():
    seen = []

    def fn_items(k, items):
        seen.append((k.key, list(items), k.time))
        return [(k.key, x[1]) for x in items]

    p = FlatMapStatefulP(key_of, int, total_by_items, fn_items=fn_items)
    per_key, _, _ = drive(p, [[(9, ("b", 1)), (5, ("a", 2)), (7, ("b", 3))]], stamped=True)
    assert seen == [("b", [("b", 1), ("b", 3)], 9), ("a", [("a", 2)], 9)]
    assert per_key == {"b": [(9, ("b", 1)), (9, ("b", 3))], "a": [(9, ("a", 2))]}


def test_the_items_batch_form_is_checked_and_in_a_pipeline_gives_the_same_results():
    with pytest.raises(JetbenchError, match="fn_items must be callable"):
        flat_map_stateful(key_of, int, total_by_items, fn_items=3)
    with pytest.raises(JetbenchError, match="not both"):
        flat_map_stateful(key_of, int, total_by_items, fn_all=total_to_limit_all, fn_items=total_by_items_batch)
    with pytest.raises(JetbenchError, match="sorted_input"):
        FlatMapStatefulSpec(key_of, int, total_by_items, sorted_input=True, fn_items=total_by_items_batch)
    items = [(t, (f"k{t % 7}", t % 5)) for t in range(0, 3000, 3)]

    def results(fn_items):
        p = Pipeline()
        (p.read_from(sources.test_stream(items))
         .apply(FlatMapStatefulSpec(key_of, int, total_by_items, on_total_timer, fn_items=fn_items))
         .write_to(sinks.collect()))
        return sorted(run(p, progress=False), key=repr)

    assert results(total_by_items_batch) == results(None)


@pytest.mark.parametrize("form", ["columns", "pairs"])
def test_the_items_batch_form_with_snapshots_restored_at_every_step(form):
    items = [(t, (f"k{t % 3}", t % 5)) for t in (3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7)]
    steps = items[:5] + [Watermark(4)] + items[5:10] + [Watermark(9)] + items[10:]
    supplier = flat_map_stateful(key_of, int, total_by_items, on_total_timer, fn_items=total_by_items_batch)
    per_key, watermarks, _ = drive(FlatMapStatefulP(key_of, int, total_by_items, on_total_timer),
                                   [s if isinstance(s, Watermark) else [s] for s in steps])
    expected = sorted((r for rs in per_key.values() for _, r in rs), key=repr)

    def check(output):
        assert sorted((x[1] for x in output if not isinstance(x, Watermark)), key=repr) == expected
        assert [w for w in output if isinstance(w, Watermark)] == watermarks

    verify_processor(supplier if form == "columns" else reading_pairs(supplier), input=steps,
                     assert_output=check, snapshots=True)
