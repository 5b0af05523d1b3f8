"""DAG model: the fluent Edge API, insertion order and `DAG.validate()` errors."""

from __future__ import annotations

import pytest

import jetbench
from jetbench import DAG, DagError, Edge, Routing, Vertex
from jetbench.core import DEFAULT_QUEUE_SIZE
from jetbench.processors import collect_sink, items_source, map_processor, noop_sink


def _three() -> tuple[DAG, Vertex, Vertex, Vertex]:
    dag = DAG()
    a = dag.new_vertex("a", items_source(range(3)))
    b = dag.new_vertex("b", map_processor(str))
    c = dag.new_vertex("c", collect_sink())
    return dag, a, b, c


# -- fluent Edge API ----------------------------------------------------------------------------


def test_edge_between_defaults():
    _, a, b, _ = _three()
    e = Edge.between(a, b)
    assert (e.source, e.source_ordinal, e.destination, e.destination_ordinal) == (a, 0, b, 0)
    assert e.routing is Routing.UNICAST
    assert e.key_fn is None
    assert e.edge_priority == 0
    assert e.edge_queue_size == DEFAULT_QUEUE_SIZE == 1024


def test_edge_from_to_ordinals():
    _, a, b, _ = _three()
    e = Edge.from_(a, 1).to(b, 2)
    assert (e.source, e.source_ordinal, e.destination, e.destination_ordinal) == (a, 1, b, 2)
    assert "'a'[1]" in repr(e) and "'b'[2]" in repr(e)
    unfinished = Edge.from_(a)
    assert unfinished.destination is None and unfinished.source_ordinal == 0


def test_edge_fluent_configuration_returns_same_edge():
    _, a, b, _ = _three()

    def key(x):
        return x % 3

    e = Edge.between(a, b)
    assert e.partitioned(key) is e
    assert e.routing is Routing.PARTITIONED and e.key_fn is key
    assert e.broadcast() is e
    assert e.routing is Routing.BROADCAST and e.key_fn is None
    assert e.isolated() is e and e.routing is Routing.ISOLATED
    assert e.all_to_one() is e and e.routing is Routing.ALL_TO_ONE
    assert e.unicast() is e and e.routing is Routing.UNICAST
    assert e.priority(-5) is e and e.edge_priority == -5
    assert e.queue_size(7) is e and e.edge_queue_size == 7
    chained = Edge.from_(a, 1).to(b, 0).partitioned(key).priority(2).queue_size(16)
    assert (chained.routing, chained.edge_priority, chained.edge_queue_size) == (
        Routing.PARTITIONED,
        2,
        16,
    )


@pytest.mark.parametrize(
    "bad",
    [
        lambda a, b: Edge.between(a, b).queue_size(0),
        lambda a, b: Edge.between(a, b).queue_size(-1),
        lambda a, b: Edge.between(a, b).queue_size(True),
        lambda a, b: Edge.between(a, b).queue_size(2.0),
        lambda a, b: Edge.between(a, b).priority("high"),
        lambda a, b: Edge.between(a, b).partitioned("not callable"),
        lambda a, b: Edge.from_(a, -1),
        lambda a, b: Edge.from_(a, 0).to(b, -2),
        lambda a, b: Edge.from_(a, 1.5),
        lambda a, b: Edge.between("a", b),
        lambda a, b: Edge.between(a, object()),
    ],
)
def test_edge_api_rejects_bad_arguments(bad):
    _, a, b, _ = _three()
    with pytest.raises(DagError):
        bad(a, b)


def test_dag_edge_requires_destination_and_edge_type():
    dag, a, _, _ = _three()
    with pytest.raises(DagError, match="destination missing"):
        dag.edge(Edge.from_(a, 0))
    with pytest.raises(DagError):
        dag.edge("a -> b")


