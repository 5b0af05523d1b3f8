"""A timestamped chain over columns (`Transform.columns_fn`): filters followed by maps select
what passes with `itertools.compress`, and give what the same chain gives over ``(ts, item)``
pairs, item by item: the same items, each with its own timestamp, in order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jetbench.core.errors import ITEM, noted_item
from jetbench.core.inbox import Inbox
from jetbench.core.items import Stamped
from jetbench.core.outbox import Outbox
from jetbench.core.processor import ProcessorContext
from jetbench.processors import Transform
from jetbench.processors.transform import TransformP
from jetbench.processors.transform_chain import generated_source

FILTERS = [lambda x: x % 2 == 0, lambda x: x % 3, lambda x: x > 4, lambda x: [x] if x % 5 else []]
MAPS = [lambda x: x + 1, lambda x: 3 * x, lambda x: -x]


def chain(filters: list[int], maps: list[int]) -> Transform:
    t = Transform(timestamped=True)
    for i in filters:
        t = t.filter(FILTERS[i])
    for i in maps:
        t = t.map(MAPS[i])
    return t


def by_pairs(filters: list[int], maps: list[int], ts: list[int], items: list[int]) -> tuple[list, list]:
    out_ts, out = [], []
    for t, x in zip(ts, items, strict=True):
        if all(FILTERS[i](x) for i in filters):
            for i in maps:
                x = MAPS[i](x)
            out_ts.append(t)
            out.append(x)
    return out_ts, out


def source_of(fn) -> str:
    return generated_source(fn)


@given(filters=st.lists(st.integers(0, len(FILTERS) - 1), min_size=1, max_size=3),
       maps=st.lists(st.integers(0, len(MAPS) - 1), max_size=3),
       items=st.lists(st.integers(-20, 40), max_size=30))
def test_filters_then_maps_over_columns_give_the_pairs_result(filters, maps, items):
    ts = [1000 + 7 * i for i in range(len(items))]  # distinct: an item paired with another's fails
    fn = chain(filters, maps).columns_fn()
    assert "_compress" in source_of(fn)
    assert fn(list(ts), list(items)) == by_pairs(filters, maps, ts, items)


def test_a_map_before_a_filter_keeps_the_one_pass_form():
    fn = Transform(timestamped=True).map(lambda x: x + 1).filter(lambda x: x % 2).columns_fn()
    assert "_compress" not in source_of(fn)
    assert fn([5, 6, 7], [1, 2, 3]) == ([6], [3])


def test_a_later_filter_is_called_only_on_what_the_earlier_ones_passed():
    seen = []

    def second(x):
        seen.append(x)
        return True

    fn = Transform(timestamped=True).filter(lambda x: x > 1).filter(second).map(str).columns_fn()
    assert fn([10, 20, 30], [1, 2, 3]) == ([20, 30], ["2", "3"])
    assert seen == [2, 3]


@pytest.mark.parametrize("broken", ["filter", "map"])
def test_a_failing_step_over_columns_names_its_item(broken):
    def boom(x):
        if x == 3:
            raise ValueError("no 3")
        return x

    t = Transform(timestamped=True)
    t = t.filter(bool).map(boom) if broken == "map" else t.filter(boom).map(str)
    p = TransformP(t)
    p.init(Outbox(1, 16), ProcessorContext("chain", 0, 0, 1, 1))
    with pytest.raises(ValueError, match="no 3") as info:
        p.process(0, Inbox(Stamped([10, 20, 30, 40], [1, 2, 3, 4])))
    assert noted_item(info.value) == (ITEM, 3)
