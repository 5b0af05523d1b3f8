"""Batch kernels of keyed aggregation (issue 17 §2): every built-in operation's
``accumulate_groups`` against the per-item path (``create`` + ``accumulate`` per item), batch by
batch, with hypothesis; and `AccumulateByKeyP` with and without the batch path under
`verify_processor` (all modes, snapshots included)."""

from __future__ import annotations

import dataclasses
import operator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples
from window_helpers import drive

from jetbench.core.items import Watermark
from jetbench.processors import (
    accumulate_by_key,
    aggregate_by_key,
    global_accumulate,
    global_aggregate,
)
from jetbench.processors.aggregate_operation import (
    FACTORIES,
    AggregateOperation,
    _identity,
    accumulate_groups_per_item,
    all_of,
    averaging,
    counting,
    is_identity,
    max_by,
    min_by,
    summing,
    to_list,
    to_set,
    top_n,
)
from jetbench.processors.aggregation import AccumulateByKeyP
from jetbench.processors.window_aggregate import SlidingWindowP
from jetbench.processors.window_definition import sliding, tumbling
from jetbench.testing import verify_processor

key_of = operator.itemgetter(0)
value_of = operator.itemgetter(1)


def negated(item):
    return -item[1]


#: every built-in operation with a batch path, over items ``(key, number)``
WITH_BATCH = {
    "counting()": counting(),
    "summing(value)": summing(value_of),
    "summing(identity) over values": summing(),
    "averaging(value)": averaging(value_of),
    "min_by()": min_by(),
    "max_by()": max_by(),
    "min_by(value)": min_by(value_of),
    "max_by(negated)": max_by(negated),
    "to_list()": to_list(),
    "to_set()": to_set(),
}
#: the built-ins without one (they go item by item), as factories: top_n's tie-breaking counter
#: lives in the operation and goes on counting from one run to the next
WITHOUT_BATCH = {
    "top_n(2, value)": lambda: top_n(2, value_of),
    "all_of(counting(), summing(value))": lambda: all_of(counting(), summing(value_of)),
}


def test_every_library_operation_is_covered():
    names = {label.split("(")[0] for label in [*WITH_BATCH, *WITHOUT_BATCH]}
    assert names == set(FACTORIES)
    assert all(op.accumulate_groups is not None for op in WITH_BATCH.values())
    assert all(make().accumulate_groups is None for make in WITHOUT_BATCH.values())


#: keys of mixed types, some equal across types (0 == False == 0.0 == -0.0, 1 == True == 1.0)
keys = st.one_of(
    st.integers(-2, 2), st.booleans(), st.none(), st.sampled_from(["", "a", "b"]),
    st.sampled_from([0.0, -0.0, 1.0, 2.5]), st.tuples(st.integers(0, 1)),
)
numbers = st.one_of(st.integers(-5, 5), st.booleans(), st.floats(-1e6, 1e6, allow_nan=False, width=32),
                    st.sampled_from([0.0, -0.0]))
items = st.tuples(keys, numbers)
#: batches, empty ones and single items included
batches = st.lists(st.lists(items, max_size=12), max_size=6)


def _state(groups):
    """The groups as compared: the key objects, the accumulators and their types, in order."""
    return repr([(k, type(k), v, type(v)) for k, v in groups.items()])


@pytest.mark.parametrize("label", list(WITH_BATCH))
@settings(deadline=None, max_examples=examples(150))
@given(batches=batches)
def test_batch_kernel_equals_per_item_path(label, batches):
    op = WITH_BATCH[label]
    fold = op.accumulate_groups
    assert fold is not None
    if label.endswith("over values"):  # summing(): the items themselves are the numbers
        key_fn = type
        batches = [[value for _, value in batch] for batch in batches]
    else:
        key_fn = key_of
    batch_groups: dict = {}
    item_groups: dict = {}
    for batch in batches:
        calls: list = []

        def counted_key(item, calls=calls):
            calls.append(item)
            return key_fn(item)

        fold(batch_groups, counted_key, list(batch))
        assert calls == list(batch)  # key_fn once per item, in order
        accumulate_groups_per_item(op, item_groups, key_fn, batch)
        assert _state(batch_groups) == _state(item_groups)


@pytest.mark.parametrize("label", list(WITH_BATCH))
@settings(deadline=None, max_examples=examples(100))
@given(batches=batches)
def test_identity_key_kernel_equals_per_item_path(label, batches):
    """With the library's identity as key function the kernels use the items as keys, uncalled."""
    op = WITH_BATCH[label]
    if label.endswith("over values") or label in ("min_by()", "max_by()"):
        batches = [[value for _, value in batch] for batch in batches]  # one group's items must compare
    batch_groups: dict = {}
    item_groups: dict = {}
    for batch in batches:
        op.accumulate_groups(batch_groups, _identity, list(batch))
        accumulate_groups_per_item(op, item_groups, lambda x: x, batch)
        assert _state(batch_groups) == _state(item_groups)


def word(w):
    """A key function that returns its argument, docstring and all."""
    return w


def test_is_identity():
    assert is_identity(_identity) and is_identity(word) and is_identity(lambda x: x)
    assert not is_identity(key_of) and not is_identity(str.lower) and not is_identity(lambda x: x + 0)
    assert not is_identity(lambda x, y=0: x) and not is_identity(lambda *x: x) and not is_identity(lambda x: -x)
    p = AccumulateByKeyP(word, counting())
    assert p._group_key is _identity and p.key_fn is word
    assert AccumulateByKeyP(len, counting())._group_key is len