def test_vertices_and_edges_keep_insertion_order():
    dag = DAG()
    names = ["zeta", "alpha", "mid", "beta"]
    vs = [dag.new_vertex(n, noop_sink()) for n in names]
    assert [v.name for v in dag.vertices] == names
    assert dag.vertex("mid") is vs[2]
    e1 = Edge.between(vs[0], vs[3])
    e2 = Edge.between(vs[0], vs[1]).priority(1)
    e1b = Edge.from_(vs[0], 1).to(vs[2])
    # DAG.edge() returns the DAG for chaining
    assert dag.edge(e1).edge(e2).edge(e1b) is dag
    assert dag.edges == [e1, e2, e1b]
    # the properties return copies
    dag.vertices.clear()
    dag.edges.clear()
    assert len(dag.vertices) == 4 and len(dag.edges) == 3
    assert dag.inbound_edges(vs[3]) == [e1]
    assert dag.outbound_edges(vs[0]) == [e1, e2, e1b]
    assert [v.name for v in dag.topological_order()][0] == "zeta"
    with pytest.raises(DagError, match="nope"):
        dag.vertex("nope")


def test_valid_dag_validates():
    dag, a, b, c = _three()
    dag.edge(Edge.between(a, b)).edge(Edge.between(b, c))
    assert dag.validate() is None
    assert [v.name for v in dag.topological_order()] == ["a", "b", "c"]


# -- validate() errors --------------------------------------------------------------------------


def test_cycle_is_rejected_naming_vertices():
    dag, a, b, c = _three()
    dag.edge(Edge.between(a, b)).edge(Edge.between(b, c)).edge(Edge.from_(c).to(b, 1))
    with pytest.raises(DagError, match="cycle") as info:
        dag.validate()
    assert "'b'" in str(info.value) and "'c'" in str(info.value)
    assert "'a'" not in str(info.value)


def test_self_loop_is_a_cycle():
    dag, a, b, _ = _three()
    dag.edge(Edge.between(a, b)).edge(Edge.from_(b, 0).to(b, 1))
    with pytest.raises(DagError, match="cycle") as info:
        dag.validate()
    assert "'b'" in str(info.value)


def test_duplicate_vertex_names_are_rejected():
    dag, *_ = _three()
    with pytest.raises(DagError, match="duplicate vertex name 'b'"):
        dag.new_vertex("b", noop_sink())
    with pytest.raises(DagError, match="duplicate vertex name 'c'"):
        dag.add_vertex(Vertex("c", noop_sink()))
    assert [v.name for v in dag.vertices] == ["a", "b", "c"]


def test_inbound_ordinal_gap_names_vertex():
    dag, a, b, c = _three()
    dag.edge(Edge.between(a, c)).edge(Edge.from_(b).to(c, 2)).edge(Edge.from_(a, 1).to(b))
    with pytest.raises(DagError, match="inbound") as info:
        dag.validate()
    assert "'c'" in str(info.value) and "[0, 2]" in str(info.value)


def test_inbound_ordinals_must_start_at_zero():
    dag, a, b, _ = _three()
    dag.edge(Edge.from_(a).to(b, 1))
    with pytest.raises(DagError, match="vertex 'b': inbound ordinals"):
        dag.validate()


def test_outbound_ordinal_gap_names_vertex():
    dag, a, b, c = _three()
    dag.edge(Edge.from_(a, 0).to(b)).edge(Edge.from_(a, 2).to(c))
    with pytest.raises(DagError, match="vertex 'a': outbound ordinals"):
        dag.validate()


def test_duplicate_inbound_ordinal_only():
    dag = DAG()
    a = dag.new_vertex("a", items_source([1]))
    b = dag.new_vertex("b", items_source([2]))
    c = dag.new_vertex("c", collect_sink())
    dag.edge(Edge.between(a, c)).edge(Edge.between(b, c))
    with pytest.raises(DagError, match="vertex 'c': duplicate inbound ordinal 0"):
        dag.validate()


def test_duplicate_outbound_ordinal_only():
    dag = DAG()
    a = dag.new_vertex("a", items_source([1]))
    b = dag.new_vertex("b", collect_sink())
    c = dag.new_vertex("c", collect_sink())
    dag.edge(Edge.between(a, b)).edge(Edge.between(a, c))
    with pytest.raises(DagError, match="vertex 'a': duplicate outbound ordinal 0"):
        dag.validate()


def test_edge_to_vertex_of_another_dag_is_rejected():
    dag, a, _, _ = _three()
    other = DAG()
    stranger = other.new_vertex("stranger", collect_sink())
    with pytest.raises(DagError, match="'stranger' is not in this DAG"):
        dag.edge(Edge.between(a, stranger))
    # same name as a vertex of this DAG but a different object
    twin = other.new_vertex("b", collect_sink())
    with pytest.raises(DagError, match="'b' is not in this DAG"):
        dag.edge(Edge.between(a, twin))
    with pytest.raises(DagError, match="'a' is not in this DAG"):
        other.edge(Edge.between(a, twin))
    assert dag.edges == [] and other.edges == []


