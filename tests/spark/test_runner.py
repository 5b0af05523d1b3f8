"""SparkRunner against the local executor: the bounded cases of the Pipeline suite on both runners."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import threading
import time

import pytest

import jetbench
from jetbench import (
    DAG,
    Edge,
    JobError,
    JobTimeout,
    Pipeline,
    RunnerError,
    WindowResult,
    aggregate,
    sinks,
    sources,
)
from jetbench.aggregate import AggregateOperation
from jetbench.processors import aggregate_by_key, collect_sink, items_source, map_processor
from jetbench.processors.aggregate_operation import counting
from jetbench.spark import SparkRunner, stable_hash
from jetbench.window import session, sliding, tumbling
from jetbench.wordcount import tokenize, wordcount_dag, wordcount_pipeline

from .conftest import ship_by_value

ship_by_value(__name__)

LINES = ["The quick brown fox", "jumps over the lazy dog", "", "The dog sleeps; the fox runs!"] * 50
EVENTS = [(ts, f"k{ts % 3}") for ts in [5, 1, 12, 7, 25, 21, 30, 44, 41, 50, 67, 63, 80, 99, 95]]
MAX_DISORDER = 5


def as_dict(result):
    return dict(result)


def as_multiset(result):
    return collections.Counter(map(repr, result))


def as_set(result):
    return set(result)


def sorted_values(result):
    return {k: sorted(v) for k, v in result}


# -- the cases: (build a fresh job, normalise its result) -------------------------------------------


def wordcount():
    return wordcount_pipeline(LINES)


def wordcount_as_dag():
    return wordcount_dag(LINES)


def wordcount_dag_parallel():
    return wordcount_dag(LINES, parallelism=2)


OPS = {
    "counting": aggregate.counting(),
    "summing": aggregate.summing(lambda x: x * 2),
    "averaging": aggregate.averaging(),
    "min_by": aggregate.min_by(lambda x: -x),
    "max_by": aggregate.max_by(),
    "to_set": aggregate.to_set(),
    "top_n": aggregate.top_n(3),
    "all_of": aggregate.all_of(aggregate.counting(), aggregate.summing()),
    "no_combine": AggregateOperation(create=lambda: 0, accumulate=lambda a, x: a + x),
}
ITEMS = [(i * 7919) % 1000 for i in range(3000)]


def group_by(op_name):
    def build():
        p = Pipeline()
        p.read_from(sources.items(ITEMS)).group_by(lambda x: x % 13).aggregate(OPS[op_name]).write_to(sinks.collect())
        return p

    return build


def group_by_to_list():
    p = Pipeline()
    p.read_from(sources.items(ITEMS)).group_by(lambda x: x % 13).aggregate(aggregate.to_list()).write_to(sinks.collect())
    return p


def group_by_string_keys_to_dict():
    p = Pipeline()
    p.read_from(sources.items(ITEMS)).group_by(lambda x: f"key-{x % 17}").aggregate(aggregate.summing()) \
        .write_to(sinks.to_dict())
    return p


def global_aggregate():
    p = Pipeline()
    p.read_from(sources.items(range(1000))).aggregate(aggregate.summing()).write_to(sinks.collect())
    return p


def global_aggregate_no_combine():
    p = Pipeline()
    p.read_from(sources.items(range(1000))).aggregate(OPS["no_combine"]).write_to(sinks.collect())
    return p


def empty_input():
    p = Pipeline()
    p.read_from(sources.items([])).aggregate(aggregate.counting()).write_to(sinks.collect())
    return p


def merge():
    p = Pipeline()
    left = p.read_from(sources.items(range(10), name="left"))
    right = p.read_from(sources.items(range(100, 110), name="right"))
    left.merge(right).map(lambda x: x + 1).write_to(sinks.collect())
    return p


def chain(fuse=True):
    def build():
        p = Pipeline(fuse=fuse)
        p.read_from(sources.items(range(500))).map(lambda x: x * 3).filter(lambda x: x % 2) \
            .flat_map(lambda x: [x, -x]).map(str).write_to(sinks.collect())
        return p

    return build


def rebalance_and_parallelism():
    p = Pipeline()
    a = p.read_from(sources.items(range(100))).map(lambda x: x * 2)
    b = a.map(lambda x: x + 1).set_local_parallelism(2)
    b.rebalance().map(lambda x: -x).write_to(sinks.collect())
    return p


def rebalance_by_key():
    p = Pipeline()
    p.read_from(sources.items(range(100))).rebalance(lambda x: x % 5).map(lambda x: x * 10).write_to(sinks.collect())
    return p


def hash_join():
    p = Pipeline()
    orders = p.read_from(sources.items([("o1", "ann"), ("o2", "bob"), ("o3", "zed")], name="orders"))
    people = p.read_from(sources.items([("ann", 30), ("bob", 40)], name="people"))
    orders.hash_join(people, lambda o: o[1], lambda person: person[0], how="left").write_to(sinks.collect())
    return p


def co_group():
    p = Pipeline()
    a = p.read_from(sources.items([1, 2, 3, 4], name="a"))
    b = p.read_from(sources.items([10, 30, 50], name="b"))
    a.co_group(b, lambda x: x % 2, lambda y: y // 10 % 2).write_to(sinks.collect())
    return p


def co_group_result(result):
    return {k: (sorted(xs), sorted(ys)) for k, xs, ys in result}


def merge_branches_of_different_stages():
    """A cut (group_by) and an uncut branch from one source meet again: the level rule cuts the
    uncut edge too, so the stages stay acyclic."""
    p = Pipeline()
    src = p.read_from(sources.items(range(30)))
    counts = src.group_by(lambda x: x % 3).aggregate(aggregate.counting())
    src.map(lambda x: ("item", x)).merge(counts).write_to(sinks.collect())
    return p


def windows(size, slide, keyed):
    def build():
        p = Pipeline()
        stage = p.read_from(sources.test_stream(EVENTS, allowed_lag=MAX_DISORDER))
        grouped = stage.group_by(lambda k: k) if keyed else stage
        window = sliding(size, slide) if size != slide else tumbling(size)
        grouped.window(window).aggregate(aggregate.counting()).write_to(sinks.collect())
        return p

    return build


def windowed_co_group():
    p = Pipeline()
    clicks = p.read_from(sources.test_stream([(1, "ann"), (4, "bob"), (12, "ann"), (15, "ann")], allowed_lag=20))
    views = p.read_from(sources.test_stream([(2, ("ann", "home")), (13, ("bob", "cart"))], allowed_lag=20))
    clicks.co_group(views, lambda user: user, lambda view: view[0], window=tumbling(10)).write_to(sinks.collect())
    return p


def windowed_co_group_result(result):
    return {(r.start, r.key): (sorted(r.value[0]), sorted(r.value[1])) for r in result}


def session_windows():
    events = [(1, "a"), (3, "a"), (20, "a"), (2, "b"), (22, "a")]
    p = Pipeline()
    p.read_from(sources.test_stream(events, allowed_lag=18)).group_by(lambda k: k).window(session(5)) \
        .aggregate(aggregate.counting()).write_to(sinks.collect())
    return p


def add_timestamps_then_window():
    p = Pipeline()
    p.read_from(sources.items(range(0, 100, 3))).add_timestamps(lambda x: x) \
        .window(tumbling(25)).aggregate(aggregate.summing()).write_to(sinks.collect())
    return p


def generator_with_count():
    p = Pipeline()
    p.read_from(sources.generator(100_000, count=300, timestamped=False)).map(lambda x: x % 7) \
        .group_by(lambda x: x).aggregate(aggregate.counting()).write_to(sinks.collect())
    return p


class Lookup:
    def get(self, x):
        return x * 10


def map_using_service():
    p = Pipeline()
    p.read_from(sources.items(range(40))).map_using_service(Lookup, lambda s, x: s.get(x)).write_to(sinks.collect())
    return p


def dag_single_stage_aggregate():
    dag = DAG()
    src = dag.new_vertex("src", items_source(ITEMS))
    agg = dag.new_vertex("count", aggregate_by_key(lambda x: x % 10, counting()), local_parallelism=2)
    out = dag.new_vertex("out", collect_sink(), local_parallelism=1)
    dag.edge(Edge.between(src, agg).partitioned(lambda x: x % 10)).edge(Edge.between(agg, out))
    return dag


CASES = {
    "wordcount": (wordcount, as_dict),
    "wordcount-dag": (wordcount_as_dag, as_dict),
    "wordcount-dag-parallel": (wordcount_dag_parallel, as_dict),
    **{f"group-by-{name}": (group_by(name), as_dict) for name in OPS},
    "group-by-to_list": (group_by_to_list, sorted_values),
    "group-by-to_dict": (group_by_string_keys_to_dict, lambda r: r),
    "global-aggregate": (global_aggregate, lambda r: r),
    "global-aggregate-no-combine": (global_aggregate_no_combine, lambda r: r),
    "empty-input": (empty_input, lambda r: r),
    "merge": (merge, as_multiset),
    "chain": (chain(True), as_multiset),
    "chain-unfused": (chain(False), as_multiset),
    "rebalance": (rebalance_and_parallelism, as_multiset),
    "rebalance-by-key": (rebalance_by_key, as_multiset),
    "hash-join": (hash_join, as_multiset),
    "co-group": (co_group, co_group_result),
    "merge-of-stages": (merge_branches_of_different_stages, as_multiset),
    "tumbling": (windows(10, 10, False), as_set),
    "tumbling-keyed": (windows(10, 10, True), as_set),
    "sliding": (windows(20, 5, False), as_set),
    "sliding-keyed": (windows(20, 5, True), as_set),
    "session-windows": (session_windows, as_set),
    "windowed-co-group": (windowed_co_group, windowed_co_group_result),
    "add-timestamps-window": (add_timestamps_then_window, sorted),
    "generator-count": (generator_with_count, as_dict),
    "map-using-service": (map_using_service, as_multiset),
    "dag-single-stage-aggregate": (dag_single_stage_aggregate, as_dict),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_spark_runner_equals_local_runner(runner, case):
    build, normalise = CASES[case]
    local = normalise(jetbench.run(build(), timeout=30))
    spark = normalise(runner.run(build(), timeout=120))
    assert spark == local


def test_run_with_runner_keyword(spark):
    assert dict(jetbench.run(wordcount(), runner="spark")) == dict(jetbench.run(wordcount()))
    assert sorted(jetbench.run(global_aggregate(), runner=SparkRunner(spark, partitions=3))) == [sum(range(1000))]


def test_results_equal_plain_python(runner):
    expected = collections.Counter(w for line in LINES for w in tokenize(line) if w)
    assert dict(runner.run(wordcount())) == expected


def test_stages_and_shuffles(runner):
    plan = runner.plan(wordcount())
    assert [st.mode for st in plan.stages] == ["none", "keyed"]
    first, second = plan.stages
    assert any(name.endswith("accumulate") for name in first.names)  # accumulate before the shuffle
    assert any(name.endswith("combine") for name in second.names)  # combine after it
    # the wordcount DAG partitions words into the accumulator: a local edge, no shuffle of words
    dag_plan = runner.plan(wordcount_dag(LINES))
    assert [st.names for st in dag_plan.stages] == [["source", "tokenize", "accumulate"], ["combine", "sink"]]
    assert "partitioned" in runner.explain(wordcount())


def test_stages_exchange_arrow_batches_through_a_dataframe_shuffle(spark):
    """explain() shows Spark's physical plan: the stages are MapInArrow, the cut edge is Spark's
    own hash-partitioning Exchange on the partition column (no RDD of pickles, no partitionBy)."""
    text = SparkRunner(spark, spark_aggregation=False).explain(wordcount())
    assert "stage 0 [Python, mapInArrow]" in text and "== Spark physical plan (results) ==" in text
    physical = text.split("== Spark physical plan (results) ==")[1]
    assert physical.count("MapInArrow") == 2
    assert "Exchange hashpartitioning(part#" in physical
    assert "PythonRDD" not in physical and "ExistingRDD" not in physical


def test_the_word_count_is_combined_by_sparks_own_aggregation(runner):
    """With Spark's aggregation (the default) the counts cross as typed rows that Spark's
    HashAggregate combines; its accumulators go on to the combining stage by key."""
    text = runner.explain(wordcount())
    assert "Spark aggregation" in text and "sum(count)" in text
    physical = text.split("== Spark physical plan (results) ==")[1]
    assert physical.count("MapInArrow") == 3 and "HashAggregate" in physical
    assert "Exchange hashpartitioning(c" in physical  # Spark's groupBy shuffle on the typed key


def test_the_partition_column_lands_where_python_chose(spark):
    """`spark_partition_keys` predicts Spark's Murmur3 hash partitioning, checked against Spark."""
    from pyspark.sql import functions as F

    from jetbench.spark._hash import spark_int_hash, spark_partition_keys

    row = spark.sql("select hash(cast(0 as int)) a, hash(cast(-7 as int)) b, hash(cast(123456 as int)) c").first()
    assert (row.a, row.b, row.c) == (spark_int_hash(0), spark_int_hash(-7), spark_int_hash(123456))
    for n in (1, 2, 3, 7):
        keys = spark_partition_keys(n)
        df = spark.createDataFrame([(k,) for k in keys], "part int").repartition(n, "part")
        placed = {r.part: r.pid for r in df.select("part", F.spark_partition_id().alias("pid")).collect()}
        assert [placed[k] for k in keys] == list(range(n))


