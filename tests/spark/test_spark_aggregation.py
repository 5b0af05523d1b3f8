"""Spark's own aggregation (`jetbench.spark.lowering`) against the local executor: every built-in
operation, keys of every kind, values of mixed types, and the bad inputs of issue 31."""

from __future__ import annotations

import threading

import pytest

import jetbench
from jetbench import JobError, Pipeline, RunnerError, aggregate, sinks, sources
from jetbench.processors.aggregate_operation import FACTORIES
from jetbench.spark import SparkRunner

from .conftest import ship_by_value

ship_by_value(__name__)

ITEMS = [(i * 7919) % 1000 for i in range(3000)]


def int_key(x):
    return x % 13


def str_key(x):
    return f"key-{x % 17}"


def mixed_key(x):
    """Keys equal in Python but not in Spark's types (1, 1.0, True), strs, tuples and floats."""
    return [x % 3, float(x % 3), x % 2 == 0, f"s{x % 4}", (x % 2, "t"), x / 1000][x % 6]


def tuple_key(x):
    return x % 3, f"s{x % 2}", x % 5 == 0


def typed_key(x):
    """Keys of every Spark-typed kind, equal ones across types included (0 == 0.0 == False,
    (1, "a") == (1.0, "a") == (True, "a")), None and tuples holding None."""
    return [x % 3 * 0.5, x % 2 == 0, bytes([x % 5]), None, x % 3, (x % 2, "a"), (float(x % 2), "a"),
            (x % 2 == 1, "a"), (None, x % 2), ()][x % 10]


def mixed_value(x):
    return x if x % 3 else x + 0.5


def near_the_top(x):
    return (2**62) * (x % 2) + x  # partial sums beyond 64 bits: Spark adds them as decimal(38,0)


#: (operation, key function, lowered?) per library operation; a factory missing here fails the walk
SAMPLES = {
    "counting": [(aggregate.counting(), str_key, True), (aggregate.counting(), mixed_key, True),
                 (aggregate.counting(), tuple_key, True), (aggregate.counting(), typed_key, True)],
    "summing": [(aggregate.summing(lambda x: x * 2), int_key, True), (aggregate.summing(near_the_top), str_key, True),
                (aggregate.summing(mixed_value), str_key, True)],
    "averaging": [(aggregate.averaging(), str_key, True), (aggregate.averaging(mixed_value), mixed_key, True),
                  (aggregate.averaging(), tuple_key, True)],
    "min_by": [(aggregate.min_by(lambda x: -x), int_key, True), (aggregate.min_by(mixed_value), mixed_key, True)],
    "max_by": [(aggregate.max_by(), str_key, True)],
    "to_list": [(aggregate.to_list(), int_key, True), (aggregate.to_list(), typed_key, True)],
    "to_set": [(aggregate.to_set(), str_key, True), (aggregate.to_set(), mixed_key, True)],
    "top_n": [(aggregate.top_n(3), str_key, False)],
    "all_of": [(aggregate.all_of(aggregate.counting(), aggregate.summing(), aggregate.to_set(), aggregate.max_by()),
                mixed_key, True),
               (aggregate.all_of(aggregate.counting(), aggregate.top_n(2)), int_key, False)],
}
CASES = [(name, i) for name in SAMPLES for i in range(len(SAMPLES[name]))]


def normalise(result):
    """Results by key; lists sorted (their order across instances is arrival order on both runners)."""
    out = {}
    for key, value in result:
        out[key] = sorted(value, key=repr) if isinstance(value, list) else value
    return out


def group_by(op, key_fn, items=ITEMS):
    p = Pipeline()
    p.read_from(sources.items(items)).group_by(key_fn).aggregate(op).write_to(sinks.collect())
    return p


def test_every_library_operation_has_a_sample():
    assert set(SAMPLES) == set(FACTORIES)


