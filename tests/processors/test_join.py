"""HashJoinP (broadcast build side on ordinal 1) and CoGroupP (both sides partitioned by key)."""

from __future__ import annotations

import operator

import pytest

from jetbench import DAG, Edge, JetbenchError, Watermark
from jetbench.processors import collect_sink, items_source
from jetbench.processors.co_group import co_group
from jetbench.processors.hash_join import hash_join
from jetbench.testing import verify_processor

first = operator.itemgetter(0)

ORDERS = [("o1", "alice"), ("o2", "bob"), ("o3", "carol"), ("o4", "alice")]
CUSTOMERS = [("alice", "Paris"), ("bob", "Oslo"), ("alice", "Rome"), ("dave", "Lima")]


def left_key(order):
    return order[1]


def expected_join(orders, customers, how):
    out = []
    for o in orders:
        matches = [c for c in customers if c[0] == o[1]]
        out += [(o, c) for c in matches] or ([(o, None)] if how == "left" else [])
    return out


# -- HashJoinP --------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["inner", "left"])
def test_hash_join_verify(how):
    verify_processor(
        hash_join(left_key, first, how=how),
        inputs=[ORDERS, CUSTOMERS],
        priorities=[0, -1],  # the build side (ordinal 1) first
        expected=expected_join(ORDERS, CUSTOMERS, how),
    )


def test_hash_join_many_matches_with_a_refusing_outbox():
    build = [(k % 3, f"r{k}") for k in range(300)]  # 100 matches per key
    probe = [(i, i % 4) for i in range(20)]  # key 3 never matches
    verify_processor(
        hash_join(lambda p: p[1], first, how="left"),
        inputs=[probe, build],
        priorities=[1, 0],
        expected=expected_join(probe, build, "left"),
    )


def test_hash_join_timestamped_probe_side():
    events = [(10, ("o1", "alice")), (20, ("o2", "erin")), Watermark(20), (30, ("o3", "bob"))]
    verify_processor(
        hash_join(left_key, first, how="left", timestamped=True),
        inputs=[events, CUSTOMERS],
        priorities=[0, -1],
        expected=[
            (10, (("o1", "alice"), ("alice", "Paris"))),
            (10, (("o1", "alice"), ("alice", "Rome"))),
            (20, (("o2", "erin"), None)),
            Watermark(20),
            (30, (("o3", "bob"), ("bob", "Oslo"))),
        ],
    )


def test_hash_join_checks_arguments():
    with pytest.raises(JetbenchError, match="how"):
        hash_join(left_key, first, how="outer")
    with pytest.raises(JetbenchError, match="left_key"):
        hash_join(None, first)


def join_dag(orders, customers, how="inner") -> DAG:
    dag = DAG()
    left = dag.new_vertex("orders", items_source(orders))
    right = dag.new_vertex("customers", items_source(customers))
    join = dag.new_vertex("join", hash_join(left_key, first, how=how))
    out = dag.new_vertex("out", collect_sink())
    dag.edge(Edge.between(left, join))
    dag.edge(Edge.from_(right, 0).to(join, 1).broadcast().priority(-1))
    dag.edge(Edge.between(join, out))
    return dag


@pytest.mark.parametrize("how", ["inner", "left"])
def test_hash_join_in_a_job(service, how):
    orders = [(f"o{i}", f"c{i % 50}") for i in range(3000)]
    customers = [(f"c{k}", f"city{k}") for k in range(0, 50, 2)] + [("c0", "second home")]
    result = service.run(join_dag(orders, customers, how), timeout=10)
    assert sorted(result, key=repr) == sorted(expected_join(orders, customers, how), key=repr)


# -- CoGroupP ---------------------------------------------------------------------------------


def test_co_group_verify():
    lefts = [("a", 1), ("b", 2), ("a", 3)]
    rights = [("c", "x"), ("a", "y")]
    verify_processor(
        co_group(first, first),
        inputs=[lefts, rights],
        expected=[
            ("a", [("a", 1), ("a", 3)], [("a", "y")]),  # keys in first-seen order (interleaved input)
            ("c", [], [("c", "x")]),
            ("b", [("b", 2)], []),
        ],
    )


def test_co_group_emits_many_groups_through_a_refusing_outbox():
    lefts = [(k, k) for k in range(100)]
    verify_processor(
        co_group(first, first), inputs=[lefts, []], expected=[(k, [(k, k)], []) for k in range(100)]
    )


def test_co_group_in_a_job(service):
    clicks = [(f"u{i % 37}", i) for i in range(2000)]
    users = [(f"u{k}", f"name{k}") for k in range(0, 60, 3)]
    dag = DAG()
    left = dag.new_vertex("clicks", items_source(clicks))
    right = dag.new_vertex("users", items_source(users))
    grouped = dag.new_vertex("co_group", co_group(first, first))
    out = dag.new_vertex("out", collect_sink())
    dag.edge(Edge.between(left, grouped).partitioned(first))
    dag.edge(Edge.from_(right, 0).to(grouped, 1).partitioned(first))
    dag.edge(Edge.between(grouped, out))
    result = {key: (sorted(ls), sorted(rs)) for key, ls, rs in service.run(dag, timeout=10)}
    keys = {k for k, _ in clicks} | {k for k, _ in users}
    assert result == {
        k: (sorted(c for c in clicks if c[0] == k), sorted(u for u in users if u[0] == k)) for k in keys
    }