def test_every_partition_of_a_stage_runs_even_without_input(spark):
    """Spark runs a mapInArrow task only where rows are: each shuffle gets one empty row per
    partition, so a stage with nothing to read still runs (a global count of nothing is 0; each
    of 4 partitions' collecting instance reports)."""
    p = Pipeline()
    p.read_from(sources.items([], name="nothing")).group_by(str).aggregate(aggregate.counting()) \
        .write_to(sinks.collect())
    assert SparkRunner(spark, partitions=4).run(p) == jetbench.run(p) == []
    q = Pipeline()
    q.read_from(sources.items([], name="nothing")).aggregate(aggregate.counting()).write_to(sinks.collect())
    assert SparkRunner(spark, partitions=4).run(q) == jetbench.run(q) == [0]


def test_partitions_option(spark):
    plan = SparkRunner(spark, partitions=5).plan(wordcount())
    assert [st.partitions for st in plan.stages] == [5, 5]
    assert dict(SparkRunner(spark, partitions=5).run(wordcount())) == dict(jetbench.run(wordcount()))
    assert SparkRunner(spark).plan(global_aggregate()).stages[-1].partitions == 1  # all-to-one


def test_broadcast_reaches_every_instance_of_every_partition(spark):
    """As on a Jet cluster: a broadcast edge delivers to all partitions x local instances."""
    dag = DAG()
    src = dag.new_vertex("src", items_source(range(6)))
    tag = dag.new_vertex("tag", map_processor(lambda x: (x, "seen")), local_parallelism=2)
    out = dag.new_vertex("out", collect_sink(), local_parallelism=1)
    dag.edge(Edge.between(src, tag).broadcast()).edge(Edge.between(tag, out))
    result = collections.Counter(SparkRunner(spark, partitions=3).run(dag))
    assert result == {(x, "seen"): 3 * 2 for x in range(6)}