@pytest.mark.parametrize(("name", "i"), CASES, ids=[f"{n}-{i}" for n, i in CASES])
def test_spark_aggregation_equals_the_local_executor(runner, name, i):
    op, key_fn, lowered = SAMPLES[name][i]
    plan = runner.plan(group_by(op, key_fn))
    assert bool(plan.typed) is lowered, plan.explain()
    local = normalise(jetbench.run(group_by(op, key_fn), timeout=60))
    spark = normalise(runner.run(group_by(op, key_fn), timeout=180))
    assert spark == local
    assert {type(k) for k in spark} == {type(k) for k in local} or key_fn in (mixed_key, typed_key)  # 1 or 1.0: who came first


def test_every_typed_key_is_grouped_by_spark(runner):
    """Keys of every typed kind cross as typed columns: none is sent pickled."""
    from jetbench.spark.lowering import encode_key

    assert all(encode_key(typed_key(x)) is not None for x in ITEMS)
    assert all(encode_key(tuple_key(x)) is not None for x in ITEMS)
    assert "Spark aggregation" in runner.explain(group_by(aggregate.counting(), tuple_key), physical=False)


GLOBAL_OPS = {
    "every-operation": aggregate.all_of(aggregate.counting(), aggregate.summing(), aggregate.averaging(),
                                        aggregate.min_by(lambda x: -x), aggregate.max_by(), aggregate.to_list(),
                                        aggregate.to_set()),
    "mixed-values": aggregate.all_of(aggregate.summing(mixed_value), aggregate.min_by(mixed_value),
                                     aggregate.averaging(mixed_value)),
}


def global_aggregate(op, items=ITEMS):
    p = Pipeline()
    p.read_from(sources.items(items)).aggregate(op, name="total").write_to(sinks.collect())
    return p


def normalise_global(result):
    (value,) = result
    return tuple(sorted(part, key=repr) if isinstance(part, list) else part for part in value)


@pytest.mark.parametrize("name", list(GLOBAL_OPS))
def test_a_global_aggregation_is_combined_by_spark(runner, name):
    op = GLOBAL_OPS[name]
    text = runner.explain(global_aggregate(op), physical=False)
    assert "Spark aggregation total-accumulate -> total-combine: agg(all_of(" in text and "(global: one group)" in text
    assert "Python aggregation" not in text
    local = normalise_global(jetbench.run(global_aggregate(op), timeout=60))
    spark = normalise_global(runner.run(global_aggregate(op), timeout=180))
    assert spark == local


def test_a_global_aggregation_of_nothing_is_finish_of_create(spark):
    op = aggregate.all_of(aggregate.counting(), aggregate.summing(), aggregate.to_list(), aggregate.to_set())
    runner = SparkRunner(spark, partitions=3)
    assert runner.plan(global_aggregate(op, [])).typed
    assert runner.run(global_aggregate(op, []), timeout=120) == jetbench.run(global_aggregate(op, []), timeout=60) \
        == [(0, 0, [], set())]


def test_the_dag_wordcount_is_combined_by_spark(runner):
    from jetbench.wordcount import wordcount_dag

    lines = ["the quick brown fox", "jumps over the lazy dog", "ünïcode wörds, the end"] * 40
    plan = runner.plan(wordcount_dag(lines, parallelism=2))
    assert len(plan.typed) == 1
    assert dict(runner.run(wordcount_dag(lines, parallelism=2))) == dict(jetbench.run(wordcount_dag(lines)))


def test_explain_says_which_aggregation_runs_where(runner):
    p = Pipeline()
    src = p.read_from(sources.items(ITEMS))
    src.group_by(str_key).aggregate(aggregate.counting()).write_to(sinks.collect())
    src.group_by(str_key).aggregate(aggregate.top_n(2), name="top").write_to(sinks.collect())
    src.aggregate(aggregate.summing(), name="total").write_to(sinks.collect())
    text = runner.explain(p)
    assert "Spark aggregation" in text and "groupBy(key).agg(sum(count))" in text
    assert "Python aggregation top-combine: top_n has no Spark form here" in text
    assert "Spark aggregation total-accumulate -> total-combine: agg(sum(decimal(38,0))) (global: one group)" in text
    physical = text.split("== Spark physical plan (results) ==")[1]
    assert "HashAggregate" in physical
    off = SparkRunner(runner.session, spark_aggregation=False).explain(p, physical=False)
    assert "Spark aggregation" not in off and "spark_aggregation=False" in off


