"""Every built-in processor under `verify_processor`: capacity-1 outbox, inbox limits 1 and 1024,
progress and re-offer checks, watermarks in the input."""

from __future__ import annotations

import operator

import pytest

from jetbench.core.items import Watermark
from jetbench.processors import (
    AggregateOperation,
    Transform,
    accumulate_by_key,
    aggregate_by_key,
    collect_sink,
    combine_by_key,
    counting,
    filter_processor,
    flat_map_processor,
    items_source,
    map_processor,
    noop_sink,
    transform_processor,
)
from jetbench.testing import verify_processor

WM1, WM2, WM3 = Watermark(100), Watermark(200), Watermark(300)


def five_copies(x):
    return [x] * 5


#: (sum, count) -> mean: an operation whose accumulator differs from its result.
mean = AggregateOperation(
    create=lambda: (0, 0),
    accumulate=lambda acc, x: (acc[0] + x, acc[1] + 1),
    combine=lambda a, b: (a[0] + b[0], a[1] + b[1]),
    finish=lambda acc: acc[0] / acc[1],
)

#: A mutable accumulator (a list) that the operation extends in place and returns.
collect_to_list = AggregateOperation(
    create=list,
    accumulate=lambda acc, x: acc + [x],
    combine=operator.add,
    finish=tuple,
)


def accept_any(output):
    """An output check that accepts anything (the test compares outputs afterwards)."""


# -- items_source ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "items", [list(range(7)), tuple("abcde"), range(4), "xyz"], ids=lambda v: type(v).__name__
)
def test_items_source_over_sequences(items):
    report = verify_processor(items_source(items), expected=list(items))
    assert "inbox_limit=1024" not in report.modes  # no input: one plain run (then the snapshot modes)


def test_items_source_over_a_generator():
    # A generator is read once; the single run (a source has no input) consumes it.
    verify_processor(items_source(x * x for x in range(6)), expected=[0, 1, 4, 9, 16, 25])


def test_items_source_empty():
    verify_processor(items_source([]), expected=[])


@pytest.mark.parametrize("index", [0, 1, 2])
def test_items_source_splits_a_sequence_by_stride(index):
    verify_processor(
        items_source(list(range(10))),
        context={"global_index": index, "total_parallelism": 3},
        expected=list(range(10))[index::3],
    )


@pytest.mark.parametrize("index", [0, 1])
def test_items_source_reads_an_iterator_on_instance_0_only(index):
    verify_processor(
        items_source(iter("abc")),
        context={"global_index": index, "total_parallelism": 2},
        expected=list("abc") if index == 0 else [],
    )


def test_items_source_to_two_ordinals():
    verify_processor(items_source("abcd"), output_ordinals=2, expected=[list("abcd")] * 2)


def test_items_source_without_outbound_ordinals():
    verify_processor(items_source("abcd"), output_ordinals=0)


# -- stateless transforms --------------------------------------------------------------------


def test_map():
    verify_processor(map_processor(lambda x: x * 10), input=range(5), expected=[0, 10, 20, 30, 40])


def test_map_forwards_watermarks_in_order():
    verify_processor(
        map_processor(str.upper),
        input=[WM1, "a", "b", WM2, "c", WM3],
        expected=[WM1, "A", "B", WM2, "C", WM3],
    )


def test_map_to_two_ordinals():
    verify_processor(
        map_processor(lambda x: -x),
        input=[1, 2, WM1, 3],
        output_ordinals=2,
        expected=[[-1, -2, WM1, -3]] * 2,
    )


def test_map_over_two_input_ordinals():
    verify_processor(
        map_processor(lambda x: x + 1),
        inputs=[[10, 20, 30], [1]],
        expected=[11, 2, 21, 31],
    )


def test_filter():
    verify_processor(
        filter_processor(lambda x: x % 3 == 0),
        input=range(10),
        expected=[0, 3, 6, 9],
    )


def test_filter_forwards_watermarks_in_order():
    verify_processor(
        filter_processor(lambda x: x % 2),
        input=[0, 1, WM1, 2, 4, WM2, 5],
        expected=[1, WM1, WM2, 5],
    )


