"""The DagBuilder widget's Python side: the sync protocol (commands in, doc/problems out) and Run."""

from __future__ import annotations

import time

import pytest

from jetbench import DAG, Edge, ExecutionService, JobError
from jetbench.notebook import DagBuilder
from jetbench.notebook.headless import recording_comms
from jetbench.processors import collect_sink, items_source, map_processor


def front_end(builder: DagBuilder, **data) -> None:
    """What ipywidgets does with a comm message from the browser."""
    builder._handle_msg({"content": {"data": {"method": "custom", "content": data}}, "buffers": []})


def names(builder: DagBuilder) -> list[str]:
    return [v["name"] for v in builder.doc["vertices"]]


def test_front_end_commands_edit_the_document_and_python_sees_a_real_dag():
    b = DagBuilder(namespace={})
    assert b.doc == {"vertices": [], "edges": [], "custom": []}
    assert any(k["id"] == "map" for k in b.palette_kinds)
    front_end(b, cmd="add_vertex", kind="items", x=10, y=20)
    front_end(b, cmd="add_vertex", kind="map", x=250, y=20)
    front_end(b, cmd="add_vertex", kind="collect", x=500, y=20)
    src, dbl, out = (v["id"] for v in b.doc["vertices"])
    assert (b.doc["vertices"][0]["x"], b.doc["vertices"][0]["y"]) == (10.0, 20.0)
    # problems go to the front end grouped by vertex id
    assert [p["message"] for p in b.problems["vertices"][dbl]] == ["input not connected"]
    front_end(b, cmd="connect", source=src, target=dbl, source_ordinal=0)
    front_end(b, cmd="connect", source=dbl, target=out, source_ordinal=0, target_ordinal=0)
    assert b.problems == {"vertices": {}, "edges": {}, "dag": []}
    front_end(b, cmd="update_vertex", id=dbl, changes={"name": "double", "parallelism": 2, "params": {"fn": "x * 2"}})
    dag = b.dag
    assert [(v.name, v.local_parallelism) for v in dag.vertices] == [("items", None), ("double", 2), ("collect", None)]
    assert sorted(ExecutionService().run(dag)) == [2 * x for x in range(10)]
    # a cycle is refused with a message, and the document is unchanged
    seq = b.message_seq
    front_end(b, cmd="connect", source=dbl, target=dbl)
    assert b.message_seq == seq + 1 and "would create a cycle" in b.message
    assert len(b.doc["edges"]) == 2
    # undo / redo / delete / layout / move
    front_end(b, cmd="update_edge", id=b.doc["edges"][1]["id"], changes={"routing": "broadcast", "queue_size": 64})
    assert b.doc["edges"][1]["routing"] == "broadcast" and b.can_undo
    front_end(b, cmd="undo")
    assert b.doc["edges"][1]["routing"] == "unicast" and b.can_redo
    front_end(b, cmd="redo")
    assert b.doc["edges"][1]["queue_size"] == 64
    front_end(b, cmd="delete", ids=[dbl])
    assert names(b) == ["items", "collect"] and b.doc["edges"] == []
    assert b.problems["vertices"][out][0]["message"] == "input not connected"
    front_end(b, cmd="undo")
    front_end(b, cmd="move", positions={src: [5, 6]})
    assert (b.doc["vertices"][0]["x"], b.doc["vertices"][0]["y"]) == (5.0, 6.0)
    front_end(b, cmd="layout")
    assert b.doc["vertices"][0]["x"] < b.doc["vertices"][1]["x"] < b.doc["vertices"][2]["x"]
    front_end(b, cmd="bogus")
    assert "unknown command" in b.message


def test_python_edits_reach_the_front_end_in_one_message_each():
    with recording_comms(keep=True) as comms:
        b = DagBuilder(namespace={})
        comm = comms[0]
        before = comm.count
        a = b.add_vertex("items", name="numbers", params={"items": "[1, 2]"})
        out = b.add_vertex("collect", name="out")
        b.connect(a, out)
        b.update_vertex("numbers", parallelism=0)
    assert comm.count - before == 4  # doc + problems + undo state together, once per edit
    last = comm.messages[-1]["data"]["state"]
    assert {"doc", "problems"} <= set(last)
    assert last["problems"]["vertices"][a][0]["message"] == "local parallelism must be >= 1, got 0"
    assert [v["name"] for v in last["doc"]["vertices"]] == ["numbers", "out"]


