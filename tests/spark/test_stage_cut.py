"""The cut of a job into Spark stages, and the stage tasks, without Spark: no session, no JVM.

These tests use no ``spark``/``runner`` fixture, so they run (and are collected) without Java;
``test_nothing_here_starts_a_jvm`` checks that in a fresh process. Stage tasks are run through
`simulate`, which moves rows between stages the way the driver's DataFrames do, as lists.
"""

from __future__ import annotations

import collections
import pickle
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark import cloudpickle

from jetbench import DAG, Edge, Pipeline, Routing, RunnerError, sinks, sources
from jetbench.processors import (
    accumulate_by_key,
    aggregate_by_key,
    collect_sink,
    combine_by_key,
    counting,
    global_accumulate,
    global_aggregate,
    global_combine,
    items_source,
    map_processor,
)
from jetbench.spark import dataframe_sinks, dataframe_sources
from jetbench.spark._hash import spark_partition, spark_partition_keys
from jetbench.spark.stage_cut import (
    SparkPlan,
    assign_partitions,
    cut,
    is_stage1_accumulator,
    job_to_dag,
    lower_aggregations,
)
from jetbench.spark.stage_task import CHUNK, RESULT, Outlet, Tagger

from .conftest import ship_by_value

ship_by_value(__name__)

WORDS = ["fox", "dog", "fox", "cat", "dog", "fox"] * 20


def two_stage_count(words=WORDS, partitions_key=len) -> DAG:
    """Jet's two-stage word count: accumulate per partition, shuffle by key, combine."""
    dag = DAG()
    src = dag.new_vertex("source", items_source(words))
    acc = dag.new_vertex("accumulate", accumulate_by_key(str, counting()))
    comb = dag.new_vertex("combine", combine_by_key(counting()))
    out = dag.new_vertex("sink", collect_sink(), local_parallelism=1)
    dag.edge(Edge.between(src, acc).partitioned(str))
    dag.edge(Edge.between(acc, comb).partitioned(lambda kv: kv[0]))
    dag.edge(Edge.between(comb, out))
    return dag


def global_sum() -> DAG:
    dag = DAG()
    src = dag.new_vertex("source", items_source(range(100)))
    acc = dag.new_vertex("accumulate", global_accumulate(counting()))
    comb = dag.new_vertex("combine", global_combine(counting()), local_parallelism=1)
    out = dag.new_vertex("sink", collect_sink(), local_parallelism=1)
    dag.edge(Edge.between(src, acc)).edge(Edge.between(acc, comb).all_to_one()).edge(Edge.between(comb, out))
    return dag


def simulate(plan: SparkPlan, execution: dict | None = None) -> dict[str, list]:
    """Run ``plan``'s stages in this process as the driver wires them in Spark, partitions as
    lists of Arrow batches: one placeholder row per partition for a stage without input, the
    producer's rows of the channel for an ``items`` stage, and for ``keyed``/``multi`` the rows
    moved where Spark's hash partitioning of the ``part`` column sends them (computed here with
    `spark_partition`, the same Murmur3). Each task plan goes through cloudpickle as it does to
    a worker. Returns every collecting vertex's parts."""
    from jetbench.spark.stage_task import run_stage, to_batches

    execution = execution or {"cooperative_threads": 1}
    out: dict[int, list[list[tuple]]] = {}
    parts: dict[str, list] = collections.defaultdict(list)

    def produced(e: Edge) -> list[list[tuple]]:
        channel = plan.channel(e)
        return [[r for r in part if r[2] == channel] for part in out[plan.stage_of[e.source.name].index]]

    for st in plan.stages:
        task = pickle.loads(cloudpickle.dumps(plan.task_plan(st, execution)))
        if st.mode == "none":
            inputs = [[pa.RecordBatch.from_pydict({"id": [p]})] for p in range(st.partitions)]
        else:
            rows: list[list[tuple]]
            if st.mode == "items":
                rows = produced(st.inputs[0])
            else:
                rows = [[] for _ in range(st.partitions)]
                for e in st.inputs:
                    for part in produced(e):
                        for row in part:
                            rows[spark_partition(row[0], st.partitions)].append(row)
            inputs = [list(to_batches(iter(part), max_rows=3)) for part in rows]
        out[st.index] = []
        for p, batches in enumerate(inputs):
            result = [row for batch in to_batches(run_stage(task, p, iter(batches)))
                      for row in zip(*(c.to_pylist() for c in batch.columns), strict=True)]
            out[st.index].append(result)
        for part in out[st.index]:
            for _, _, channel, data in part:
                if channel == RESULT:
                    vertex, value = pickle.loads(data)
                    parts[vertex].append(value)
    return parts


