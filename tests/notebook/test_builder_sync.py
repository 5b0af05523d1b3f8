"""Two-way sync between the builder and code: the DAG or Pipeline a builder was opened with, edited
in code, shows in the document (merged with edits made on the canvas), and canvas edits show in
``builder.dag``; at the model level and in the widget's synced state."""

from __future__ import annotations

import pytest

from jetbench import DAG, Edge, ExecutionService, Pipeline, aggregate, sinks, sources
from jetbench.notebook import DagBuilder
from jetbench.notebook.builder import BuilderModel
from jetbench.notebook.builder.layout import GAP_Y, NODE_H, NODE_W
from jetbench.notebook.headless import recording_comms
from jetbench.processors import (
    collect_sink,
    filter_processor,
    items_source,
    map_processor,
    noop_sink,
)


def run(dag: DAG):
    return ExecutionService(cooperative_threads=2).run(dag, timeout=30)


def code_dag() -> DAG:
    dag = DAG()
    src = dag.new_vertex("src", items_source(list(range(6))), 1)
    inc = dag.new_vertex("inc", map_processor(lambda x: x + 1))
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.between(src, inc)).edge(Edge.between(inc, out))
    return dag


def view(m: BuilderModel) -> dict:
    return {v["name"]: (v["kind"], v["params"], v["parallelism"]) for v in m.vertices}


def edges(m: BuilderModel) -> set:
    name = {v["id"]: v["name"] for v in m.vertices}
    return {(name[e["source"]], e["source_ordinal"], name[e["target"]], e["target_ordinal"], e["routing"], e["key"])
            for e in m.edges}


def no_overlap(m: BuilderModel) -> bool:
    vs = m.vertices
    return all(abs(a["x"] - b["x"]) >= NODE_W or abs(a["y"] - b["y"]) >= NODE_H + GAP_Y / 2
               for i, a in enumerate(vs) for b in vs[i + 1:])


# ------------------------------------------------------------------------------ model level


def test_code_edits_to_the_opened_dag_merge_with_canvas_edits():
    dag = code_dag()
    m = BuilderModel()
    m.load_dag(dag)
    assert m.source is dag and m.refresh() is False  # nothing changed yet
    ids = {v["name"]: v["id"] for v in m.vertices}
    # on the canvas: move a vertex, set a parallelism, add a vertex of our own
    m.move({ids["out"]: (900.0, 300.0)})
    m.update_vertex("inc", parallelism=3)
    mine = m.add_vertex("noop", name="mine", x=0, y=600)
    m.connect("inc", mine)
    # in code: a new vertex and edge, a changed edge, a replaced supplier
    keep = dag.new_vertex("keep", filter_processor(lambda x: x % 2 == 0))
    dag.edge(Edge.from_(dag.vertex("src"), 1).to(keep))
    dag.edge(Edge.between(keep, dag.new_vertex("drop", noop_sink())))
    dag.edges[1].partitioned(lambda x: x % 3)
    dag.vertex("src").supplier = items_source([7, 8])
    assert m.refresh() is True
    assert view(m) == {
        "src": ("items", {"items": "[7, 8]"}, 1),
        "inc": ("map", {"fn": "x + 1"}, 3),  # the canvas's parallelism stays
        "out": ("collect", {}, 1),
        "mine": ("noop", {}, None),  # and the canvas's own vertex
        "keep": ("filter", {"fn": "x % 2 == 0"}, None),
        "drop": ("noop", {}, None),
    }
    assert edges(m) == {("src", 0, "inc", 0, "unicast", ""), ("inc", 0, "out", 0, "partitioned", "x % 3"),
                        ("inc", 1, "mine", 0, "unicast", ""), ("src", 1, "keep", 0, "unicast", ""),
                        ("keep", 0, "drop", 0, "unicast", "")}
    # ids and positions of the vertices already there are kept; new ones go right of their producers
    assert {v["name"]: v["id"] for v in m.vertices if v["name"] in ids} == ids
    pos = {v["name"]: (v["x"], v["y"]) for v in m.vertices}
    assert pos["out"] == (900.0, 300.0)
    assert pos["src"][0] < pos["keep"][0] < pos["drop"][0] and no_overlap(m)
    # the result of the merged document, and code -> canvas -> code again
    assert sorted(run(m.to_dag())) == [8, 9]
    # one undo step takes the whole refresh back
    assert m.undo() and "keep" not in view(m) and view(m)["src"][1] == {"items": "[0, 1, 2, 3, 4, 5]"}
    assert m.refresh() is False  # undo does not make the source new again ...
    assert m.refresh(force=True) is True  # ... force reads all of it again, and the code's version wins
    assert view(m)["keep"] == ("filter", {"fn": "x % 2 == 0"}, None) and view(m)["inc"][2] is None
    assert "mine" in view(m)


def test_code_wins_a_conflict_and_canvas_deletions_stay_deleted():
    dag = code_dag()
    m = BuilderModel()
    m.load_dag(dag)
    m.update_vertex("inc", params={"fn": "x + 100"})  # canvas edit ...
    dag.vertex("inc").supplier = map_processor(lambda x: x - 1)  # ... and a code edit of the same vertex
    m.remove("out")  # deleted on the canvas, unchanged in code
    assert m.refresh()
    assert view(m) == {"src": ("items", {"items": "[0, 1, 2, 3, 4, 5]"}, 1), "inc": ("map", {"fn": "x - 1"}, None)}
    assert edges(m) == {("src", 0, "inc", 0, "unicast", "")}