def test_sources_split_over_all_partitions(spark):
    """Global processor indices: each item is emitted once over 4 partitions x 2 instances."""
    p = Pipeline()
    p.read_from(sources.items(range(100))).set_local_parallelism(2).map(lambda x: x).write_to(sinks.collect())
    assert sorted(SparkRunner(spark, partitions=4).run(p)) == list(range(100))


# -- unsupported shapes and failures ----------------------------------------------------------------


def test_unbounded_pipeline_source_raises_runner_error(runner):
    p = Pipeline()
    p.read_from(sources.generator(1000)).map(lambda x: x).write_to(sinks.noop())
    with pytest.raises(RunnerError, match="'generator'.*unbounded"):
        runner.run(p)


def test_unbounded_dag_source_raises_runner_error(runner):
    from jetbench.processors.generator_source import generator_source

    dag = DAG()
    src = dag.new_vertex("ticks", generator_source(1000))
    dag.edge(Edge.between(src, dag.new_vertex("out", collect_sink())))
    with pytest.raises(RunnerError, match="'ticks'"):
        runner.run(dag)


def test_unpicklable_function_names_the_vertex(runner):
    lock = threading.Lock()

    def locked(x):
        with lock:
            return x

    p = Pipeline(fuse=False)
    p.read_from(sources.items(range(3))).map(locked, name="locked-map").write_to(sinks.collect())
    with pytest.raises(RunnerError, match="'locked-map'.*pickl"):
        runner.run(p)


