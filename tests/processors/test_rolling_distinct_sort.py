"""Jet's rolling_aggregate, distinct and sort: each processor in every `verify_processor` mode
(plain, large inbox, the three snapshot modes), in a pipeline (keyed and global, batch and
stream), under both processing guarantees, and their argument checks."""

from __future__ import annotations

import pytest

from jetbench import JobConfig, Pipeline, aggregate, run, sinks, sources
from jetbench.core.items import Watermark
from jetbench.pipeline.errors import PipelineError
from jetbench.processors.aggregate_operation import counting, summing, to_list
from jetbench.processors.distinct import distinct
from jetbench.processors.kind_params import KindParamError
from jetbench.processors.rolling_aggregate import rolling_aggregate
from jetbench.processors.sort import sort
from jetbench.testing import verify_processor


def first(x):
    return x[0]


def second(x):
    return x[1]


# -- rolling_aggregate -----------------------------------------------------------------------------


def test_rolling_aggregate_keyed_emits_the_running_result_after_every_item():
    verify_processor(rolling_aggregate(first, summing(second)),
                     input=[("a", 1), ("b", 10), ("a", 2), ("a", 3), ("b", 20)],
                     expected=[("a", 1), ("b", 10), ("a", 3), ("a", 6), ("b", 30)], snapshots=True)


def test_rolling_aggregate_global_and_a_mutable_accumulator_never_changes_an_emitted_result():
    verify_processor(rolling_aggregate(None, to_list()), input=[3, 1, 2],
                     expected=[[3], [3, 1], [3, 1, 2]], snapshots=True)


def test_rolling_aggregate_keeps_timestamps_and_forwards_watermarks():
    verify_processor(rolling_aggregate(str.upper, counting(), timestamped=True),
                     input=[(1, "x"), (2, "y"), Watermark(2), (5, "x")],
                     expected=[(1, ("X", 1)), (2, ("Y", 1)), Watermark(2), (5, ("X", 2))], snapshots=True)


def test_rolling_aggregate_in_a_pipeline_keyed_and_global_batch_and_stream():
    p = Pipeline()
    nums = p.read_from(sources.items(list(range(10))))
    nums.group_by(lambda x: x % 2).rolling_aggregate(aggregate.counting()).write_to(sinks.collect())
    out = run(p)
    assert sorted(out) == sorted([(k, n) for k in (0, 1) for n in range(1, 6)])
    assert [v for k, v in out if k == 0] == [1, 2, 3, 4, 5]  # one key's results in order

    s = Pipeline()
    (s.read_from(sources.test_stream([(0, 5), (10, 1), (20, 7)])).rolling_aggregate(aggregate.max_by(lambda x: x))
     .write_to(sinks.collect()))
    assert run(s) == [5, 5, 7]


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_rolling_aggregate_under_a_guarantee_gives_the_plain_result(guarantee, tmp_path):
    def pipeline():
        p = Pipeline()
        (p.read_from(sources.items(list(range(3000)))).group_by(lambda x: x % 7)
         .rolling_aggregate(aggregate.summing(lambda x: x)).write_to(sinks.collect()))
        return p

    plain = run(pipeline())
    config = JobConfig(guarantee, snapshot_interval_ms=1, snapshot_store=str(tmp_path / "s.sqlite"))
    assert sorted(run(pipeline(), config=config)) == sorted(plain)


def test_rolling_aggregate_arguments_are_checked():
    with pytest.raises(KindParamError, match="rolling_aggregate: key_fn must be callable or None, got 3"):
        rolling_aggregate(3, counting())
    with pytest.raises(KindParamError, match=r"rolling_aggregate\(\): expected an AggregateOperation"):
        rolling_aggregate(None, 3)
    p = Pipeline()
    with pytest.raises(PipelineError, match="call it, aggregate.counting"):
        p.read_from(sources.items([1])).rolling_aggregate(aggregate.counting)


# -- distinct --------------------------------------------------------------------------------------


def test_distinct_emits_the_first_item_of_each_key():
    verify_processor(distinct(), input=[3, 1, 3, 2, 1, 2], expected=[3, 1, 2], snapshots=True)
    verify_processor(distinct(first), input=["ab", "ac", "bd", "ae", "be", "cf"], expected=["ab", "bd", "cf"],
                     snapshots=True)
    verify_processor(distinct(timestamped=True), input=[(1, "a"), (2, "a"), Watermark(2), (3, "b")],
                     expected=[(1, "a"), Watermark(2), (3, "b")], snapshots=True)


def test_distinct_in_a_pipeline_and_by_key_over_several_instances():
    p = Pipeline()
    items = p.read_from(sources.items([i % 13 for i in range(200)]))
    items.distinct().set_local_parallelism(3).write_to(sinks.collect())
    assert sorted(run(p)) == list(range(13))
    g = Pipeline()
    words = g.read_from(sources.items(["apple", "avocado", "banana", "blueberry", "cherry", "apricot"]))
    words.group_by(lambda w: w[0]).distinct().set_local_parallelism(2).write_to(sinks.collect())
    assert sorted(run(g)) == ["apple", "banana", "cherry"]


def test_distinct_and_sort_need_a_batch():
    p = Pipeline()
    stream = p.read_from(sources.generator(100))
    with pytest.raises(PipelineError, match="distinct needs a bounded"):
        stream.distinct()
    with pytest.raises(PipelineError, match="sort needs a bounded"):
        stream.sort()
    with pytest.raises(PipelineError, match=r"group_by\(...\).distinct needs a bounded"):
        stream.group_by(lambda x: x).distinct()


# -- sort ------------------------------------------------------------------------------------------


def test_sort_emits_every_item_in_order_when_the_input_completes():
    verify_processor(sort(), input=[5, 3, 9, 1, 3], expected=[1, 3, 3, 5, 9], snapshots=True)
    verify_processor(sort(second, reverse=True), input=[("a", 1), ("b", 3), ("c", 2), ("d", 3)],
                     expected=[("b", 3), ("d", 3), ("c", 2), ("a", 1)], snapshots=True)  # stable


def test_sort_in_a_pipeline_of_several_sources_is_a_total_order():
    p = Pipeline()
    a = p.read_from(sources.items(list(range(0, 500, 2))))
    b = p.read_from(sources.items(list(range(499, 0, -2))))
    a.merge(b).sort(key=lambda x: -x).write_to(sinks.collect())
    assert run(p) == list(range(499, -1, -1))


def test_sort_arguments_are_checked():
    with pytest.raises(KindParamError, match="sort: key must be callable or None, got 'len'"):
        sort("len")
