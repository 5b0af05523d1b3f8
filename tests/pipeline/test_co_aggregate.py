"""Jet's co-aggregation in the Pipeline API: ``aggregate2``, ``aggregate3`` and
``aggregate_builder`` on stages (global), grouped stages (keyed) and windowed stages, against a
plain Python model on random inputs; under a processing guarantee; and the errors of bad input,
each naming the stage."""

from __future__ import annotations

import operator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from jetbench import JobConfig, Pipeline, WindowResult, aggregate, run, sinks, sources, window
from jetbench.pipeline.errors import PipelineError
from jetbench.processors.co_aggregate import CoAggregate

SETTINGS = settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])

first = operator.itemgetter(0)
second = operator.itemgetter(1)

items = st.lists(st.tuples(st.integers(0, 5), st.integers(-20, 20)), max_size=25)


def ops(n):
    """n operations, each side's own: sum, count, sorted list, sum again ..."""
    made = [aggregate.summing(second), aggregate.counting(), aggregate.to_set(), aggregate.max_by(second)]
    meaning = [lambda xs: sum(x[1] for x in xs), len, set, lambda xs: max(xs, key=second) if xs else None]
    return made[:n], meaning[:n]


def co_aggregated(sides, keyed, n_ways, parallelism, name="co"):
    """The pipeline: the sides co-aggregated with aggregate2 / aggregate3 / aggregate_builder."""
    p = Pipeline()
    stages = [p.read_from(sources.items(side, name=f"in{i}")) for i, side in enumerate(sides)]
    made, _ = ops(len(sides))
    heads = [s.group_by(first) for s in stages] if keyed else stages
    if n_ways == "2":
        out = heads[0].aggregate2(made[0], heads[1], made[1], name=name)
    elif n_ways == "3":
        out = heads[0].aggregate3(made[0], heads[1], made[1], heads[2], made[2], name=name)
    else:
        builder = heads[0].aggregate_builder(made[0])
        assert [builder.add(h, op) for h, op in zip(heads[1:], made[1:], strict=True)] == list(range(1, len(sides)))
        out = builder.build(name=name)
    out.set_local_parallelism(parallelism).write_to(sinks.collect())
    return p


def model(sides, keyed):
    _, meaning = ops(len(sides))
    if not keyed:
        return [tuple(m(side) for m, side in zip(meaning, sides, strict=True))]
    keys = {first(x) for side in sides for x in side}
    return sorted((k, tuple(m([x for x in side if first(x) == k]) for m, side in zip(meaning, sides, strict=True)))
                  for k in keys)


@SETTINGS
@given(data=st.data(), keyed=st.booleans(), n_ways=st.sampled_from(["2", "3", "builder"]),
       parallelism=st.sampled_from([1, 2, 3]))
def test_batch_co_aggregation_equals_the_model(data, keyed, n_ways, parallelism):
    n = {"2": 2, "3": 3}.get(n_ways) or data.draw(st.integers(2, 4))
    sides = [data.draw(items) for _ in range(n)]
    got = run(co_aggregated(sides, keyed, n_ways, parallelism))
    assert sorted(got, key=repr) == sorted(model(sides, keyed), key=repr)


def events(draw_items):
    return sorted(((t, (k, v)) for t, k, v in draw_items), key=first)


timed = st.lists(st.tuples(st.integers(0, 200), st.integers(0, 3), st.integers(-9, 9)), max_size=20)


@SETTINGS
@given(data=st.data(), keyed=st.booleans(), n=st.integers(2, 3),
       wd=st.sampled_from([window.tumbling(50), window.sliding(60, 20), window.session(25)]))