def test_unpicklable_source_names_the_vertex(runner):
    p = Pipeline()
    p.read_from(sources.items((x for x in range(3)), name="gen-items")).write_to(sinks.collect())
    with pytest.raises(RunnerError, match="'gen-items'"):
        runner.run(p)


def test_unpicklable_key_function_names_the_edge(runner):
    lock = threading.Lock()
    dag = DAG()
    src = dag.new_vertex("src", items_source(range(3)))
    out = dag.new_vertex("out", collect_sink())
    dag.edge(Edge.between(src, out).partitioned(lambda x: (lock, x)[1]))
    with pytest.raises(RunnerError, match="'src' -> 'out'"):
        runner.run(dag)


def test_processor_failure_is_a_job_error_naming_the_vertex(runner):
    p = Pipeline(fuse=False)
    p.read_from(sources.items(range(10))).map(lambda x: 1 // (x - 5), name="boom").write_to(sinks.collect())
    with pytest.raises(JobError, match="boom") as info:
        runner.run(p)
    assert info.value.vertex == "boom"
    assert "ZeroDivisionError" in str(info.value)


@pytest.mark.slow
def test_timeout_cancels_the_spark_job(runner):
    p = Pipeline()
    p.read_from(sources.items(range(4))).map(lambda x: time.sleep(30) or x).write_to(sinks.collect())
    started = time.monotonic()
    with pytest.raises(JobTimeout):
        runner.run(p, timeout=1.0)
    assert time.monotonic() - started < 20
    assert jetbench.run(global_aggregate(), runner=runner) == [sum(range(1000))]  # the session still works


# -- the stable hash ------------------------------------------------------------------------------


def test_stable_hash_is_the_same_in_every_process():
    keys = ["fox", "", "ünïcode", b"raw", 7, -3, 2.5, None, True, ("a", 1, None), frozenset({"x", "y"})]
    code = (
        "from jetbench.spark import stable_hash; "
        f"print([stable_hash(k) for k in {keys!r}])"
    )
    hashes = {
        subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": seed},
                       capture_output=True, text=True, check=True).stdout
        for seed in ("1", "2", "random")
    }
    assert hashes == {f"{[stable_hash(k) for k in keys]}\n"}
    assert stable_hash(1) == stable_hash(1.0) == stable_hash(True)
    assert all(stable_hash(k) >= 0 for k in keys)


def test_window_results_are_window_results(runner):
    result = runner.run(windows(10, 10, True)())
    assert result and all(isinstance(r, WindowResult) for r in result)


def test_batch_mode_keeps_events_the_local_executor_drops_as_late(runner):
    """Watermarks do not cross Spark shuffles: in batch mode every event counts."""
    events = [(100, "x"), (1000, "x"), (5, "late"), (2000, "x")]
    p = Pipeline()
    p.read_from(sources.test_stream(events)).window(tumbling(100)).aggregate(aggregate.to_list()) \
        .write_to(sinks.collect())
    local = [v for r in jetbench.run(p, timeout=30) for v in r.value]
    spark = [v for r in runner.run(p) for v in r.value]
    assert "late" not in local and sorted(spark) == ["late", "x", "x", "x"]
