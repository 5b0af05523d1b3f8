"""Spark's own joins (`jetbench.spark.join_lowering`) against the local executor: hash_join (inner
and left) and batch co_group in one Spark run, keys of every Spark-typed kind, keys Python calls
equal across types, keys Spark cannot hold (the Python path), empty sides; explain() saying which
joins ran in Spark and why the others did not; and a raising key function."""

from __future__ import annotations

import enum
from collections import Counter

import pytest

import jetbench
from jetbench import JobError, Pipeline, sinks, sources
from jetbench.spark import SparkRunner
from jetbench.spark import dataframe_sources as spark_sources
from jetbench.spark.join_lowering import join_key
from jetbench.spark.lowering import encode_key

from .conftest import ship_by_value

ship_by_value(__name__)


@pytest.fixture
def runner(spark):
    return SparkRunner(spark, spark_joins=True)


class Level(enum.IntEnum):
    ONE = 1


def mixed_key(x):
    """Keys of every Spark-typed kind, equal ones across types (1 == 1.0 == True, 0 == -0.0 == False,
    (1, "a") == (1.0, "a") == (True, "a")), None, tuples holding None, bytes, non-integral floats; and
    keys Spark cannot hold (the Python path) equal to keys it can (2**70 == 2.0**70, Level.ONE == 1),
    a fresh NaN (equal to nothing), a frozenset and a nested tuple."""
    return [x % 3, float(x % 3), x % 2 == 0, -0.0 if x % 4 == 0 else 0.0, f"s{x % 5}", (x % 2, "a"),
            (float(x % 2), "a"), (x % 2 == 1, "a"), None, (None, x % 2), bytes([x % 3]), x % 3 + 0.5,
            2**70, 2.0**70, Level.ONE, float("nan"), frozenset({x % 2}), ((x % 2,), "n")][x % 18]


def first(pair):
    return pair[0]


def left_items(n, key_fn):
    return [(key_fn(i), f"l{i}") for i in range(n)]


def right_items(n, key_fn):
    return [(key_fn(i * 7 + 3), f"r{i}") for i in range(n)]


#: name: (kind, how, left items, right items)
JOINS = {
    "hj-inner": ("hash_join", "inner", left_items(72, mixed_key), right_items(40, mixed_key)),
    "hj-left": ("hash_join", "left", left_items(72, mixed_key), right_items(20, mixed_key)),
    "hj-empty-build": ("hash_join", "left", left_items(5, mixed_key), []),
    "cg": ("co_group", "", left_items(72, mixed_key), right_items(40, mixed_key)),
    "cg-empty-right": ("co_group", "", left_items(5, mixed_key), []),
}


class Tagged:
    """Tags a join's outputs with its name (one collecting sink for every join of the run)."""

    def __init__(self, name):
        self.name = name

    def __call__(self, x):
        return self.name, x


def every_join():
    p = Pipeline()
    outs = []
    for name, (kind, how, lefts, rights) in JOINS.items():
        left = p.read_from(sources.items(lefts, name=f"{name}-left"))
        right = p.read_from(sources.items(rights, name=f"{name}-right"))
        if kind == "hash_join":
            joined = left.hash_join(right, first, first, how=how, name=name)
        else:
            joined = left.co_group(right, first, first, name=name)
        outs.append(joined.map(Tagged(name), name=f"{name}-tag"))
    merged = outs[0]
    for other in outs[1:]:
        merged = merged.merge(other)
    merged.write_to(sinks.collect())
    return p


def _key(k):
    return "nan" if k != k else k  # a NaN equals nothing, not even itself: each is a group of its own


def by_join(results):
    """Each join's outputs: a hash join's as a multiset of reprs (types kept: 1 is not True), a
    co-group's as {key: [(left items, right items)]}, lists sorted (arrival order is either runner's
    own), equal keys of different types one group."""
    out = {}
    for name, x in results:
        if JOINS[name][0] == "hash_join":
            out.setdefault(name, Counter())[repr(x)] += 1
            continue
        key, lefts, rights = x
        out.setdefault(name, {}).setdefault(_key(key), []).append((sorted(map(repr, lefts)), sorted(map(repr, rights))))
    for name, groups in out.items():
        if JOINS[name][0] == "co_group":
            for key, found in groups.items():
                assert key == "nan" or len(found) == 1, (name, key, found)  # one group per key, across types too
                found.sort()
    return out