def test_open_a_dag_built_in_code_and_run_it_with_a_dashboard():
    dag = DAG()
    src = dag.new_vertex("src", items_source(range(5)), 1)
    inc = dag.new_vertex("inc", map_processor(lambda x: x + 1), 2)
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.between(src, inc)).edge(Edge.between(inc, out))
    b = DagBuilder(dag, namespace={}, service=ExecutionService(cooperative_threads=1))
    assert names(b) == ["src", "inc", "out"]
    assert not b.can_undo  # opening is not an edit
    assert b.doc["vertices"][1]["params"] == {"fn": "x + 1"}
    box = b.view
    assert box.children[0] is b
    front_end(b, cmd="run")
    job = b.job
    job.join(10)
    deadline = time.monotonic() + 5
    while b.run_state.get("status") != "completed" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert b.run_state["status"] == "completed"
    assert b.run_state["count"] == 5 and b.run_state["result"].startswith("[")
    assert box.children[1].children == (b.dashboard,)
    b.dashboard.join(5)


def test_run_with_problems_says_why_and_failures_show_the_error(tmp_path):
    b = DagBuilder(namespace={})
    b.add_vertex("map", name="lonely")
    front_end(b, cmd="run")
    assert "lonely" in b.message and "input not connected" in b.message and b.job is None
    b.remove("lonely")
    a = b.add_vertex("items", params={"items": "[1, 0]"})
    f = b.add_vertex("map", name="inv", params={"fn": "1 / x"})
    o = b.add_vertex("noop")
    b.connect(a, f)
    b.connect(f, o)
    job = b.run()
    with pytest.raises(JobError, match="division by zero"):
        job.join(10)
    deadline = time.monotonic() + 5
    while b.run_state.get("status") != "failed" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert b.run_state["status"] == "failed" and "division by zero" in b.run_state["error"]
    b.dashboard.join(5)
    # save / load on the widget
    path = tmp_path / "b.json"
    b.save(path)
    c = DagBuilder.load(path, namespace={})
    assert names(c) == names(b) and not c.can_undo
    assert c.to_code() == b.to_code()


def test_notebook_processor_classes_join_the_palette():
    from jetbench.core.processor import Processor

    class Passthrough(Processor):
        def process(self, ordinal, inbox):
            while inbox and self.outbox.offer(inbox.peek()):
                inbox.remove()

    b = DagBuilder(namespace={"Passthrough": Passthrough})
    assert any(k["id"] == "processor:Passthrough" for k in b.palette_kinds)
    a = b.add_vertex("items", params={"items": "[7]"})
    p = b.add_vertex("processor:Passthrough")
    o = b.add_vertex("collect")
    b.connect(a, p)
    b.connect(p, o)
    assert ExecutionService().run(b.dag) == [7]


def test_export_code_from_the_front_end_follows_edits_and_rebuilds_the_dag():
    b = DagBuilder(namespace={})
    b.add_vertex("items", "src", params={"items": "range(5)"})
    b.add_vertex("map", "double", params={"fn": "x * 2"})
    b.connect("src", "double")
    assert b.code_export == {}
    front_end(b, cmd="export_code")
    shown = b.code_export
    assert shown["open"] and shown["code"] == b.to_code() and shown["error"] == "" and shown["custom"] == []
    assert shown["note"] == ""  # a loose output is a warning, not an error: the code runs
    # an edit while it is open: the shown code follows; the exported code rebuilds the DAG
    b.add_vertex("collect", "out")
    b.connect("double", "out")
    assert "'out'" in b.code_export["code"] and b.code_export["code"] == b.to_code()
    assert b.code_export["note"] == ""
    scope: dict = {}
    exec(b.code_export["code"], scope)  # noqa: S102 - the code under test
    assert [v.name for v in scope["dag"].vertices] == ["src", "double", "out"]
    assert sorted(ExecutionService().run(scope["dag"])) == [0, 2, 4, 6, 8]
    # a canvas with an error says the code will not run yet
    b.update_vertex("double", params={"fn": "x *"})
    assert b.code_export["note"].startswith("the canvas has 1 error (the first: ") and "fix" in b.code_export["note"]
    front_end(b, cmd="close_export")
    assert b.code_export == {}
    b.update_vertex("double", params={"fn": "x * 3"})
    assert b.code_export == {}  # closed: not recomputed
