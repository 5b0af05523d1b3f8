"""The SparkRunner runs issue 33's co-aggregations and clause hash joins (on its Python path, as
it runs co_group) with the local executor's results."""

from __future__ import annotations

import pytest

from jetbench import Pipeline, aggregate, run, sinks, sources
from jetbench.pipeline import JoinClause
from jetbench.window import tumbling

from .conftest import ship_by_value

ship_by_value(__name__)


def first(x):
    return x[0]


def second(x):
    return x[1]


def co_aggregations(p):
    a = p.read_from(sources.items([(i % 5, i) for i in range(40)], name="a"))
    b = p.read_from(sources.items([(i % 3, -i) for i in range(20)], name="b"))
    c = p.read_from(sources.items([(k, k) for k in range(7)], name="c"))
    return a.group_by(first).aggregate3(aggregate.summing(second), b.group_by(first), aggregate.counting(),
                                        c.group_by(first), aggregate.to_set())


def joins(p):
    orders = p.read_from(sources.items([(f"o{i}", i % 4, i % 3) for i in range(30)], name="orders"))
    people = p.read_from(sources.items([(0, "ann"), (1, "bob"), (1, "bea")], name="people"))
    prices = p.read_from(sources.items([(0, 5), (2, 7)], name="prices"))
    builder = orders.hash_join_builder()
    builder.add(people, JoinClause.on_keys(second, first).projecting(second))
    builder.add(prices, JoinClause.join_map_entries(lambda o: o[2]))
    return builder.build(lambda o, person, price: None if person == "bea" else (o[0], person, price))


def windowed(p):
    clicks = p.read_from(sources.test_stream([(t, f"u{t % 3}") for t in range(0, 60, 4)], allowed_lag=10))
    views = p.read_from(sources.test_stream([(t, f"u{t % 2}") for t in range(0, 60, 7)], allowed_lag=10))
    return clicks.group_by(lambda u: u).window(tumbling(20)).aggregate2(
        aggregate.counting(), views.group_by(lambda u: u), aggregate.counting())


@pytest.mark.parametrize("build", [co_aggregations, joins, windowed], ids=lambda f: f.__name__)
def test_the_spark_runner_gives_the_local_results(runner, build):
    def pipeline():
        p = Pipeline()
        build(p).write_to(sinks.collect())
        return p

    assert sorted(runner.run(pipeline()), key=repr) == sorted(run(pipeline()), key=repr)
