"""Spark's own windows (`jetbench.spark.window_lowering`) against the local executor: tumbling and
sliding, keyed and global, every lowered operation, keys and values of mixed types, what stays in
Python (and explain() saying why), and bad input. Events come in timestamp order, so the local
executor drops none as late and both runners see every window whole."""

from __future__ import annotations

import pytest

import jetbench
from jetbench import JobError, Pipeline, aggregate, sinks, sources, window
from jetbench.processors.window_definition import WindowResult
from jetbench.spark import SparkRunner

from .conftest import ship_by_value

ship_by_value(__name__)

#: (ts, n): negative and fractional timestamps too (frames and windows aligned to 0 either way)
EVENTS = sorted(((i * 7919) % 1200 - 400 + (0.5 if i % 13 == 0 else 0), i) for i in range(600))


def str_key(e):
    return f"k{e[1] % 4}"


def tuple_key(e):
    return e[1] % 2, f"s{e[1] % 3}"


def mixed_key(e):
    """Typed keys equal across types (1, 1.0, True), None, and keys Spark cannot hold (frozenset)."""
    n = e[1]
    return [n % 2, float(n % 2), n % 2 == 1, None, frozenset({n % 3}), ("t", n % 2)][n % 6]


def mixed_value(e):
    return e[1] if e[1] % 5 else e[1] + 0.5  # float sums keep the Python path


def value(e):
    return e[1]


EVERY_OPERATION = aggregate.all_of(aggregate.counting(), aggregate.summing(value), aggregate.averaging(value),
                                   aggregate.min_by(value), aggregate.max_by(value), aggregate.to_list(),
                                   aggregate.to_set())

#: name: (window, key function, operation, lowered?)
CASES = {
    "tumbling-counting": (window.tumbling(100), str_key, aggregate.counting(), True),
    "sliding-every-operation": (window.sliding(200, 50), tuple_key, EVERY_OPERATION, True),
    "global-sliding": (window.sliding(300, 100), None, aggregate.all_of(aggregate.counting(), aggregate.summing(value)),
                       True),
    "mixed-keys-and-values": (window.tumbling(250), mixed_key,
                              aggregate.all_of(aggregate.counting(), aggregate.summing(mixed_value)), True),
    "session-stays-in-python": (window.session(30), str_key, aggregate.counting(), False),
    "top_n-stays-in-python": (window.tumbling(100), str_key, aggregate.top_n(2, value), False),
}


def windowed(w, key_fn, op, events=EVENTS):
    p = Pipeline()
    stamped = p.read_from(sources.items(events)).add_timestamps(lambda e: e[0])
    stage = stamped.group_by(key_fn) if key_fn is not None else stamped
    stage.window(w).aggregate(op, name="windows").write_to(sinks.collect())
    return p


def _canonical(v):
    if isinstance(v, list):
        return sorted(v, key=repr)  # a list's order across instances is arrival order on either runner
    if isinstance(v, tuple):
        return tuple(_canonical(x) for x in v)
    return v


def normalise(results):
    """Windows by (start, end, key): equal keys of different types (1, 1.0, True) are one window."""
    assert all(type(r) is WindowResult for r in results)
    out = {}
    for r in results:
        assert (r.start, r.end, r.key) not in out
        out[(r.start, r.end, r.key)] = _canonical(r.value)
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_spark_windows_equal_the_local_executor(runner, name):
    w, key_fn, op, lowered = CASES[name]
    text = runner.explain(windowed(w, key_fn, op), physical=False)
    assert ("Spark window aggregation windows: groupBy(window(ts, " in text) is lowered, text
    if not lowered:
        assert "Python aggregation windows: " in text
    local = jetbench.run(windowed(w, key_fn, op), timeout=60)
    spark = runner.run(windowed(w, key_fn, op), timeout=180)
    assert normalise(spark) == normalise(local)
    assert len(spark) == len(local)
    assert {type(r.start) for r in spark} == {type(r.start) for r in local}
    if w.kind == "sliding":
        assert {type(r.start) for r in spark} == {int}  # frames of fractional events too


def test_explain_names_the_window_and_why_not(runner):
    text = runner.explain(windowed(window.sliding(200, 50), tuple_key, aggregate.counting()), physical=False)
    assert "groupBy(window(ts, 200 ms, 50 ms), key).agg(sum(count))" in text
    assert "groupBy(window(ts, 100 ms)).agg(sum(count))" in runner.explain(
        windowed(window.tumbling(100), None, aggregate.counting()), physical=False)
    session = runner.explain(windowed(window.session(30), str_key, aggregate.counting()), physical=False)
    assert "Python aggregation windows: session(30) windows have no Spark form here" in session
    top = runner.explain(windowed(window.tumbling(100), str_key, aggregate.top_n(2, value)), physical=False)
    assert "Python aggregation windows: top_n has no Spark form here" in top
    off = SparkRunner(runner.session, spark_aggregation=False)
    text = off.explain(windowed(window.tumbling(100), str_key, aggregate.counting()), physical=False)
    assert "Spark window aggregation" not in text and "spark_aggregation=False" in text


def test_physical_plan_shows_spark_windows_and_one_pass_over_the_events(runner):
    physical = runner.explain(windowed(window.sliding(200, 50), str_key, aggregate.counting()))
    plan = physical.split("== Spark physical plan (results) ==")[1]
    assert "Expand" in plan and "HashAggregate" in plan
    assert plan.count("MapInArrow StageFunction(id") == 1  # the producer stage is not run twice


def test_no_events_no_windows(spark):
    runner = SparkRunner(spark, partitions=3)
    for key_fn in (str_key, None):
        p = windowed(window.sliding(100, 50), key_fn, aggregate.counting(), events=[])
        assert runner.plan(p).typed
        assert runner.run(p, timeout=120) == jetbench.run(windowed(window.sliding(100, 50), key_fn,
                                                                   aggregate.counting(), events=[])) == []


def divide(e):
    return 10 // (e[1] - 300)


def test_a_raising_key_function_names_the_window_vertex(runner):
    p = windowed(window.tumbling(100), divide, aggregate.counting())
    with pytest.raises(JobError, match="ZeroDivisionError") as info:
        runner.run(p, timeout=120)
    assert info.value.vertex == "windows"
    assert "Py4J" not in str(info.value) and "org.apache" not in str(info.value)