# -- the stage-1 accumulator predicate ---------------------------------------------------------------


def test_stage1_accumulators_are_the_unfinished_accumulating_suppliers():
    assert is_stage1_accumulator(accumulate_by_key(str, counting()))
    assert is_stage1_accumulator(global_accumulate(counting()))
    assert not is_stage1_accumulator(aggregate_by_key(str, counting()))  # single stage: finishes
    assert not is_stage1_accumulator(global_aggregate(counting()))
    assert not is_stage1_accumulator(combine_by_key(counting()))
    assert not is_stage1_accumulator(map_processor(str))
    assert not is_stage1_accumulator(lambda: None)


# -- stages, modes, partitions ---------------------------------------------------------------------


def test_two_stage_aggregation_cuts_once_after_the_accumulator():
    plan = cut(two_stage_count(), threads=1)
    # the partitioned edge into the accumulator stays local: words are not shuffled
    assert [st.names for st in plan.stages] == [["source", "accumulate"], ["combine", "sink"]]
    assert [st.mode for st in plan.stages] == ["none", "keyed"]
    assert [st.level for st in plan.stages] == [0, 1]
    first, second = plan.stages
    assert [(e.source.name, e.destination.name) for e in first.outputs] == [("accumulate", "combine")]
    assert second.inputs == first.outputs
    assert plan.collecting == {"sink"} and second.collecting == ["sink"]
    assert [st.partitions for st in assign_partitions(plan, 4, {}).stages] == [4, 4]
    text = plan.explain()
    assert "stage 1 [Python, mapInArrow]: 4 partition(s), input keyed: combine, sink" in text
    assert "  -> combine (partitioned)" in text
    assert "  <- accumulate (partitioned): rows of pickled items, Spark shuffle repartition(4, part): " \
        "target partition from the edge's key, hashed in Python" in text
    assert "Python stages: user functions and the processors of the DAG run in the Python workers" in text
    assert "Spark aggregation" not in text  # until lower_aggregations decides


def test_spark_aggregates_the_built_in_counting_between_the_two_stages():
    plan = lower_aggregations(assign_partitions(cut(two_stage_count(), threads=1), 4, {}))
    (edge,) = plan.stages[0].outputs
    typed = plan.typed[plan.channel(edge)]
    assert typed.describe() == "groupBy(key).agg(sum(count))"
    text = plan.explain()
    assert "Spark aggregation accumulate -> combine: groupBy(key).agg(sum(count)) in the JVM" in text
    assert "<- accumulate (partitioned): typed rows, Spark groupBy(key).agg(sum(count))" in text
    task = plan.task_plan(plan.stages[0], {"cooperative_threads": 1})
    assert [f.name for f in task.extra] == [f"c{typed.channel}_{n}"
                                            for n in ("k_s", "k_i", "k_f", "k_b", "k_y", "k_t", "g", "a_n")]
    assert plan.task_plan(plan.stages[1], {"cooperative_threads": 1}).extra == []
    off = lower_aggregations(assign_partitions(cut(two_stage_count(), threads=1), 4, {}), enabled=False)
    assert not off.typed and off.python_aggregations == {"combine": "Spark's aggregation is off (spark_aggregation=False)"}


def test_spark_aggregates_a_global_aggregation_as_one_group():
    plan = lower_aggregations(assign_partitions(cut(global_sum(), threads=1), 4, {}))
    (edge,) = plan.stages[0].outputs
    typed = plan.typed[plan.channel(edge)]
    assert not typed.keyed and typed.describe() == "agg(sum(count)) (global: one group)"
    text = plan.explain()
    assert "Spark aggregation accumulate -> combine: agg(sum(count)) (global: one group) in the JVM" in text
    assert "then its accumulators to repartition(1, part) all to partition 0" in text
    assert not plan.python_aggregations


def test_a_partitioned_edge_into_a_single_stage_aggregator_is_a_shuffle():
    dag = DAG()
    src = dag.new_vertex("src", items_source(WORDS))
    agg = dag.new_vertex("count", aggregate_by_key(str, counting()), local_parallelism=2)
    out = dag.new_vertex("out", collect_sink(), local_parallelism=1)
    dag.edge(Edge.between(src, agg).partitioned(str)).edge(Edge.between(agg, out))
    plan = cut(dag, threads=1)
    assert [st.names for st in plan.stages] == [["src"], ["count", "out"]]
    assert [st.mode for st in plan.stages] == ["none", "keyed"]