def test_opaque_vertices_get_the_new_objects_of_a_replanned_pipeline():
    p = Pipeline()
    src = p.read_from(sources.items([1, 2, 3]))
    src.map(lambda x: x * 2, name="double").write_to(sinks.collect())
    m = BuilderModel()
    m.load_dag(p)
    assert [v["name"] for v in m.vertices] == ["items", "double", "collect"]
    # in code: rename a stage, add a branch with an opaque function (a bound method)
    seen: list = []
    p.nodes[1].name = "twice"
    src.map(seen.append, name="log").write_to(sinks.noop())
    assert m.refresh()
    assert [v["name"] for v in m.vertices] == ["items", "collect", "twice", "log", "noop"]
    assert m.vertex("log")["kind"] == "custom" and "bound method" in m.vertex("log")["params"]["reason"]
    assert sorted(run(m.to_dag())) == [2, 4, 6] and sorted(seen) == [1, 2, 3]
    assert m.refresh() is False


def test_replacing_the_source_keeps_places_of_same_named_vertices():
    m = BuilderModel()
    m.load_dag(code_dag())
    m.move({m.vertex("src")["id"]: (5.0, 500.0)})
    other = DAG()
    a = other.new_vertex("src", items_source([1]), 1)
    b = other.new_vertex("square", map_processor(lambda x: x * x))
    other.edge(Edge.between(a, b)).edge(Edge.between(b, other.new_vertex("out", collect_sink())))
    m.load_dag(other)
    assert m.source is other and [v["name"] for v in m.vertices] == ["src", "square", "out"]
    assert (m.vertex("src")["x"], m.vertex("src")["y"]) == (5.0, 500.0)
    assert m.vertex("square")["x"] > 5.0 and no_overlap(m)
    assert m.undo() and [v["name"] for v in m.vertices] == ["src", "inc", "out"]
    # a document loaded from JSON follows no code
    m.load_json(m.to_json())
    assert m.source is None and m.refresh() is False


# ------------------------------------------------------------------------------ widget level


def test_builder_dag_setter_and_refresh_reach_the_front_end_in_one_message_each():
    dag = code_dag()
    with recording_comms(keep=True) as comms:
        b = DagBuilder(dag, namespace={}, auto_refresh=False)
        comm = comms[0]
        before = comm.count
        dag.edge(Edge.from_(dag.vertex("inc"), 1).to(dag.new_vertex("more", collect_sink())))
        assert b.refresh() is True
        assert comm.count - before == 1
        state = comm.messages[-1]["data"]["state"]
        assert [v["name"] for v in state["doc"]["vertices"]] == ["src", "inc", "out", "more"]
        assert b.refresh() is False and comm.count - before == 1  # nothing changed: nothing sent
        b.dag = DAG()
        assert comm.count - before == 2 and b.doc["vertices"] == [] and b.source is not dag
    # and the canvas side: front-end edits show in builder.dag
    b.dag = dag
    b._handle_msg({"content": {"data": {"method": "custom", "content": {
        "cmd": "update_vertex", "id": b.model.vertex("inc")["id"], "changes": {"params": {"fn": "x * 10"}}}}},
        "buffers": []})
    assert [v.name for v in b.dag.vertices] == ["src", "inc", "out", "more"]
    assert sorted(run(b.dag)) == [0, 10, 20, 30, 40, 50]


def test_builder_pipeline_property_replans_the_same_pipeline_or_replaces_it():
    p = Pipeline()
    words = p.read_from(sources.items(["a b", "b"])).flat_map(str.split, name="split")
    words.write_to(sinks.collect())
    b = DagBuilder(p, namespace={}, auto_refresh=False)
    assert b.pipeline is p and b.source is p
    words.group_by(lambda w: w).aggregate(aggregate.counting(), name="count").write_to(sinks.noop())
    b.pipeline = p  # the same pipeline, edited: merged
    names = [v["name"] for v in b.doc["vertices"]]
    assert names[:3] == ["items", "split", "collect"] and {"count-accumulate", "count-combine", "noop"} <= set(names)
    q = Pipeline()
    q.read_from(sources.items([1])).write_to(sinks.collect())
    b.pipeline = q  # another one: replaced
    assert b.pipeline is q and [v["name"] for v in b.doc["vertices"]] == ["items", "collect"]
    b.dag = code_dag()
    assert b.pipeline is None


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    try:
        yield sh
    finally:
        InteractiveShell.clear_instance()


def test_in_a_kernel_editing_the_dag_in_a_cell_refreshes_the_builder(shell):
    shell.run_cell("from jetbench import DAG, Edge\n"
                   "from jetbench.processors import items_source, map_processor, collect_sink\n"
                   "dag = DAG()\n"
                   "src = dag.new_vertex('src', items_source([1, 2]), 1)\n"
                   "out = dag.new_vertex('out', collect_sink(), 1)\n"
                   "_ = dag.edge(Edge.between(src, out))\n"
                   "from jetbench.notebook import DagBuilder\n"
                   "b = DagBuilder(dag)\n")
    b = shell.user_ns["b"]
    assert [v["name"] for v in b.doc["vertices"]] == ["src", "out"]
    shell.run_cell("half = dag.new_vertex('half', map_processor(lambda x: x / 2))\n"
                   "_ = dag.edge(Edge.from_(src, 1).to(half))\n")
    assert [v["name"] for v in b.doc["vertices"]] == ["src", "out", "half"]
    assert b.model.vertex("half")["params"] == {"fn": "x / 2"}
    assert b.problems == {"vertices": {}, "edges": {}, "dag": []}
    b.close()
    shell.run_cell("_ = dag.edge(Edge.between(half, dag.new_vertex('late', collect_sink())))")
    assert "late" not in [v["name"] for v in b.doc["vertices"]]  # a closed builder follows nothing