def test_filter_dropping_everything():
    verify_processor(filter_processor(lambda x: False), input=range(5), expected=[])


def test_flat_map_one_to_many_resumes_across_calls():
    # One item gives 5, the outbox takes 1 per call: the rest must survive 4 refusals.
    verify_processor(
        flat_map_processor(five_copies),
        input=[1, 2, 3],
        expected=[1] * 5 + [2] * 5 + [3] * 5,
    )


def test_flat_map_mixed_expansion():
    verify_processor(
        flat_map_processor(range),
        input=[3, 0, 1, 0, 5, 2],
        expected=[0, 1, 2, 0, 0, 1, 2, 3, 4, 0, 1],
    )


def test_flat_map_larger_input():
    items = list(range(300))
    verify_processor(
        flat_map_processor(lambda x: [x, -x] if x % 2 else []),
        input=items,
        expected=[y for x in items if x % 2 for y in (x, -x)],
    )


def test_flat_map_to_two_ordinals():
    expected = [c for w in ["ab", "cde"] for c in w]
    verify_processor(
        flat_map_processor(list),
        input=["ab", "cde"],
        output_ordinals=2,
        expected=[expected, expected],
    )


def test_flat_map_forwards_watermarks_when_nothing_is_pending():
    # Items that expand to at most one item leave nothing pending when the watermark arrives.
    verify_processor(
        flat_map_processor(lambda x: [x] if x else []),
        input=[WM1, 1, 0, WM2, 2, WM3],
        expected=[WM1, 1, WM2, 2, WM3],
    )


def test_flat_map_watermark_after_expanded_item():
    verify_processor(
        flat_map_processor(five_copies),
        input=[1, WM1, 2],
        expected=[1] * 5 + [WM1] + [2] * 5,
    )


def test_fused_chain():
    chain = (
        Transform()
        .map(str.lower)
        .flat_map(str.split)
        .filter(lambda w: len(w) > 2)
        .map(lambda w: w[::-1])
    )
    verify_processor(
        transform_processor(chain),
        input=["The cat SAT", "on a MAT", "", "dog and fox"],
        expected=["eht", "tac", "tas", "tam", "god", "dna", "xof"],
    )


def test_fused_chain_without_flat_map_forwards_watermarks():
    chain = Transform().map(lambda x: x * 3).filter(lambda x: x % 2 == 0).map(str)
    verify_processor(
        transform_processor(chain),
        input=[1, 2, WM1, 3, 4, WM2],
        expected=["6", WM1, "12", WM2],
    )


def test_fused_chain_with_flat_map_watermark_in_order():
    chain = Transform().map(str.lower).flat_map(str.split)
    verify_processor(
        transform_processor(chain),
        input=["A B", WM1, "C"],
        expected=["a", "b", WM1, "c"],
    )


def test_empty_transform_is_identity():
    verify_processor(transform_processor(Transform()), input=[1, WM1, 2], expected=[1, WM1, 2])


def test_filters_over_timestamped_pairs_pass_the_pairs_themselves():
    pairs = [(1, 3), (2, -1), (3, 8), (4, 4)]
    kept = Transform(timestamped=True).filter(lambda x: x > 0).filter(lambda x: x % 2 == 0)(pairs)
    assert kept == [(3, 8), (4, 4)] and kept[0] is pairs[2]  # not a new (ts, item) tuple
    assert Transform(timestamped=True).filter(bool).map(str)([(1, 0), (2, 5)]) == [(2, "5")]
    assert Transform(timestamped=True)(pairs) == pairs and Transform(timestamped=True)(pairs) is not pairs
    assert Transform(timestamped=True, keep_timestamps=False).filter(bool)(pairs) == [3, -1, 8, 4]


# -- keyed aggregation -----------------------------------------------------------------------


def parity(x):
    return x % 2


def test_accumulate_by_key_counting():
    verify_processor(
        accumulate_by_key(lambda x: x % 3, counting()),
        input=range(10),
        expected=[(0, 4), (1, 3), (2, 3)],
    )


def test_accumulate_by_key_emits_unfinished_accumulators():
    # Stage 1 emits the accumulator, not finish(acc).
    verify_processor(
        accumulate_by_key(parity, mean),
        input=[1, 2, 3, 4, 5],
        expected=[(1, (9, 3)), (0, (6, 2))],
    )