def test_all_to_one_gives_one_partition():
    plan = assign_partitions(cut(global_sum(), threads=1), 3, {})
    assert [st.names for st in plan.stages] == [["source", "accumulate"], ["combine", "sink"]]
    assert [st.partitions for st in plan.stages] == [3, 1]


def test_a_unicast_edge_between_levels_feeds_items_without_a_shuffle():
    """A cut branch and an uncut branch from one source meet again: the level rule cuts the
    uncut edge too (stages stay acyclic), and a stage whose one input is that unicast edge keeps
    its producer's partitions."""
    dag = DAG()
    src = dag.new_vertex("src", items_source(range(30)))
    agg = dag.new_vertex("count", aggregate_by_key(lambda x: x % 3, counting()))
    tag = dag.new_vertex("tag", map_processor(lambda x: ("item", x)))
    out = dag.new_vertex("out", collect_sink(), local_parallelism=1)
    dag.edge(Edge.between(src, agg).partitioned(lambda x: x % 3))
    dag.edge(Edge.from_(src, 1).to(tag))
    dag.edge(Edge.between(agg, out)).edge(Edge.from_(tag).to(out, 1))
    plan = assign_partitions(cut(dag, threads=1), 2, {})
    assert [st.names for st in plan.stages] == [["src", "tag"], ["count", "out"]]
    assert [st.mode for st in plan.stages] == ["none", "multi"]
    second = plan.stages[1]
    assert sorted((e.source.name, e.destination.name) for e in second.inputs) == [("src", "count"), ("tag", "out")]

    chain = DAG()
    a = chain.new_vertex("a", items_source(range(10)))
    b = chain.new_vertex("b", aggregate_by_key(lambda x: x % 2, counting()))
    c = chain.new_vertex("c", map_processor(str))
    chain.edge(Edge.between(a, b).partitioned(lambda x: x % 2)).edge(Edge.between(b, c).isolated())
    chain.edge(Edge.between(c, chain.new_vertex("out", collect_sink(), local_parallelism=1)).all_to_one())
    plan = assign_partitions(cut(chain, threads=1), 5, {})
    assert [st.mode for st in plan.stages] == ["none", "keyed", "keyed"]
    assert [st.partitions for st in plan.stages] == [5, 5, 1]


def test_a_parquet_source_feeds_its_stage_directly(tmp_path):
    pq.write_table(pa.table({"word": WORDS}), tmp_path / "words.parquet", row_group_size=30)
    p = Pipeline()
    p.read_from(dataframe_sources.parquet(tmp_path, as_="value", name="words")) \
        .map(str.upper).write_to(dataframe_sinks.dataframe())
    plan = cut(job_to_dag(p), threads=1)
    assert list(plan.arrow_sources) == ["words"] and list(plan.spark_sinks) == ["spark.dataframe"]
    (st,) = plan.stages  # neither the source nor the Spark sink runs in a stage
    assert st.mode == "arrow" and st.outputs[0].destination.name == "spark.dataframe"
    assert assign_partitions(plan, 8, {"words": 3}).stages[0].partitions == 3
    assert plan.task_plan(st, {}).reader is not None
    assert plan.tagger(st.outputs[0]) is None  # the sink reads the stage's items as they are


# -- the task side, run without Spark ----------------------------------------------------------------


def test_tagger_sends_each_key_to_one_partition_and_broadcasts_to_all():
    keyed = pickle.loads(pickle.dumps(Tagger(1, Routing.PARTITIONED, str, 4)))
    routed = keyed.route(WORDS)
    assert sorted(x for xs in routed.values() for x in xs) == sorted(WORDS)
    targets = collections.defaultdict(set)
    for target, words in routed.items():
        for word in words:
            targets[word].add(target)
    assert all(len(t) == 1 and 0 <= min(t) < 4 for t in targets.values())
    assert Tagger(0, Routing.BROADCAST, None, 3).route(["x"]) == {0: ["x"], 1: ["x"], 2: ["x"]}
    assert Tagger(0, Routing.ALL_TO_ONE, None, 3).route(["x", "y"]) == {0: ["x", "y"]}
    assert Tagger(0, Routing.UNICAST, None, 3).route(list("abcd"), start=2) == {2: ["a", "d"], 0: ["b"], 1: ["c"]}


