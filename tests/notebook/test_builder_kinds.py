"""The builder's palette kinds beyond the basics: joins, service maps, global aggregates, the fused
transform, test_stream, the other sinks, Spark sources; and DAGs/Pipelines built in code opening
as editable kinds (opaque only when a function's source is truly unavailable)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from jetbench import DAG, Edge, ExecutionService, Pipeline, aggregate, sinks, sources
from jetbench.notebook.builder import BuilderError, BuilderModel, Palette
from jetbench.notebook.builder import builtin_kinds as catalogue
from jetbench.processors import (
    Transform,
    collect_sink,
    counting,
    global_aggregate,
    items_source,
    map_processor,
    transform_processor,
)
from jetbench.processors.aggregate_operation import summing
from jetbench.processors.callback_sink import callback_sink
from jetbench.processors.co_group import co_group
from jetbench.processors.event_stream_source import event_stream_source
from jetbench.processors.files_sink import files_sink
from jetbench.processors.hash_join import hash_join
from jetbench.processors.latency_sink import latency_sink
from jetbench.processors.map_using_service import map_using_service
from jetbench.processors.map_using_service_async import map_using_service_async
from jetbench.processors.to_dict_sink import to_dict_sink
from jetbench.window import sliding, tumbling


def run(dag: DAG):
    return ExecutionService(cooperative_threads=2).run(dag, timeout=30)


def shape(dag: DAG) -> tuple:
    return (
        [(v.name, v.local_parallelism, type(v.supplier).__name__) for v in dag.vertices],
        [(e.source.name, e.source_ordinal, e.destination.name, e.destination_ordinal, e.routing.value,
          e.edge_queue_size, e.edge_priority) for e in dag.edges],
    )


def exported(m: BuilderModel, ns: dict | None = None) -> DAG:
    scope = dict(ns or {})
    scope["custom_suppliers"] = m.custom_suppliers
    exec(m.to_code(), scope)  # noqa: S102 - the code under test
    return scope["dag"]


def round_trips(m: BuilderModel, tmp_path, ns: dict | None = None) -> BuilderModel:
    """to_code gives an equal DAG; save/load gives an equal document (no code run); returns the loaded one."""
    assert m.problems() == [], m.problems()
    built = m.to_dag()
    assert shape(exported(m, ns)) == shape(built)
    path = tmp_path / "doc.json"
    m.save(path)
    loaded = BuilderModel(namespace=dict(ns or {}))
    loaded.load(path)
    assert (loaded.vertices, loaded.edges) == (m.vertices, m.edges)
    return loaded


def kinds(m: BuilderModel) -> dict[str, str]:
    return {v["name"]: v["kind"] for v in m.vertices}


def messages(m: BuilderModel, name: str) -> list[tuple[str, str]]:
    vid = m.vertex(name)["id"]
    return [(p.message, p.level) for p in m.problems() if p.id == vid]


# ------------------------------------------------------------------------------ the palette


def test_palette_offers_every_source_transform_join_and_sink_with_json_metadata():
    p = Palette()
    ids = {k.id for k in p.kinds()}
    assert {"test_stream", "transform", "map_using_service", "map_using_service_async", "global_aggregate",
            "global_accumulate", "global_combine", "hash_join", "co_group", "to_dict", "callback", "pandas",
            "files_sink", "latency"} <= ids
    assert {"spark_dataframe", "spark_parquet", "spark_table"} <= ids  # pyspark imports here
    meta = {k["id"]: k for k in json.loads(json.dumps(p.to_json()))}
    assert meta["hash_join"]["in_ports"] == ["probe", "build"] and meta["hash_join"]["category"] == "join"
    assert meta["global_aggregate"]["parallelism"] == 1
    assert next(q for q in meta["map_using_service_async"]["params"] if q["name"] == "async_fn")["asynchronous"]
    assert next(q for q in meta["window"]["params"] if q["name"] == "slide")["when"] == ["window", ["sliding"]]


def test_spark_kinds_only_when_pyspark_imports(monkeypatch):
    monkeypatch.setattr(catalogue, "spark_available", lambda: False)
    ids = {k.id for k in Palette().kinds()}
    assert not ids & {"spark_dataframe", "spark_parquet", "spark_table"} and "items" in ids


def test_building_the_palette_starts_no_spark():
    code = ("import sys; from jetbench.notebook.builder import Palette; p = Palette(); "
            "assert p.kind('spark_table') is not None; import pyspark; "
            "assert pyspark.SparkContext._active_spark_context is None; "
            "assert pyspark.SparkContext._gateway is None; "
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr


# ------------------------------------------------------------------------------ new kinds, drawn


def test_hash_join_edges_get_their_defaults_and_the_job_joins(tmp_path):
    m = BuilderModel()
    orders = m.add_vertex("items", name="orders", params={"items": "[(1, 'pen'), (2, 'ink'), (1, 'cap'), (3, 'x')]"})
    users = m.add_vertex("items", name="users", params={"items": "[(1, 'ann'), (2, 'bob')]"})
    join = m.add_vertex("hash_join", name="join", params={"left_key": "x[0]", "right_key": "x[0]", "how": "left"},
                        parallelism=2)
    out = m.add_vertex("collect", name="out")
    assert ("input 0 (probe) not connected", "error") in messages(m, "join")
    assert ("input 1 (build) not connected", "error") in messages(m, "join")
    m.connect(orders, join)
    build = m.connect(users, join)
    e = m.edge(build)
    assert (e["target_ordinal"], e["routing"], e["priority"]) == (1, "broadcast", -1)  # the build side's defaults
    with pytest.raises(BuilderError, match=r"has inputs 0 \(probe\), 1 \(build\) only"):
        m.connect(m.add_vertex("items", name="third"), join)
    m.remove("third")
    m.connect(join, out)
    result = sorted(run(round_trips(m, tmp_path).to_dag()), key=repr)
    assert result == sorted([((1, "pen"), (1, "ann")), ((2, "ink"), (2, "bob")), ((1, "cap"), (1, "ann")),
                             ((3, "x"), None)], key=repr)
    m.update_edge(build, routing="unicast", priority=0)
    assert {msg for msg, level in messages(m, "join") if level == "warning"} == {
        "the build side (input 1) should be broadcast: every instance needs all of it",
        "the build side (input 1) should have a lower priority value than the probe side (input 0), so it is "
        "loaded first"}
    assert "join" in m.to_code() and m.to_dag()  # warnings do not stop a run


def test_new_kinds_badges_reach_the_widget_state():
    from jetbench.notebook import DagBuilder

    b = DagBuilder(namespace={}, auto_refresh=False)
    a = b.add_vertex("items", name="a")
    j = b.add_vertex("hash_join", name="j", params={"left_key": "x", "right_key": "x("})
    b.connect(a, j)
    assert [(p["message"], p["level"]) for p in b.problems["vertices"][j]] == [
        ("right_key: '(' was never closed at line 1, column 2", "error"), ("input 1 (build) not connected", "error")]
    g = b.add_vertex("global_aggregate", name="g", parallelism=3)
    b.connect(a, g)
    assert [p["level"] for p in b.problems["vertices"][g]] == ["warning"]
    assert any(k["id"] == "hash_join" and k["in_ports"] == ["probe", "build"] for k in b.palette_kinds)


def test_co_group_partitions_both_inputs_by_their_keys(tmp_path):
    m = BuilderModel()
    a = m.add_vertex("items", name="a", params={"items": "['ax', 'by', 'az']"})
    b = m.add_vertex("items", name="b", params={"items": "[('a', 1), ('c', 2)]"})
    g = m.add_vertex("co_group", name="g", params={"left_key": "x[0]", "right_key": "x[0]"}, parallelism=2)
    out = m.add_vertex("collect", name="out")
    left, right = m.connect(a, g), m.connect(b, g)
    assert [(m.edge(e)["routing"], m.edge(e)["key"]) for e in (left, right)] == [("partitioned", "x[0]")] * 2
    m.connect(g, out)
    assert sorted(run(round_trips(m, tmp_path).to_dag())) == [
        ("a", ["ax", "az"], [("a", 1)]), ("b", ["by"], []), ("c", [], [("c", 2)])]
    m.update_edge(left, routing="unicast")
    assert messages(m, "g") == [("input 0 should be partitioned by its key: equal keys must meet in one instance",
                                 "warning")]


def test_global_aggregates_start_with_one_instance_and_warn_otherwise(tmp_path):
    m = BuilderModel()
    src = m.add_vertex("items", name="n", params={"items": "range(10)"}, parallelism=2)
    acc = m.add_vertex("global_accumulate", name="acc", params={"op": "summing", "value": "x * x"}, parallelism=2)
    comb = m.add_vertex("global_combine", name="comb", params={"op": "summing"})
    out = m.add_vertex("collect", name="out")
    assert m.vertex(comb)["parallelism"] == 1
    m.connect(src, acc)
    m.connect(acc, comb, routing="all-to-one")
    m.connect(comb, out)
    assert run(round_trips(m, tmp_path).to_dag()) == [sum(x * x for x in range(10))]
    single = BuilderModel()
    s = single.add_vertex("items", name="n", params={"items": "range(4)"})
    agg = single.add_vertex("global_aggregate", name="avg", params={"op": "averaging"})
    single.connect(s, agg)
    single.connect(agg, single.add_vertex("collect", name="out"))
    assert run(round_trips(single, tmp_path).to_dag()) == [1.5]
    single.update_vertex("avg", parallelism=None)
    assert messages(single, "avg") == [("a global aggregate gives one result per instance: run it with local "
                                        "parallelism 1 (now the default)", "warning")]


def test_fused_transform_steps_validate_per_line_and_run(tmp_path):
    m = BuilderModel(namespace={"STOP": {"the", "a"}})
    src = m.add_vertex("items", name="lines", params={"items": "['The cat', 'a dog sat']"})
    t = m.add_vertex("transform", name="words", params={
        "steps": "map: x.lower()\nflat_map: x.split()\nfilter:\n    if x in STOP:\n        return False\n"
                 "    return True\nmap: x.upper()"})
    m.connect(src, t)
    m.connect(t, m.add_vertex("collect", name="out"))
    loaded = round_trips(m, tmp_path, {"STOP": {"the", "a"}})
    assert sorted(run(loaded.to_dag())) == ["CAT", "DOG", "SAT"]
    code = m.to_code()
    assert "transform_processor(Transform().map(lambda x: x.lower()).flat_map(lambda x: x.split())" \
           ".filter(v_words_step3).map(lambda x: x.upper()))" in code
    for steps, problem in [("map x", "steps: line 1: expected 'map: ...', 'filter: ...' or 'flat_map: ...', got 'map x'"),
                           ("map: x\nreduce: x", "steps: line 2: expected 'map: ...', 'filter: ...' or 'flat_map: ...', "
                                                 "got 'reduce: x'"),
                           ("map: x\nfilter: x >", "steps: step 2 (filter): invalid syntax at line 1, column 4"),
                           ("filter:", "steps: line 1: filter has no code")]:
        m.update_vertex(t, params={"steps": steps})
        assert messages(m, "words") == [(problem, "error")]
    m.update_vertex(t, params={"steps": ""})  # no steps: passes items through (the planner's merge vertex)
    assert sorted(run(m.to_dag())) == ["The cat", "a dog sat"]


def test_service_maps_blocking_and_async(tmp_path):
    ns = {"asyncio": asyncio}
    m = BuilderModel(namespace=ns)
    src = m.add_vertex("items", name="n", params={"items": "range(6)"})
    svc = m.add_vertex("map_using_service", name="lookup", params={
        "service_factory": "{i: i * 10 for i in range(6)}", "fn": "service[x]"})
    slow = m.add_vertex("map_using_service_async", name="slow", params={
        "service_factory": "return asyncio.sleep", "async_fn": "await service(0.001)\nreturn x + 1",
        "max_concurrent": 3})
    m.connect(src, svc)
    m.connect(svc, slow)
    m.connect(slow, m.add_vertex("collect", name="out"))
    loaded = round_trips(m, tmp_path, ns)
    assert sorted(run(loaded.to_dag())) == [1, 11, 21, 31, 41, 51]
    assert "async def v_slow_async_fn(service, x):\n    await service(0.001)\n    return x + 1" in m.to_code()
    m.update_vertex(slow, params={"async_fn": "x +"})
    assert messages(m, "slow") == [("async_fn: invalid syntax at line 1, column 4", "error")]
    m.update_vertex(slow, params={"async_fn": "await service(0) or x", "max_concurrent": 0})
    assert messages(m, "slow") == [("max_concurrent: must be >= 1, got 0", "error")]


def test_test_stream_windows_and_the_remaining_sinks(tmp_path):
    m = BuilderModel()
    src = m.add_vertex("test_stream", name="events", params={"events": "[(0, 'a'), (400, 'b'), (1200, 'a')]"})
    wm = m.add_vertex("insert_watermarks", name="wm", params={"ts": ""})
    win = m.add_vertex("window", name="per_second", params={"window": "tumbling", "size": 1000, "key": "x"},
                       parallelism=1)
    pairs = m.add_vertex("map", name="pairs", params={"fn": "((x[1].start, x[1].key), x[1].value)"})
    d = m.add_vertex("to_dict", name="counts")
    for a, b in [(src, wm), (wm, win), (win, pairs), (pairs, d)]:
        m.connect(a, b)
    assert run(round_trips(m, tmp_path).to_dag()) == {(0, "a"): 1, (0, "b"): 1, (1000, "a"): 1}
    seen: list = []
    other = BuilderModel(namespace={"seen": seen})
    s = other.add_vertex("items", name="n", params={"items": "[(0.0, 'a'), (1.0, 'b')]"})
    for kind, params in [("callback", {"fn": "seen.append(x)"}), ("files_sink", {"directory": str(tmp_path / "o")}),
                         ("latency", {"limit": 10}), ("pandas", {})]:
        other.connect(s, other.add_vertex(kind, name=kind, params=params))
    assert other.problems() == []
    assert shape(exported(other, {"seen": seen})) == shape(other.to_dag())
    result = run(other.to_dag())  # the first collecting sink's result: the latency summary
    assert result["count"] == 2 and seen == [(0.0, "a"), (1.0, "b")]
    assert sorted(os.listdir(tmp_path / "o")) == ["part-00000", "part-00001"]
    other.update_vertex("latency", params={"limit": 0})
    other.update_vertex("files_sink", params={"directory": " "})
    assert messages(other, "latency") == [("limit: must be >= 1, got 0", "error")]
    assert messages(other, "files_sink") == [("directory: must not be empty", "error")]


def test_spark_parquet_source_builds_exports_and_runs_without_a_session(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"word": ["a", "b", "a"], "n": [1, 2, 3]}), path)
    m = BuilderModel()
    src = m.add_vertex("spark_parquet", name="words", params={"path": str(path), "columns": "['word']", "as_": "value"})
    m.connect(src, m.add_vertex("collect", name="out"))
    loaded = round_trips(m, tmp_path)
    assert "from jetbench.spark.dataframe_sources import parquet" in m.to_code()
    assert sorted(run(loaded.to_dag())) == ["a", "a", "b"]
    m.update_vertex(src, params={"as_": "frame"})
    assert messages(m, "words") == [("as_: must be one of dict, tuple, row, value, got 'frame'", "error")]
    # and a DAG with a parquet source opens as that kind
    back = BuilderModel()
    back.load_dag(loaded.to_dag())
    assert back.vertex("words")["kind"] == "spark_parquet"
    assert back.vertex("words")["params"] == {"path": str(path), "columns": "['word']", "as_": "value", "engine": "arrow",
                                              "timestamp": ""}


def test_loading_new_kinds_from_json_runs_none_of_their_code(tmp_path):
    calls: list[str] = []

    def spy(what, value=None):
        calls.append(what)
        return value

    ns = {"spy": spy}
    m = BuilderModel(namespace=ns)
    src = m.add_vertex("test_stream", name="events", params={"events": "spy('events', [(0, 1)])"})
    svc = m.add_vertex("map_using_service", name="svc", params={"service": "spy('service', {})", "fn": "spy('fn', x)"})
    t = m.add_vertex("transform", name="t", params={"steps": "map: spy('step', x)"})
    j = m.add_vertex("hash_join", name="j", params={"left_key": "spy('left', x)", "right_key": "spy('right', x)"})
    m.connect(src, svc)
    m.connect(svc, t)
    m.connect(t, j)
    m.connect(m.add_vertex("items", name="build", params={"items": "spy('items', [])"}), j)
    m.connect(j, m.add_vertex("callback", name="cb", params={"fn": "spy('callback')"}))
    path = tmp_path / "spy.json"
    m.save(path)
    loaded = BuilderModel(namespace=ns)
    loaded.load(path)
    assert loaded.problems() == [] and loaded.to_code() and calls == []  # validated and exported: nothing ran
    loaded.to_dag()
    assert sorted(calls) == ["events", "items"]  # building evaluates the expressions only


# ------------------------------------------------------------------------------ opened from code


def _twice(x):
    return [x, x]


def _pair(x):
    return x, 1


async def _fetch(service, x):
    await asyncio.sleep(0)
    return service.get(x, x)


def test_a_dag_of_every_kind_opens_editable_and_rebuilds_an_equal_dag(tmp_path):
    ns = {"_twice": _twice, "_fetch": _fetch}
    dag = DAG()
    a = dag.new_vertex("a", items_source([3, 1, 2]), 1)
    b = dag.new_vertex("b", items_source([(1, "one"), (2, "two")]), 1)
    fused = dag.new_vertex("fused", transform_processor(Transform().map(lambda v: v + 1).flat_map(_twice)
                                                        .filter(lambda x: x != 3)))
    svc = dag.new_vertex("svc", map_using_service(lambda: {4: 40}, lambda s, x: s.get(x, x)))
    asvc = dag.new_vertex("asvc", map_using_service_async(dict, _fetch, max_concurrent=2))
    join = dag.new_vertex("join", hash_join(lambda x: x % 3, lambda r: r[0]), 2)
    grp = dag.new_vertex("grp", co_group(lambda p: p[0], lambda q: q[0]), 1)
    total = dag.new_vertex("total", global_aggregate(summing(lambda x: x[0])), 1)
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.between(a, fused)).edge(Edge.between(fused, svc)).edge(Edge.between(svc, asvc))
    dag.edge(Edge.from_(asvc, 0).to(join, 0))
    dag.edge(Edge.from_(b, 0).to(join, 1).broadcast().priority(-1))
    dag.edge(Edge.from_(join, 0).to(grp, 0))
    dag.edge(Edge.from_(b, 1).to(grp, 1))
    dag.edge(Edge.between(grp, total).all_to_one()).edge(Edge.between(total, out))
    m = BuilderModel(namespace=ns)
    m.load_dag(dag)
    assert kinds(m) == {"a": "items", "b": "items", "fused": "transform", "svc": "map_using_service",
                        "asvc": "map_using_service_async", "join": "hash_join", "grp": "co_group",
                        "total": "global_aggregate", "out": "collect"}
    params = {v["name"]: v["params"] for v in m.vertices}
    assert params["fused"]["steps"] == "map: x + 1\nflat_map: _twice(x)\nfilter: x != 3"
    assert params["svc"] == {"service_factory": "{4: 40}", "fn": "service.get(x, x)", "timestamped": False,
                             "mode": "map"}
    assert params["asvc"]["async_fn"] == "await _fetch(service, x)" and params["asvc"]["service_factory"] == "dict()"
    assert params["join"]["left_key"] == "x % 3" and params["join"]["right_key"] == "x[0]"
    assert params["grp"] == {"left_key": "x[0]", "right_key": "x[0]"}
    assert params["total"] == {"op": "summing", "value": "x[0]"}
    loaded = round_trips(m, tmp_path, ns)
    assert run(loaded.to_dag()) == run(dag) == run(exported(m, ns))


def test_pipelines_open_editable_fused_two_stage_and_windowed():
    from jetbench.wordcount import tokenize

    p = Pipeline()
    (p.read_from(sources.items(["The cat sat.", "The cat ran!"]))
     .flat_map(tokenize).filter(bool)
     .group_by(lambda word: word).aggregate(aggregate.counting())
     .write_to(sinks.collect()))
    m = BuilderModel()
    m.load_dag(p)
    assert m.notes() == [] and m.problems() == []
    assert kinds(m)["fused(flat_map-tokenize, filter-bool)"] == "transform"
    assert m.vertex("group-aggregate-accumulate")["params"] == {"key_fn": "x", "op": "counting", "value": "x"}
    assert [e["key"] for e in m.edges if e["routing"] == "partitioned"] == ["x[0]"]
    # a module-level function not in the namespace comes with its import
    assert "from jetbench.wordcount import tokenize" in m.vertex("fused(flat_map-tokenize, filter-bool)")["params"]["steps"]
    assert sorted(run(m.to_dag())) == sorted(run(exported(m))) == [("cat", 2), ("ran", 1), ("sat", 1), ("the", 2)]

    w = Pipeline()
    (w.read_from(sources.test_stream([(0, "a"), (400, "bb"), (1200, "a"), (1500, "cc")]))
     .map(str.upper).group_by(lambda s: s[0]).window(sliding(2000, 1000)).aggregate(aggregate.summing(len))
     .write_to(sinks.collect()))
    mw = BuilderModel()
    mw.load_dag(w)
    assert mw.notes() == [] and mw.problems() == []
    assert mw.vertex("window-sliding(2000, 1000)")["params"] == {
        "window": "sliding", "size": 2000, "slide": 1000, "gap": 1000, "early": 0, "key_fn": "x[0]", "op": "summing",
        "value": "len(x)"}
    assert [e["key"] for e in mw.edges if e["routing"] == "partitioned"] == ["x[1][0]"]
    assert mw.vertex("map-upper")["params"]["steps"] == "map: str.upper(x)"
    assert sorted(run(mw.to_dag())) == sorted(run(exported(mw))) == sorted(run(w.to_dag()))

    j = Pipeline()
    left = j.read_from(sources.items([1, 2, 3]))
    right = j.read_from(sources.items([(1, "a"), (3, "c")]))
    left.hash_join(right, lambda x: x, lambda r: r[0]).aggregate(aggregate.to_list()).write_to(sinks.collect())
    mj = BuilderModel()
    mj.load_dag(j)
    assert mj.notes() == [] and {"hash_join", "global_accumulate", "global_combine"} <= set(kinds(mj).values())
    assert [sorted(r) for r in run(mj.to_dag())] == [[(1, (1, "a")), (3, (3, "c"))]]


def test_opaque_only_when_the_code_cannot_be_shown_and_the_reason_is_on_the_badge():
    offset = 5
    hidden = eval("lambda x: x + 1")  # noqa: S307 - a function without source
    dag = DAG()
    src = dag.new_vertex("src", items_source(range(3)))
    closes = dag.new_vertex("closes", map_processor(lambda x: x + offset))
    nosrc = dag.new_vertex("nosrc", map_processor(hidden))
    hand = dag.new_vertex("hand", global_aggregate(aggregate.AggregateOperation(create=int, accumulate=max)), 1)
    out = dag.new_vertex("out", collect_sink())
    for x, y in [(src, closes), (closes, nosrc), (nosrc, hand), (hand, out)]:
        dag.edge(Edge.between(x, y))
    m = BuilderModel()
    m.load_dag(dag)
    reasons = {v["name"]: v["params"].get("reason") for v in m.vertices if v["kind"] == "custom"}
    assert reasons == {"closes": "step 1 (map): its code uses offset, which the notebook namespace does not have",
                       "nosrc": "step 1 (map): its source is not available",
                       "hand": "its aggregate operation is hand-made; the palette offers counting, summing, averaging, "
                               "min_by, max_by, to_list, to_set"}
    badges = m.problems_json()["vertices"]
    assert badges[m.vertex("closes")["id"]] == [{"target": "vertex", "id": m.vertex("closes")["id"], "level": "info",
                                                 "message": "opaque: " + reasons["closes"]}]
    assert m.problems() == [] and run(m.to_dag()) == [8]  # opaque vertices still run
    # with the closure's name in the namespace the same lambda is editable
    m2 = BuilderModel(namespace={"offset": 5})
    m2.load_dag(dag)
    assert m2.vertex("closes")["kind"] == "map" and m2.vertex("closes")["params"] == {"fn": "x + offset"}
    # a bound method or a partial says so
    import functools

    for fn, why in [([].append, "a bound method"), (functools.partial(max, 0), "a functools.partial")]:
        d = DAG()
        d.new_vertex("f", map_processor(fn))
        one = BuilderModel()
        one.load_dag(d)
        assert why in one.vertex("f")["params"]["reason"]


def test_counting_op_and_tumbling_window_from_code_round_trip(tmp_path):
    from jetbench.processors.insert_watermarks import insert_watermarks
    from jetbench.processors.window_aggregate import window_aggregate

    dag = DAG()
    src = dag.new_vertex("src", event_stream_source([(t, t % 3) for t in range(0, 3000, 250)]), 1)
    wm = dag.new_vertex("wm", insert_watermarks(None, 0, 500, None), 1)
    win = dag.new_vertex("win", window_aggregate(lambda x: x, counting(), tumbling(1000)), 1)
    sink_ = dag.new_vertex("sink", latency_sink(100), 1)
    keep = dag.new_vertex("keep", collect_sink(), 1)
    dag.edge(Edge.between(src, wm)).edge(Edge.between(wm, win))
    dag.edge(Edge.from_(win, 0).to(keep, 0)).edge(Edge.from_(win, 1).to(sink_, 0))
    m = BuilderModel()
    m.load_dag(dag)
    assert kinds(m) == {"src": "test_stream", "wm": "insert_watermarks", "win": "window", "sink": "latency",
                        "keep": "collect"}
    assert m.vertex("wm")["params"]["idle_timeout_ms"] == ""
    loaded = round_trips(m, tmp_path)
    assert sorted(r[1] for r in run(loaded.to_dag())) == sorted(r[1] for r in run(dag))
    for supplier, kind in [(to_dict_sink(), "to_dict"), (callback_sink(print), "callback"), (files_sink(tmp_path), "files_sink")]:
        d = DAG()
        d.new_vertex("s", supplier)
        one = BuilderModel()
        one.load_dag(d)
        assert one.vertex("s")["kind"] == kind, one.vertex("s")["params"]