def test_typed_keys_are_equal_exactly_when_python_calls_them_equal():
    """join_key's canonical form, then encode_key: two keys Spark holds have equal columns iff they
    are equal in Python (across types too); the others take the Python path (None)."""
    sample = [mixed_key(i) for i in range(36)] + [2**63 - 1, 2**63, -(2**63), 2.0**63, 1e300, float("inf"),
                                                  -float("inf"), "", b"", (), (0,), (False,), (0.5, None)]
    held = [(k, encode_key(join_key(k))) for k in sample]
    for a, ea in held:
        for b, eb in held:
            if ea is not None and eb is not None:
                assert (ea == eb) == (a == b), (a, b)
    assert {repr(k) for k, e in held if e is None} == {
        "1180591620717411303424", "<Level.ONE: 1>", "nan", "frozenset({0})", "((1,), 'n')", str(2**63)}


@pytest.mark.slow
def test_spark_joins_equal_the_local_executor(runner):
    text = runner.explain(every_join(), physical=False)
    for name in JOINS:
        assert f"Spark join {name}: " in text, text
    assert "Python join" not in text
    local = jetbench.run(every_join(), timeout=60)
    spark = runner.run(every_join(), timeout=180)
    assert len(spark) == len(local)
    expected = by_join(local)
    assert by_join(spark) == expected
    assert set(expected) == set(JOINS)  # every join gave output
    assert sum(expected["hj-left"].values()) > 72  # matches, not only (item, None)
    # a key Spark cannot hold met its equal of another type, on the Python path: 2**70 == 2.0**70
    assert any(k.startswith("((1180591620717411303424, ") and "(1.1805916207174113e+21, 'r" in k
               for k in expected["hj-inner"])


def stamped_join():
    p = Pipeline()
    left = p.read_from(sources.items(left_items(10, mixed_key))).add_timestamps(lambda x: 0)
    right = p.read_from(sources.items(right_items(5, mixed_key)))
    left.hash_join(right, first, first, name="stamped").write_to(sinks.collect())
    return p


def test_explain_says_why_a_join_stays_in_python(runner, spark):
    text = runner.explain(stamped_join(), physical=False)
    assert "Python join stamped: its probe items are timestamped" in text
    off = SparkRunner(spark).explain(every_join(), physical=False)  # off by default
    assert "Spark join" not in off and "Python join cg: Spark's joins are off (SparkRunner(spark_joins=True)" in off
    p = Pipeline()
    frame = spark.createDataFrame([(1, "a")], "k long, v string")
    left = p.read_from(spark_sources.dataframe(frame, as_=tuple, name="frame"))
    left.co_group(p.read_from(sources.items([(1, "b")])), first, first, name="cg").write_to(sinks.collect())
    assert "Python join cg: its input from 'frame' is read by Spark, not made in a Python stage" in \
        runner.explain(p, physical=False)


def test_physical_plan_shows_a_spark_join(runner):
    p = Pipeline()
    left = p.read_from(sources.items(left_items(20, mixed_key)))
    left.hash_join(p.read_from(sources.items(right_items(10, mixed_key))), first, first).write_to(sinks.collect())
    physical = runner.explain(p).split("== Spark physical plan (results) ==")[1]
    assert "Join" in physical and "LeftOuter" not in physical  # an inner join, in the JVM


def divide(x):
    return 10 // (int(x[1][1:]) - 5)


def test_a_raising_key_function_names_the_join_vertex(runner):
    p = Pipeline()
    left = p.read_from(sources.items(left_items(10, mixed_key)))
    left.co_group(p.read_from(sources.items(right_items(10, mixed_key))), divide, first, name="grouped") \
        .write_to(sinks.collect())
    with pytest.raises(JobError, match="ZeroDivisionError") as info:
        runner.run(p, timeout=120)
    assert info.value.vertex == "grouped"
    assert "Py4J" not in str(info.value) and "org.apache" not in str(info.value)