def test_spark_aggregation_can_be_turned_off(spark):
    p = group_by(aggregate.summing(), str_key)
    off = SparkRunner(spark, spark_aggregation=False)
    assert not off.plan(p).typed
    assert dict(off.run(p)) == dict(SparkRunner(spark).run(group_by(aggregate.summing(), str_key))) \
        == dict(jetbench.run(p))
    assert jetbench.run(group_by(aggregate.counting(), str_key), runner="spark", spark_aggregation=False)


def test_empty_input_gives_no_groups(spark):
    p = group_by(aggregate.counting(), str_key, items=[])
    assert SparkRunner(spark, partitions=3).run(p) == jetbench.run(group_by(aggregate.counting(), str_key, []))


# -- bad input ------------------------------------------------------------------------------------


def test_a_raising_value_function_is_reported_as_the_local_executor_reports_it(runner):
    """The vertex, the error and the user's line, not a Py4J wall. (Aggregation's batch kernels do
    not pinpoint the failing item, on the local executor either: the report says what it says.)"""
    def value(x):
        if x == 613:
            raise ValueError("no 613")
        return x

    def job():
        p = Pipeline()
        p.read_from(sources.items(ITEMS)).group_by(str_key).aggregate(aggregate.summing(value), name="sums") \
            .write_to(sinks.collect())
        return p

    with pytest.raises(JobError) as local:
        jetbench.run(job(), timeout=60)
    with pytest.raises(JobError, match="sums") as info:
        runner.run(job(), timeout=120)
    message = str(info.value)
    assert "ValueError: no 613" in message and 'raise ValueError("no 613")' in message
    assert "Py4J" not in message and "org.apache" not in message and "\tat " not in message
    assert info.value.vertex == local.value.vertex == "sums-accumulate"
    assert message.split(": ", 2)[-1] == str(local.value).split(": ", 2)[-1].replace("<string>", "")  \
        or message.splitlines()[1:] and local.value.user_frame is not None


def divide(x):
    return 10 // (x - 613)


@pytest.mark.parametrize("fuse", [True, False])
def test_a_raising_map_before_the_aggregation_names_the_vertex_and_the_item(runner, fuse):
    p = Pipeline(fuse=fuse)
    p.read_from(sources.items(ITEMS)).map(divide, name="divide").group_by(str_key) \
        .aggregate(aggregate.counting()).write_to(sinks.collect())
    with pytest.raises(JobError, match="divide") as info:
        runner.run(p, timeout=120)
    message = str(info.value)
    assert "divide" in info.value.vertex  # fused(divide, group-aggregate-key) when fused
    assert "ZeroDivisionError" in message and "item: 613" in message and "in divide, " in message
    assert "Py4J" not in message and "org.apache" not in message


def test_an_unpicklable_key_function_is_refused_before_anything_runs(runner):
    lock = threading.Lock()

    def locked_key(x):
        with lock:
            return str(x)

    p = Pipeline()
    p.read_from(sources.items(ITEMS)).group_by(locked_key).aggregate(aggregate.counting(), name="counts") \
        .write_to(sinks.collect())
    with pytest.raises(RunnerError, match="'counts-accumulate'.*cannot be shipped"):
        runner.run(p)


def test_values_that_python_cannot_compare_fail_as_they_do_locally(runner):
    """min_by over numbers in one key and strings in another instance: the local executor's
    TypeError, not a result Spark's ordering would make up."""
    p = Pipeline()
    p.read_from(sources.items([1, "x", 2, "y"] * 50)).group_by(lambda x: "same").aggregate(aggregate.min_by()) \
        .write_to(sinks.collect())
    with pytest.raises(JobError, match="TypeError"):
        jetbench.run(p, timeout=60)
    with pytest.raises(JobError, match="TypeError"):
        runner.run(p, timeout=120)
