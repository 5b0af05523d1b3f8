"""Counting by key after a fused chain: the planner adds the key function to the chain's vertex
as a last map step and stage 1 counts the keys by an identity key (`GroupAggregateSpec`).
The results must be those of the unfused plan and of plain Python, groups in the same order;
the planner must leave every other case as it was."""

from __future__ import annotations

import collections

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from jetbench import ExecutionService, Pipeline, aggregate, sinks, sources
from jetbench.processors.aggregate_operation import _identity
from jetbench.processors.aggregation import AccumulateByKeyP

SETTINGS = settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def parity(x):
    return x % 2 == 0


def mixed_key(x):
    """Keys of mixed types, some equal across types (1 == True == 1.0, 0 == False)."""
    return (True, 1, 1.0, "one", None, 0, False)[x % 7]


def shift(x):
    return x + 3


def keep(x):
    return x % 5 != 0


def count_pipeline(items, key_fn, op=None, parallelism=None):
    p = Pipeline()
    stage = p.read_from(sources.items(items)).map(shift).filter(keep).flat_map(lambda x: [x, x * 2])
    if parallelism is not None:
        stage = stage.set_local_parallelism(parallelism)
    stage.group_by(key_fn).aggregate(op or aggregate.counting()).write_to(sinks.collect())
    return p


def plain_python(items, key_fn):
    counts: dict = {}
    for x in items:
        x = shift(x)
        if keep(x):
            for y in (x, x * 2):
                k = key_fn(y)
                counts[k] = counts.get(k, 0) + 1
    return counts


def stage_one(dag):
    (vertex,) = [v for v in dag.vertices if v.name.endswith("-accumulate")]
    return vertex.supplier()


def test_the_key_joins_the_fused_chain():
    dag = count_pipeline(range(10), parity).to_dag()
    assert any(v.name.startswith("fused(") and v.name.endswith("group-aggregate-key)") for v in dag.vertices)
    acc = stage_one(dag)
    assert isinstance(acc, AccumulateByKeyP) and acc.key_fn is _identity


def test_other_plans_are_left_as_they_were():
    """Not for: an identity key, an operation other than counting, no fusion, another
    parallelism than the chain's, or a chain with another consumer."""
    assert stage_one(count_pipeline(range(10), lambda w: w).to_dag()).key_fn is not _identity  # nothing to save
    assert stage_one(count_pipeline(range(10), parity, aggregate.summing()).to_dag()).key_fn is parity
    assert stage_one(count_pipeline(range(10), parity).to_dag(fuse=False)).key_fn is parity
    p = Pipeline()
    chain = p.read_from(sources.items(range(10))).map(shift)
    chain.group_by(parity).aggregate(aggregate.counting()).set_local_parallelism(2).write_to(sinks.collect())
    assert stage_one(p.to_dag()).key_fn is parity
    p = Pipeline()
    chain = p.read_from(sources.items(range(10))).map(shift)
    chain.group_by(parity).aggregate(aggregate.counting()).write_to(sinks.collect())
    chain.write_to(sinks.collect())
    assert stage_one(p.to_dag()).key_fn is parity


@SETTINGS
@given(items=st.lists(st.integers(-50, 50), max_size=300), threads=st.sampled_from([1, 2]),
       key_fn=st.sampled_from([parity, mixed_key, abs]))
def test_counts_equal_the_unfused_plan_and_plain_python(items, threads, key_fn):
    service = ExecutionService(cooperative_threads=threads)
    fused = service.run(count_pipeline(items, key_fn))
    unfused = service.run(count_pipeline(items, key_fn).to_dag(fuse=False))
    expected = plain_python(items, key_fn)
    assert dict(fused) == dict(unfused) == expected
    if threads == 1:  # one instance per vertex: the groups come out in the order first seen, each
        # under the key object seen first (with two instances, of keys equal across types such
        # as True and 1, the one combine sees first: a race, fused or not)
        assert [k for k, _ in fused] == [k for k, _ in unfused] == list(expected)
        assert collections.Counter(type(k) for k, _ in fused) == collections.Counter(type(k) for k in expected)
