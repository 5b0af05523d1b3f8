"""Items cached in Spark (`jetbench.spark.items_frame`): read in order, by the local executor and
by SparkRunner's tasks, without the items inside any task's plan; bad input is a clear error."""

from __future__ import annotations

import random

import pytest
from pyspark import cloudpickle

import jetbench
from jetbench import JetbenchError, Pipeline, aggregate, sinks, sources
from jetbench.nexmark.source import from_events  # a timestamped source over an in-memory list
from jetbench.spark import SparkRunner
from jetbench.spark.items_frame import cached_items
from jetbench.window import tumbling

from .conftest import ship_by_value

ship_by_value(__name__)

ITEMS = [(i, f"payload-{i:05d}-" + "x" * 40) for i in range(3000)]  # ~200 kB pickled


def collect(source, **config):
    p = Pipeline()
    p.read_from(source).write_to(sinks.collect())
    return jetbench.run(p, timeout=60, progress=False, **config)


def first_of(item):
    return item[0]


@pytest.fixture(scope="module")
def frame(spark):
    frame = cached_items(ITEMS, partitions=3, chunk=128, session=spark)
    yield frame
    frame.release()


def test_partitions_hold_contiguous_runs_in_order(frame):
    runs = [[item for blob in part for item in cloudpickle.loads(blob[0])] for part in frame.df.rdd.glom().collect()]
    assert len(runs) == 3 and all(runs)
    assert [item for run in runs for item in run] == ITEMS
    assert frame.count == len(ITEMS) and frame.df.is_cached


def test_local_executor_reads_the_items_in_order(frame):
    assert collect(frame.source()) == ITEMS


def test_spark_tasks_read_the_cache_not_a_pickled_list(frame, runner):
    p = Pipeline()
    p.read_from(frame.source("cached")).map(first_of).write_to(sinks.collect())
    plan = runner.plan(p)
    assert "cached" in plan.arrow_sources  # read by Spark, not run inside a stage
    items_bytes = len(cloudpickle.dumps(ITEMS))
    for st in plan.stages:
        assert len(cloudpickle.dumps(plan.task_plan(st, runner.execution))) < items_bytes / 10
    assert sorted(runner.run(p)) == [i for i, _ in ITEMS]
    # the same list as an in-memory source: its whole list travels in its stage's plan
    q = Pipeline()
    q.read_from(sources.items(ITEMS)).map(first_of).write_to(sinks.collect())
    in_memory = runner.plan(q)
    assert max(len(cloudpickle.dumps(in_memory.task_plan(st, runner.execution))) for st in in_memory.stages) > items_bytes


def test_timestamped_items_feed_event_time_windows_as_the_list_does(spark, runner):
    """Also: the frame says how many items it holds, so a job this small keeps its window in Python
    (spark_window_min_items); with 0 Spark makes the windows; the same windows either way."""
    pairs = [(i * 7, i % 5) for i in range(2000)]
    frame = cached_items(pairs, timestamped=True, chunk=100, session=spark)
    try:
        assert frame.ordered
        source = frame.source("events")
        assert source.timestamped and source.ordered

        def windowed(src):
            p = Pipeline()
            p.read_from(src).group_by(lambda x: x).window(tumbling(1000)).aggregate(aggregate.counting()) \
                .write_to(sinks.collect())
            return p

        expected = jetbench.run(windowed(from_events(pairs)), progress=False)
        key = repr
        assert sorted(runner.run(windowed(source)), key=key) == sorted(expected, key=key)
        assert "its job reads 2,000 items, fewer than 1,000,000 (spark_window_min_items)" in \
            runner.explain(windowed(source), physical=False)
        lowering = SparkRunner(spark, spark_window_min_items=0)
        assert "Spark window aggregation" in lowering.explain(windowed(source), physical=False)
        assert sorted(lowering.run(windowed(source)), key=key) == sorted(expected, key=key)
        assert sorted(jetbench.run(windowed(frame.source("events")), progress=False), key=key) == sorted(expected,
                                                                                                          key=key)
    finally:
        frame.release()
    assert not frame.df.is_cached


def test_out_of_order_timestamps_are_not_called_ordered(spark):
    pairs = [(t, t) for t in range(50)]
    random.Random(3).shuffle(pairs)
    frame = cached_items(pairs, timestamped=True, session=spark)
    try:
        assert not frame.ordered and not frame.source().ordered
    finally:
        frame.release()


@pytest.mark.parametrize("kwargs, message", [
    ({"chunk": 0}, "chunk must be an int >= 1, got 0"),
    ({"chunk": True}, "chunk must be an int >= 1, got True"),
    ({"partitions": 0}, "partitions must be an int >= 1, got 0"),
])
def test_bad_settings(spark, kwargs, message):
    with pytest.raises(JetbenchError, match=message):
        cached_items([1, 2], session=spark, **kwargs)


def test_timestamped_items_must_be_pairs(spark):
    with pytest.raises(JetbenchError, match=r"\(timestamp, item\) pairs; item 1 is 'b'"):
        cached_items([(1, "a"), "b"], timestamped=True, session=spark)