@pytest.mark.parametrize("op", [counting(), to_list(), max_by()], ids=["counting", "to_list", "max_by"])
def test_identity_key_processor(op):
    data = ["b", "a", "b", "c", "a", "b"]
    slow = verify_processor(aggregate_by_key(word, _per_item(op)), input=data, assert_output=lambda output: None)
    verify_processor(aggregate_by_key(word, op), input=data, expected=slow.runs[0].output)


def test_batch_kernels_on_examples():
    pairs = [("a", 1), (1, 2.5), ("a", -3), (True, 4), (None, 0)]
    for op, expected in [
        (counting(), {"a": 2, 1: 2, None: 1}),
        (summing(value_of), {"a": -2, 1: 6.5, None: 0}),
        (min_by(value_of), {"a": ("a", -3), 1: (1, 2.5), None: (None, 0)}),
        (to_list(), {"a": [("a", 1), ("a", -3)], 1: [(1, 2.5), (True, 4)], None: [(None, 0)]}),
    ]:
        groups: dict = {}
        op.accumulate_groups(groups, key_of, pairs[:2])
        op.accumulate_groups(groups, key_of, [])
        op.accumulate_groups(groups, key_of, pairs[2:])
        assert groups == expected


def _per_item(op: AggregateOperation) -> AggregateOperation:
    return dataclasses.replace(op, accumulate_all=None, accumulate_groups=None)


def test_processor_chooses_its_path():
    assert AccumulateByKeyP(key_of, counting()).batch_kernel == "accumulate_groups"
    assert AccumulateByKeyP(key_of, _per_item(counting())).batch_kernel is None
    assert AccumulateByKeyP(key_of, top_n(1)).batch_kernel is None
    assert AccumulateByKeyP(key_of, all_of(counting())).batch_kernel is None
    global_counting = global_aggregate(counting())
    assert global_counting().batch_kernel == "accumulate_all"
    assert global_aggregate(to_list())().batch_kernel == "accumulate_groups"


INPUT = [("a", 3), (2, 1.5), ("b", -1), (2.0, 4), ("a", 3), (None, 0), (False, 2), (0, -7), ("b", 8), ("c", 1)]


@pytest.mark.parametrize("label", list(WITH_BATCH) + list(WITHOUT_BATCH))
@pytest.mark.parametrize("make", [aggregate_by_key, accumulate_by_key, "global_aggregate", "global_accumulate"])
def test_processors_give_the_per_item_results(label, make):
    """Each built-in through the aggregation processors, batch path and per-item path, under
    verify_processor (inbox limits 1 and 1024, the three snapshot modes): equal outputs."""
    def fresh():
        return WITH_BATCH[label] if label in WITH_BATCH else WITHOUT_BATCH[label]()
    key_fn = type if label.endswith("over values") else key_of
    compares_items = label in ("min_by()", "max_by()") and make in ("global_aggregate", "global_accumulate")
    values_only = label.endswith("over values") or compares_items  # items of one global group must compare
    data = [value for _, value in INPUT] if values_only else INPUT
    if make == "global_aggregate":
        def supplier_of(o):
            return global_aggregate(o)
    elif make == "global_accumulate":
        def supplier_of(o):
            return global_accumulate(o)
    else:
        def supplier_of(o):
            return make(key_fn, o)
    if label.startswith("top_n") and make in (accumulate_by_key, "global_accumulate"):
        # top_n's accumulators carry its counter, which moves on from run to run: compare results
        finish = fresh().finish_fn

        def normal(output):
            return [(k, finish(acc)) for k, acc in output]
    else:
        def normal(output):
            return output
    slow = verify_processor(supplier_of(_per_item(fresh())), input=data, assert_output=lambda output: None)
    expected = normal(slow.runs[0].output)

    def check(output):
        assert normal(output) == expected

    verify_processor(supplier_of(fresh()), input=data, assert_output=check)


# -- keyed windows: a batch within one frame folds through accumulate_groups --------------------


@pytest.mark.parametrize("label", ["counting()", "summing(value)", "min_by(value)", "to_list()", "to_set()"])
@pytest.mark.parametrize("window", ["tumbling", "sliding"])
@settings(deadline=None, max_examples=examples(40))
@given(
    events=st.lists(st.tuples(st.integers(0, 30), items), max_size=120),
    size=st.integers(1, 60),
    lag=st.integers(0, 40),
    batch=st.sampled_from([1, 3, 1024]),
    stamped=st.booleans(),
)
def test_keyed_window_folding_equals_item_by_item(label, window, events, size, lag, batch, stamped):
    """Folding (over pairs, or a stamped chunk's columns) against the per-item path over pairs."""
    op = WITH_BATCH[label]
    definition = tumbling(size) if window == "tumbling" else sliding(size * 2, size)
    steps, ts = [], 0
    for i, (gap, item) in enumerate(events):
        ts += gap
        steps.append((ts - (i % 3) * lag // 2, item))  # mostly ordered, some stragglers
        if i % 13 == 12:
            steps.append(Watermark(ts - lag))
    fast = SlidingWindowP(key_of, op, definition)
    slow = SlidingWindowP(key_of, _per_item(op), definition)
    assert fast.folds_batches and not slow.folds_batches  # running mode too (op.deduct, sliding)
    assert drive(fast, steps, batch, stamped=stamped) == drive(slow, steps, batch)
    assert fast.late_events_dropped == slow.late_events_dropped


def test_keyed_window_with_identity_key():
    steps = [(t, w) for t, w in enumerate("abacbba")] + [Watermark(100)]
    fast = SlidingWindowP(word, counting(), tumbling(4))
    assert fast.folds_batches and fast._group_key is _identity
    assert drive(fast, steps) == drive(SlidingWindowP(word, _per_item(counting()), tumbling(4)), steps)