def test_accumulate_by_key_many_keys():
    # 40 results through a capacity-1 outbox: complete() must resume 40 times.
    verify_processor(
        accumulate_by_key(lambda x: x % 40, counting()),
        input=range(200),
        expected=[(k, 5) for k in range(40)],
    )


def test_accumulate_by_key_forwards_watermarks():
    verify_processor(
        accumulate_by_key(parity, counting()),
        input=[1, 2, WM1, 3, WM2],
        expected=[WM1, WM2, (1, 2), (0, 1)],
    )


def test_combine_by_key_counting():
    verify_processor(
        combine_by_key(counting()),
        inputs=[[("a", 2), ("b", 1)], [("a", 3), ("c", 7)]],
        expected=[("a", 5), ("b", 1), ("c", 7)],
        any_order=True,
    )


def test_combine_by_key_applies_finish():
    verify_processor(
        combine_by_key(mean),
        input=[("x", (3, 1)), ("y", (10, 4)), ("x", (5, 3))],
        expected=[("x", 2.0), ("y", 2.5)],
    )


def test_combine_by_key_with_list_accumulators():
    verify_processor(
        combine_by_key(collect_to_list),
        input=[("k", [1]), ("k", [2, 3]), WM1, ("j", [])],
        expected=[WM1, ("k", (1, 2, 3)), ("j", ())],
    )


def test_two_stage_equals_single_stage():
    items = [i * 7 % 11 for i in range(60)]
    stage1 = verify_processor(
        accumulate_by_key(lambda x: x % 4, mean), input=items, assert_output=accept_any
    )
    partials = stage1.runs[0].output
    combined = verify_processor(combine_by_key(mean), input=partials, assert_output=accept_any)
    single = verify_processor(
        aggregate_by_key(lambda x: x % 4, mean), input=items, assert_output=accept_any
    )
    assert combined.runs[0].output == single.runs[0].output


def test_aggregate_by_key_counting():
    verify_processor(
        aggregate_by_key(str.lower, counting()),
        input=list("aAbBBc"),
        expected=[("a", 2), ("b", 3), ("c", 1)],
    )


def test_aggregate_by_key_custom_operation_with_finish():
    verify_processor(
        aggregate_by_key(parity, mean),
        input=[1, 2, 3, 4, WM1, 5],
        expected=[WM1, (1, 3.0), (0, 3.0)],
    )


def test_aggregate_by_key_to_two_ordinals():
    expected = [(k, 10) for k in range(5)]
    verify_processor(
        aggregate_by_key(lambda x: x % 5, counting()),
        input=range(50),
        output_ordinals=2,
        expected=[expected, expected],
    )


def test_aggregate_by_key_without_input():
    verify_processor(aggregate_by_key(parity, counting()), input=[], expected=[])


# -- sinks -----------------------------------------------------------------------------------


def test_collect_sink():
    items = ["a", 1, None, ("t",), "a"]
    report = verify_processor(collect_sink(), input=items, output_ordinals=0)
    assert len(report.runs) == 5  # the two plain modes and the three snapshot modes
    assert [run.processor.result_part() for run in report.runs] == [items] * 5


def test_collect_sink_with_watermarks_and_two_inputs():
    report = verify_processor(
        collect_sink(),
        inputs=[[1, 2, WM1, 3], [10, 20]],
        output_ordinals=0,
    )
    for run in report.runs:
        assert run.processor.result_part() == [1, 10, 2, 20, 3]


def test_collect_sink_forwards_watermarks_when_it_has_an_outbound_ordinal():
    # The default try_process_watermark forwards; with no outbound ordinal (as in a job) the
    # watermark goes nowhere.
    report = verify_processor(collect_sink(), input=[1, WM1, 2], expected=[WM1])
    assert report.runs[1].processor.result_part() == [1, 2]


def test_noop_sink():
    verify_processor(noop_sink(), input=[1, 2, WM1, 3], output_ordinals=0)
    verify_processor(noop_sink(), inputs=[[1, 2], [3]], output_ordinals=0)