def test_an_outlet_writes_rows_that_spark_hash_partitioning_delivers_to_the_chosen_partition():
    outlet = Outlet(7, Tagger(2, Routing.PARTITIONED, str, 3))
    words = [f"w{i}" for i in range(4 * CHUNK)]
    outlet.add(words)
    rows = list(outlet.rows())
    routed = Tagger(2, Routing.PARTITIONED, str, 3).route(words)
    got: dict[int, list] = collections.defaultdict(list)
    for part, input_id, channel, data in rows:
        assert (input_id, channel) == (2, 7) and part in spark_partition_keys(3)
        got[spark_partition(part, 3)] += pickle.loads(data)
    assert dict(got) == routed
    assert len(rows) > len(routed)  # a target's items are cut into chunks of CHUNK
    assert list(outlet.rows()) == []  # rows are handed out once
    untagged = Outlet(1, None)
    untagged.add(["a", "b"])
    assert [(p, i, c, pickle.loads(d)) for p, i, c, d in untagged.rows()] == [(0, 0, 1, ["a", "b"])]


def test_partition_keys_land_in_their_partition_by_spark_hash():
    for n in (1, 2, 3, 8, 200):
        assert [spark_partition(k, n) for k in spark_partition_keys(n)] == list(range(n))


def test_the_stages_run_as_tasks_give_the_local_result():
    for partitions in (1, 3):
        plan = assign_partitions(cut(two_stage_count(), threads=1), partitions, {})
        (parts,) = simulate(plan).values()
        assert dict(x for part in parts for x in part) == collections.Counter(WORDS)
    plan = assign_partitions(cut(global_sum(), threads=1), 3, {})
    assert simulate(plan) == {"sink": [[100]]}


def test_sources_split_over_every_instance_of_every_partition():
    dag = DAG()
    src = dag.new_vertex("src", items_source(range(100)), local_parallelism=2)
    dag.edge(Edge.between(src, dag.new_vertex("out", collect_sink(), local_parallelism=1)))
    plan = assign_partitions(cut(dag, threads=1), 4, {})
    parts = simulate(plan)["out"]
    assert len(parts) == 4 and sorted(x for part in parts for x in part) == list(range(100))


# -- what Spark cannot run is refused before anything runs -------------------------------------------


def test_unbounded_sources_are_refused():
    p = Pipeline()
    p.read_from(sources.generator(1000)).write_to(sinks.noop())
    with pytest.raises(RunnerError, match="'generator'.*unbounded"):
        job_to_dag(p)


def test_unpicklable_suppliers_and_key_functions_are_refused():
    p = Pipeline()
    p.read_from(sources.items((x for x in range(3)), name="gen-items")).write_to(sinks.collect())
    with pytest.raises(RunnerError, match="'gen-items'.*shipped to Spark workers"):
        cut(job_to_dag(p), threads=1)
    lock_holder = [threading.Lock()]
    dag = DAG()
    src = dag.new_vertex("src", items_source(range(3)))
    dag.edge(Edge.between(src, dag.new_vertex("out", collect_sink())).partitioned(lambda x: (lock_holder, x)[1]))
    with pytest.raises(RunnerError, match="'src' -> 'out'"):
        cut(dag, threads=1)


def test_a_spark_sink_with_outbound_edges_is_refused():
    dag = DAG()
    src = dag.new_vertex("src", items_source(range(3)))
    sink = dag.new_vertex("frame", dataframe_sinks.dataframe().supplier)
    dag.edge(Edge.between(src, sink)).edge(Edge.between(sink, dag.new_vertex("out", collect_sink())))
    with pytest.raises(RunnerError, match="'frame'.*outbound"):
        cut(dag, threads=1)


def test_nothing_here_starts_a_jvm():
    code = (
        "from pyspark import SparkContext\n"
        "from jetbench.spark.stage_cut import assign_partitions, cut\n"
        "import tests.spark.test_stage_cut as t\n"
        "plan = assign_partitions(cut(t.two_stage_count(), threads=1), 2, {})\n"
        "t.simulate(plan)\n"
        "assert SparkContext._gateway is None and SparkContext._active_spark_context is None\n"
        "print('no jvm')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parents[2])
    assert done.stdout.strip() == "no jvm", done.stderr