def test_windowed_co_aggregation_equals_the_model(data, keyed, n, wd):
    sides = [events(data.draw(timed)) for _ in range(n)]
    p = Pipeline()
    stages = [p.read_from(sources.test_stream(side)) for side in sides]
    heads = [s.group_by(first) for s in stages] if keyed else stages
    made = [aggregate.summing(second), aggregate.counting(), aggregate.summing(lambda x: x[1] * x[1])][:n]
    builder = heads[0].window(wd).aggregate_builder(made[0])
    for h, op in zip(heads[1:], made[1:], strict=True):
        builder.add(h, op)
    builder.build().write_to(sinks.collect())
    got = sorted(run(p), key=repr)

    # the model: the same window over the tagged, merged events, each side's sum / count / squares
    tagged = sorted((t, (i, k if keyed else None, (k, v))) for i, side in enumerate(sides) for t, (k, v) in side)
    q = Pipeline()
    grouped = q.read_from(sources.test_stream(tagged))
    windowed = (grouped.group_by(lambda x: x[1]) if keyed else grouped).window(wd)
    windowed.aggregate(aggregate.to_list()).write_to(sinks.collect())
    meaning = [lambda xs: sum(x[1] for x in xs), len, lambda xs: sum(x[1] * x[1] for x in xs)]
    expected = sorted((WindowResult(r.start, r.end, r.key,
                                    tuple(meaning[i]([x for s, _, x in r.value if s == i]) for i in range(n)))
                       for r in run(q)), key=repr)
    assert got == expected


def test_keyed_and_windowed_examples_and_the_plan():
    p = Pipeline()
    sales = p.read_from(sources.items([("tea", 3), ("pen", 2), ("tea", 1)]))
    returns = p.read_from(sources.items(["tea", "ink"]))
    stage = sales.group_by(first).aggregate2(aggregate.summing(second), returns.group_by(lambda r: r),
                                            aggregate.counting(), name="sold-and-returned")
    stage.write_to(sinks.collect())
    assert sorted(run(p)) == [("ink", (0, 1)), ("pen", (2, 0)), ("tea", (4, 1))]
    (vertex,) = [v for v in p.to_dag().vertices if v.name == "sold-and-returned"]
    assert isinstance(vertex.supplier, CoAggregate) and vertex.supplier.keyed


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_under_a_guarantee_gives_the_plain_result(guarantee, tmp_path):
    sides = [[(i % 13, i) for i in range(1500)], [(i % 7, -i) for i in range(700)], [(i % 5, 1) for i in range(300)]]
    config = JobConfig(guarantee, snapshot_interval_ms=1, snapshot_store=str(tmp_path / "s.sqlite"))
    for keyed in (True, False):
        assert sorted(run(co_aggregated(sides, keyed, "3", 2), config=config), key=repr) == sorted(model(sides, keyed), key=repr)


def test_bad_input_is_refused_naming_the_stage():
    p = Pipeline()
    a = p.read_from(sources.items([1, 2], name="a"))
    b = p.read_from(sources.items([3], name="b"))
    stream = p.read_from(sources.generator(100))
    with pytest.raises(PipelineError, match=r"stage 'generator': aggregate2 \(without a window\) needs a bounded"):
        a.aggregate2(aggregate.counting(), stream, aggregate.counting())
    with pytest.raises(PipelineError, match=r"stage 'a': aggregate2 of a grouped stage takes another grouped"):
        a.group_by(abs).aggregate2(aggregate.counting(), b, aggregate.counting())
    with pytest.raises(PipelineError, match=r"stage 'a': aggregate3 of a stage not grouped takes a stage, not the "
                                            r"grouped 'b'"):
        a.aggregate3(aggregate.counting(), b, aggregate.counting(), b.group_by(abs), aggregate.counting())
    with pytest.raises(PipelineError, match=r"stage 'b': aggregate\(\): aggregate.counting is a factory"):
        a.aggregate2(aggregate.counting(), b, aggregate.counting)
    with pytest.raises(PipelineError, match=r"stage 'a': aggregate_builder needs another stage"):
        a.aggregate_builder(aggregate.counting()).build()
    with pytest.raises(PipelineError, match=r"stage 'a' has no timestamps: windows need event time"):
        a.window(window.tumbling(10))
    with pytest.raises(PipelineError, match="belong to different pipelines"):
        a.aggregate2(aggregate.counting(), Pipeline().read_from(sources.items([1])), aggregate.counting())
    q = Pipeline()
    timed = q.read_from(sources.test_stream([(0, 1)]))
    with pytest.raises(PipelineError, match="has no timestamps: windows need event time"):
        timed.window(window.tumbling(10)).aggregate2(aggregate.counting(), q.read_from(sources.items([1])),
                                                     aggregate.counting())

