"""Jet's hash joins with JoinClause in the Pipeline API: ``hash_join2``, ``inner_hash_join``,
``inner_hash_join2`` and ``hash_join_builder`` against a plain Python model on random inputs at
several parallelisms; timestamped probe items; under a processing guarantee; ``hash_join`` as it
was; the errors of bad input, each naming the stage."""

from __future__ import annotations

import operator

import pytest
from hash_join_model import hash_join_model
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from jetbench import JobConfig, Pipeline, aggregate, run, sinks, sources, window
from jetbench.pipeline import JoinClause
from jetbench.pipeline.errors import PipelineError
from jetbench.processors.hash_join import HashJoin, MultiHashJoin

SETTINGS = settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])

first = operator.itemgetter(0)
second = operator.itemgetter(1)

CLAUSES = [
    JoinClause.on_keys(first, first).projecting(second),
    JoinClause.join_map_entries(second),
    JoinClause.on_keys(lambda x: x[0] + x[1], first),
    JoinClause.on_keys(lambda x: x[0] % 2, lambda r: r[1] % 2),
]


def model(probe, builds, clauses, how, map_to_output=None):
    return sorted(hash_join_model(probe, builds, clauses, how, map_to_output), key=repr)


def joined(probe, builds, form, how, map_to_output, parallelism):
    p = Pipeline()
    stage = p.read_from(sources.items(probe, name="probe"))
    others = [p.read_from(sources.items(b, name=f"build{i}")) for i, b in enumerate(builds, start=1)]
    clauses = CLAUSES[:len(builds)]
    if form == "2":
        method = stage.hash_join2 if how == "left" else stage.inner_hash_join2
        out = method(others[0], clauses[0], others[1], clauses[1], map_to_output)
    elif form == "inner1":
        out = stage.inner_hash_join(others[0], clauses[0], map_to_output)
    else:
        builder = stage.hash_join_builder()
        assert [builder.add(o, c) for o, c in zip(others, clauses, strict=True)] == list(range(1, len(builds) + 1))
        out = builder.build(map_to_output, how=how)
    out.set_local_parallelism(parallelism).write_to(sinks.collect())
    return p


def odd_or_none(left, *matches):
    return None if left[1] % 2 == 0 else (left, len([m for m in matches if m is not None]))


pairs = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), max_size=15)


@SETTINGS
@given(data=st.data(), form=st.sampled_from(["2", "inner1", "builder"]), how=st.sampled_from(["left", "inner"]),
       mapped=st.booleans(), parallelism=st.sampled_from([1, 2, 3]))
def test_the_joins_equal_the_model(data, form, how, mapped, parallelism):
    n = {"2": 2, "inner1": 1}.get(form) or data.draw(st.integers(1, 4))
    how = "inner" if form == "inner1" else how
    probe = data.draw(pairs)
    builds = [data.draw(pairs) for _ in range(n)]
    fn = odd_or_none if mapped else None
    got = sorted(run(joined(probe, builds, form, how, fn, parallelism)), key=repr)
    assert got == model(probe, builds, CLAUSES[:n], how, fn)


def test_timestamped_probe_items_stay_timestamped_and_window():
    p = Pipeline()
    clicks = p.read_from(sources.test_stream([(0, ("ann", "tea")), (5, ("bob", "ink")), (12, ("ann", "pen"))]))
    people = p.read_from(sources.items([("ann", "Paris"), ("bob", "Oslo")]))
    prices = p.read_from(sources.items([("tea", 4), ("pen", 2)]))
    joined_stage = clicks.inner_hash_join2(people, JoinClause.join_map_entries(first),
                                           prices, JoinClause.join_map_entries(second),
                                           lambda click, city, price: (city, price))
    joined_stage.window(window.tumbling(10)).aggregate(aggregate.summing(second)).write_to(sinks.collect())
    assert sorted((r.start, r.value) for r in run(p)) == [(0, 4), (10, 2)]


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_under_a_guarantee_gives_the_plain_result(guarantee, tmp_path):
    probe = [(i % 17, i % 5) for i in range(2000)]
    builds = [[(k, f"v{k}") for k in range(0, 17, 2)], [(i, i) for i in range(5)], [(k, 0) for k in range(9)]]
    config = JobConfig(guarantee, snapshot_interval_ms=1, snapshot_store=str(tmp_path / "s.sqlite"))
    got = sorted(run(joined(probe, builds, "builder", "left", None, 2), config=config), key=repr)
    assert got == model(probe, builds, CLAUSES[:3], "left")


def test_hash_join_plans_as_it_did_and_the_clause_joins_plan_a_multi_join():
    for method, kind, expected in (("hash_join", HashJoin, [(1, -1)]), ("hash_join2", MultiHashJoin, [(1, 1, None)])):
        p = Pipeline()
        a, b = (p.read_from(sources.items(xs, name=n)) for n, xs in (("a", [1]), ("b", [-1])))
        if method == "hash_join":
            out = a.hash_join(b, abs, abs, how="left", name="join")
        else:
            c = p.read_from(sources.items([2], name="c"))
            out = a.hash_join2(b, JoinClause.on_keys(abs, abs).projecting(abs), c, JoinClause.on_keys(abs, abs),
                               name="join")
        out.write_to(sinks.collect())
        (vertex,) = [v for v in p.to_dag().vertices if v.name == "join"]
        assert type(vertex.supplier) is kind
        assert run(p) == expected


def test_bad_input_is_refused_naming_the_stage():
    p = Pipeline()
    a = p.read_from(sources.items([1, 2], name="a"))
    b = p.read_from(sources.items([3], name="b"))
    stream = p.read_from(sources.generator(100))
    on = JoinClause.on_keys(abs, abs)
    with pytest.raises(PipelineError, match=r"stage 'generator': the build side of hash_join2 needs a bounded"):
        a.hash_join2(b, on, stream, on)
    with pytest.raises(PipelineError, match=r"stage 'a': inner_hash_join joins 'b' by a JoinClause"):
        a.inner_hash_join(b, (abs, abs))
    with pytest.raises(PipelineError, match=r"stage 'a': multi_hash_join: map_to_output must take the item and a "
                                            r"match of each of the 2 build sides \(3 arguments\): <lambda> takes 2"):
        a.hash_join2(b, on, b, on, lambda x, y: x)
    with pytest.raises(PipelineError, match=r"stage 'a': hash_join_builder needs a stage to join with"):
        a.hash_join_builder().build()
    with pytest.raises(PipelineError, match=r"stage 'a': multi_hash_join: how must be one of"):
        builder = a.hash_join_builder()
        builder.add(b, on)
        builder.build(how="right")
    with pytest.raises(PipelineError, match="belong to different pipelines"):
        a.inner_hash_join(Pipeline().read_from(sources.items([1])), on)