def test_validate_catches_foreign_vertex_smuggled_in():
    """validate() re-checks edge ends even if the edge list was tampered with."""
    dag, a, _, _ = _three()
    other = DAG()
    stranger = other.new_vertex("stranger", collect_sink())
    dag._edges.append(Edge.between(a, stranger))
    with pytest.raises(DagError, match="'stranger' is not in this DAG"):
        dag.validate()


@pytest.mark.parametrize("lp", [0, -1])
def test_parallelism_below_one_names_vertex(lp):
    dag, a, b, _ = _three()
    dag.vertex("b").local_parallelism = lp
    dag.edge(Edge.between(a, b))
    with pytest.raises(DagError, match=f"vertex 'b': local_parallelism must be >= 1, got {lp}"):
        dag.validate()
    dag2 = DAG()
    dag2.new_vertex("x", noop_sink(), local_parallelism=lp)
    with pytest.raises(DagError, match="'x'"):
        dag2.validate()


@pytest.mark.parametrize("bad", [1.0, "2", True])
def test_parallelism_must_be_int(bad):
    with pytest.raises(DagError, match="'v'"):
        Vertex("v", noop_sink(), bad)


def test_vertex_name_and_supplier_are_checked():
    with pytest.raises(DagError):
        Vertex("", noop_sink())
    with pytest.raises(DagError, match="'v'"):
        Vertex("v", "not callable")


def test_isolated_edge_needs_consumer_parallelism_at_least_producer():
    dag = DAG()
    up = dag.new_vertex("up", items_source(range(4)), local_parallelism=3)
    down = dag.new_vertex("down", collect_sink(), local_parallelism=2)
    dag.edge(Edge.between(up, down).isolated())
    with pytest.raises(DagError, match="isolated") as info:
        dag.validate()
    msg = str(info.value)
    assert "'up'" in msg and "'down'" in msg and "(2)" in msg and "(3)" in msg
    down.local_parallelism = 3
    dag.validate()
    down.local_parallelism = 6
    dag.validate()


def test_isolated_check_uses_default_parallelism():
    dag = DAG()
    up = dag.new_vertex("up", items_source(range(4)), local_parallelism=3)
    down = dag.new_vertex("down", collect_sink())  # default parallelism
    dag.edge(Edge.between(up, down).isolated())
    dag.validate()  # unknown default: cannot tell yet
    dag.validate(default_parallelism=4)
    with pytest.raises(DagError, match="isolated"):
        dag.validate(default_parallelism=2)


# -- validation on submit (runs with 1 and 2 cooperative threads) ------------------------------


def test_submit_rejects_invalid_dag_synchronously(service):
    dag, a, b, c = _three()
    dag.edge(Edge.between(a, b)).edge(Edge.between(b, c)).edge(Edge.from_(c).to(b, 1))
    with pytest.raises(DagError, match="cycle"):
        service.submit(dag)


def test_submit_checks_isolated_with_service_parallelism(service, threads):
    dag = DAG()
    up = dag.new_vertex("up", items_source(range(10)), local_parallelism=2)
    down = dag.new_vertex("down", collect_sink())  # LP = cooperative threads
    dag.edge(Edge.between(up, down).isolated())
    if threads < 2:
        with pytest.raises(DagError, match="isolated"):
            service.submit(dag)
    else:
        assert sorted(service.submit(dag).join(timeout=10)) == list(range(10))


def test_submit_rejects_non_processor_supplier(service):
    dag = DAG()
    dag.new_vertex("weird", lambda: object())
    with pytest.raises(DagError, match="'weird'"):
        service.submit(dag)


def test_run_helper_and_empty_dag(threads):
    dag, a, b, c = _three()
    dag.edge(Edge.between(a, b)).edge(Edge.between(b, c))
    assert sorted(jetbench.run(dag, timeout=10, cooperative_threads=threads)) == ["0", "1", "2"]
    assert jetbench.run(DAG(), timeout=10, cooperative_threads=threads) is None
