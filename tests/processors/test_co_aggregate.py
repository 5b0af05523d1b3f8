"""Co-aggregation (Jet's aggregate2 / aggregate3 / aggregateBuilder): `CoAggregateP` in every
`verify_processor` mode (snapshots included) against a plain Python model on random inputs,
keyed and global, 2 to 4 inputs; the tagged operation of its windowed form; its argument checks."""

from __future__ import annotations

import operator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from jetbench import JetbenchError
from jetbench.processors.aggregate_operation import counting, max_by, summing, to_list
from jetbench.processors.co_aggregate import CoAggregate, co_aggregate, co_aggregate_operation
from jetbench.processors.kind_params import KindParamError
from jetbench.testing import verify_processor

SETTINGS = settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])

first = operator.itemgetter(0)
second = operator.itemgetter(1)

#: the operations a random test picks from, and what each means on a list of (key, value) items
OPS = {
    "counting": (counting, len),
    "summing": (lambda: summing(second), lambda xs: sum(x[1] for x in xs)),
    "to_list": (to_list, list),
    "max_by": (lambda: max_by(second), lambda xs: max(xs, key=second) if xs else None),
}


def model(sides, names, keyed):
    """Jet's co-aggregation in plain Python: per key (or for all items), each side's items folded
    by its operation; a key seen on one side only has the other sides' results over no items."""
    keys = sorted({first(x) for side in sides for x in side}) if keyed else [None]
    out = []
    for k in keys:
        values = tuple(OPS[name][1]([x for x in side if not keyed or first(x) == k])
                       for side, name in zip(sides, names, strict=True))
        out.append((k, values) if keyed else values)
    return out


def supplier(names, keyed):
    ops = [OPS[name][0]() for name in names]
    keys = [first if keyed else None] * len(names)
    return co_aggregate(keys[0], ops[0], keys[1], ops[1], more=tuple(zip(keys[2:], ops[2:], strict=True)))


items = st.lists(st.tuples(st.integers(0, 4), st.integers(-50, 50)), max_size=12)


@SETTINGS
@given(data=st.data(), n=st.integers(2, 4), keyed=st.booleans())
def test_co_aggregate_equals_the_model_in_every_mode(data, n, keyed):
    sides = [data.draw(items) for _ in range(n)]
    names = [data.draw(st.sampled_from(sorted(OPS))) for _ in range(n)]
    verify_processor(supplier(names, keyed), inputs=sides, expected=model(sides, names, keyed), any_order=True)


def test_keyed_groups_come_in_first_seen_order_and_a_global_one_without_items_is_the_empty_result():
    verify_processor(co_aggregate(first, counting(), first, to_list()),
                     inputs=[[("a", 1), ("b", 2), ("a", 3)], [("c", 9), ("a", 8)]],
                     expected=[("a", (2, [("a", 8)])), ("c", (0, [("c", 9)])), ("b", (1, []))])
    verify_processor(co_aggregate(None, counting(), None, to_list()), inputs=[[], []], expected=[(0, [])])


def test_many_groups_through_a_refusing_outbox_with_snapshots():
    lefts = [(k, k) for k in range(60)]
    verify_processor(co_aggregate(first, summing(second), first, counting()), inputs=[lefts, lefts[::3]],
                     expected=[(k, (k, int(k % 3 == 0))) for k in range(60)], snapshots=True,
                     any_order=True)


@SETTINGS
@given(sides=st.lists(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 9)), max_size=8), min_size=1, max_size=4),
       order=st.randoms(use_true_random=False))
def test_the_tagged_operation_equals_the_model_in_any_order_and_split(sides, order):
    """The windowed form's operation: tagged items in any interleaving, folded in two halves and
    combined, give each side's results over its own items."""
    op = co_aggregate_operation(*(summing(second) for _ in sides))
    tagged = [(i, k, (k, v)) for i, side in enumerate(sides) for k, v in side]
    order.shuffle(tagged)
    half = len(tagged) // 2
    a, b = op.create(), op.create()
    for t in tagged[:half]:
        a = op.accumulate(a, t)
    for t in tagged[half:]:
        b = op.accumulate(b, t)
    assert op.finish(op.combine(a, b)) == tuple(sum(v for _, v in side) for side in sides)
    assert op.finish(op.deduct(op.combine(a, b), b)) == op.finish(a)


def test_the_tagged_operation_combines_only_when_every_operation_does():
    no_combine = counting().__class__(create=list, accumulate=lambda acc, x: acc)
    assert co_aggregate_operation(counting(), no_combine).combine is None
    assert co_aggregate_operation(counting(), to_list()).deduct is None
    with pytest.raises(JetbenchError, match=r"argument 2: aggregate.counting is a factory"):
        co_aggregate_operation(counting(), counting)
    with pytest.raises(JetbenchError, match="at least one"):
        co_aggregate_operation()


@pytest.mark.parametrize("args, kwargs, message", [
    ((first, counting(), None, counting()), {},
     "co_aggregate: key0 and key1 must both be functions (keyed) or both be None (global), got operator.itemgetter(0), None"),
    ((first, counting, first, counting()), {}, "co_aggregate: op0: aggregate.counting is a factory"),
    ((first, counting(), first, "sum"), {}, "co_aggregate: op1: expected an AggregateOperation"),
    ((first, counting(), first, counting()), {"more": ((first,),)}, "more must be a tuple of"),
    ((first, counting(), first, counting()), {"more": ((None, counting()),)}, "key0, key1 and key2 must all be functions"),
    ((first, counting(), first, counting()), {"more": ((first, 3),)}, "the operation of input 2: expected"),
    ((3, counting(), 4, counting()), {}, "co_aggregate: key0 must be callable or None, got 3"),
])
def test_arguments_are_checked_naming_the_parameter(args, kwargs, message):
    with pytest.raises(KindParamError) as info:
        co_aggregate(*args, **kwargs)
    assert message in str(info.value) and isinstance(info.value, JetbenchError)


def test_the_declaration_plans_and_shows_two_inputs_in_the_builder():
    (kind,) = __import__("jetbench.processors.co_aggregate", fromlist=["BUILDER_KINDS"]).BUILDER_KINDS
    assert [p.name for p in kind.params] == ["key0", "op0", "value0", "key1", "op1", "value1"]
    built = kind.build({"op0": "summing", "op1": "counting"}, {"key0": first, "key1": second, "value0": abs}, {})
    assert isinstance(built, CoAggregate) and built.key0 is first and built.op1.recipe == ("counting", ())
    assert built.op0.recipe == ("summing", (abs,))
    code, imports = kind.code({"op0": "summing", "op1": "to_list"}, {"key0": "k0", "key1": "k1", "value0": "abs"})
    assert code == "co_aggregate(k0, aggregate.summing(abs), k1, aggregate.to_list())"
    assert "from jetbench.processors.co_aggregate import co_aggregate" in imports
