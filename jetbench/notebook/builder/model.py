"""The DAG builder's document, without any widget: vertices and edges as plain data, edits with
undo/redo, validation per vertex and edge, conversion to a `jetbench.DAG`, import from a DAG,
export as Python code, and a compact JSON form.

Function code stays text in the document: it is compiled to check it, and turned into functions
only by `BuilderModel.to_dag`. Loading JSON never runs code.

>>> m = BuilderModel()
>>> src = m.add_vertex("items", name="numbers", params={"items": "range(5)"})
>>> dbl = m.add_vertex("map", name="double", params={"fn": "x * 2"})
>>> out = m.add_vertex("collect", name="out")
>>> _ = m.connect(src, dbl), m.connect(dbl, out)
>>> m.problems()
[]
>>> from jetbench import ExecutionService
>>> ExecutionService().run(m.to_dag())
[0, 2, 4, 6, 8]
"""

from __future__ import annotations

import ast
import copy
import inspect
import json
import os
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...core.dag import DAG, DEFAULT_QUEUE_SIZE, Edge, Routing
from ...core.errors import DagError
from .palette import (
    OPS,
    ROUTINGS,
    BuilderError,
    Palette,
    check_code,
    check_expr,
    class_path,
    compile_function,
    function_source,
    lambda_source,
)

FORMAT = "jetbench-dag-builder"
VERSION = 1
NODE_W, NODE_H, GAP_X, GAP_Y = 170, 64, 90, 40
HISTORY_LIMIT = 200


@dataclass(frozen=True)
class Problem:
    """A validation finding on a vertex, an edge, or the whole DAG (``target`` "dag", ``id`` "")."""

    target: str
    id: str
    message: str
    level: str = "error"

    def to_json(self) -> dict[str, str]:
        return {"target": self.target, "id": self.id, "message": self.message, "level": self.level}


def _vertex(vid: str, kind: str, name: str, params: dict[str, Any], parallelism: int | None,
            x: float, y: float) -> dict[str, Any]:
    return {"id": vid, "kind": kind, "name": name, "params": params, "parallelism": parallelism,
            "x": float(x), "y": float(y)}


class BuilderModel:
    """A builder document: ``vertices`` and ``edges`` are lists of plain dicts (JSON-ready).

    Vertex: ``id``, ``kind`` (a palette kind), ``name``, ``params`` (dict), ``parallelism`` (int
    or None for the service's default), ``x``, ``y``. Edge: ``id``, ``source``/``target`` (vertex
    ids), ``source_ordinal``, ``target_ordinal``, ``routing``, ``key`` (code, for partitioned),
    ``queue_size``, ``priority``. Every edit goes through a method that records undo history and
    calls ``on_change`` (the widget's sync hook).
    """

    def __init__(self, palette: Palette | None = None, namespace: dict[str, Any] | None = None):
        self.palette = palette or Palette()
        #: the globals that built functions and ``expr`` parameters see (the notebook's namespace)
        self.namespace: dict[str, Any] = namespace if namespace is not None else {}
        self.vertices: list[dict[str, Any]] = []
        self.edges: list[dict[str, Any]] = []
        #: supplier objects of "custom" vertices (imported from a DAG), by vertex id
        self.suppliers: dict[str, Any] = {}
        self._next = 1
        self._undo: list[str] = []
        self._redo: list[str] = []
        self.on_change: Callable[[], None] | None = None

    # ------------------------------------------------------------------------ lookup

    def vertex(self, ref: str) -> dict[str, Any]:
        """A vertex by id or by name."""
        for v in self.vertices:
            if v["id"] == ref:
                return v
        for v in self.vertices:
            if v["name"] == ref:
                return v
        raise BuilderError(f"no vertex {ref!r}")

    def edge(self, eid: str) -> dict[str, Any]:
        for e in self.edges:
            if e["id"] == eid:
                return e
        raise BuilderError(f"no edge {eid!r}")

    def _new_id(self, prefix: str) -> str:
        used = {v["id"] for v in self.vertices} | {e["id"] for e in self.edges}
        while f"{prefix}{self._next}" in used:
            self._next += 1
        nid = f"{prefix}{self._next}"
        self._next += 1
        return nid

    def _unique_name(self, base: str, skip: str | None = None) -> str:
        names = {v["name"] for v in self.vertices if v["id"] != skip}
        if base not in names:
            return base
        i = 2
        while f"{base}-{i}" in names:
            i += 1
        return f"{base}-{i}"

    # ------------------------------------------------------------------------ history

    def snapshot(self) -> str:
        return json.dumps({"v": self.vertices, "e": self.edges}, separators=(",", ":"))

    def _restore(self, snap: str) -> None:
        data = json.loads(snap)
        self.vertices, self.edges = data["v"], data["e"]

    def _record(self) -> None:
        self._undo.append(self.snapshot())
        del self._undo[:-HISTORY_LIMIT]
        self._redo.clear()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    @property
    def can_redo(self) -> bool:
        return bool(self._redo)

    def undo(self) -> bool:
        if not self._undo:
            return False
        self._redo.append(self.snapshot())
        self._restore(self._undo.pop())
        self._changed()
        return True

    def redo(self) -> bool:
        if not self._redo:
            return False
        self._undo.append(self.snapshot())
        self._restore(self._redo.pop())
        self._changed()
        return True

    # ------------------------------------------------------------------------ edits

    def add_vertex(self, kind: str, name: str | None = None, params: dict[str, Any] | None = None,
                   parallelism: int | None = None, x: float | None = None, y: float | None = None) -> str:
        """Add a vertex of palette ``kind``; returns its id. Unset params take the kind's defaults."""
        k = self.palette.kind(kind)
        if k is None:
            raise BuilderError(f"unknown palette kind {kind!r}")
        values = k.defaults()
        unknown = set(params or {}) - set(values)
        if unknown:
            raise BuilderError(f"{kind}: unknown parameter(s) {sorted(unknown)}")
        values.update(params or {})
        if x is None or y is None:
            x, y = self._free_spot()
        self._record()
        vid = self._new_id("v")
        base = name or (kind.split(":", 1)[1] if ":" in kind else kind)
        self.vertices.append(_vertex(vid, kind, self._unique_name(base), values, parallelism, x, y))
        self._changed()
        return vid

    def _free_spot(self) -> tuple[float, float]:
        if not self.vertices:
            return 40.0, 40.0
        right = max(v["x"] for v in self.vertices)
        return right + NODE_W + GAP_X, 40.0

    def would_cycle(self, source: str, target: str) -> bool:
        """True if an edge source -> target would close a cycle (target already reaches source)."""
        if source == target:
            return True
        out: dict[str, list[str]] = {}
        for e in self.edges:
            out.setdefault(e["source"], []).append(e["target"])
        seen, stack = set(), [target]
        while stack:
            v = stack.pop()
            if v == source:
                return True
            if v not in seen:
                seen.add(v)
                stack.extend(out.get(v, ()))
        return False

    def connect(self, source: str, target: str, source_ordinal: int | None = None,
                target_ordinal: int | None = None, routing: str = "unicast", key: str = "",
                queue_size: int = DEFAULT_QUEUE_SIZE, priority: int = 0) -> str:
        """Add an edge (vertex ids or names); ordinals default to the next free ones. A connection
        that would close a cycle is refused with `BuilderError`."""
        s, t = self.vertex(source), self.vertex(target)
        if self.would_cycle(s["id"], t["id"]):
            raise BuilderError(f"refused: {s['name']} -> {t['name']} would create a cycle")
        for v, role, has in ((s, "output", "outputs"), (t, "input", "inputs")):
            k = self.palette.kind(v["kind"])
            if k is not None and not getattr(k, has):
                raise BuilderError(f"refused: {v['name']} ({v['kind']}) has no {role}")
        if source_ordinal is None:
            source_ordinal = len([e for e in self.edges if e["source"] == s["id"]])
        if target_ordinal is None:
            target_ordinal = len([e for e in self.edges if e["target"] == t["id"]])
        if routing not in ROUTINGS:
            raise BuilderError(f"routing must be one of {ROUTINGS}, got {routing!r}")
        self._record()
        eid = self._new_id("e")
        self.edges.append({"id": eid, "source": s["id"], "target": t["id"], "source_ordinal": int(source_ordinal),
                           "target_ordinal": int(target_ordinal), "routing": routing, "key": key,
                           "queue_size": queue_size, "priority": priority})
        self._changed()
        return eid

    def update_vertex(self, ref: str, **changes: Any) -> None:
        """Change ``name``, ``parallelism``, ``x``/``y`` or ``params`` (a dict merged into the params)."""
        v = self.vertex(ref)
        allowed = {"name", "parallelism", "params", "x", "y"}
        if set(changes) - allowed:
            raise BuilderError(f"update_vertex: unknown field(s) {sorted(set(changes) - allowed)}")
        self._record()
        if "params" in changes:
            v["params"] = {**v["params"], **changes.pop("params")}
        if "parallelism" in changes:
            p = changes.pop("parallelism")
            v["parallelism"] = None if p in (None, "") else _int(p, "parallelism")
        for name in ("x", "y"):
            if name in changes:
                v[name] = float(changes.pop(name))
        if "name" in changes:
            v["name"] = str(changes.pop("name")).strip()
        self._changed()

    def update_edge(self, eid: str, **changes: Any) -> None:
        """Change ``routing``, ``key``, ``queue_size``, ``priority`` or the ordinals of an edge."""
        e = self.edge(eid)
        allowed = {"routing", "key", "queue_size", "priority", "source_ordinal", "target_ordinal"}
        if set(changes) - allowed:
            raise BuilderError(f"update_edge: unknown field(s) {sorted(set(changes) - allowed)}")
        if "routing" in changes and changes["routing"] not in ROUTINGS:
            raise BuilderError(f"routing must be one of {ROUTINGS}, got {changes['routing']!r}")
        self._record()
        for name, value in changes.items():
            e[name] = value if name in ("routing", "key") else _int(value, name)
        self._changed()

    def move(self, positions: dict[str, tuple[float, float]]) -> None:
        """Set positions ``{vertex id: (x, y)}`` (one undo step)."""
        self._record()
        for vid, (x, y) in positions.items():
            v = self.vertex(vid)
            v["x"], v["y"] = float(x), float(y)
        self._changed()

    def remove(self, *refs: str) -> None:
        """Remove vertices (by id or name, with their edges) and edges (by id)."""
        edge_ids = {e["id"] for e in self.edges}
        vids = {self.vertex(r)["id"] for r in refs if r not in edge_ids}
        eids = {r for r in refs if r in edge_ids}
        self._record()
        self.edges = [e for e in self.edges
                      if e["id"] not in eids and e["source"] not in vids and e["target"] not in vids]
        self.vertices = [v for v in self.vertices if v["id"] not in vids]
        for vid in vids:
            self.suppliers.pop(vid, None)
        self._changed()

    def clear(self) -> None:
        self._record()
        self.vertices, self.edges = [], []
        self.suppliers.clear()
        self._changed()

    def set_supplier(self, ref: str, supplier: Any) -> None:
        """Attach a supplier object to a "custom" vertex (one loaded from JSON has none)."""
        v = self.vertex(ref)
        if v["kind"] != "custom":
            raise BuilderError(f"{v['name']} is a {v['kind']!r} vertex, not a custom one")
        self.suppliers[v["id"]] = supplier
        self._changed()

    # ------------------------------------------------------------------------ layout

    def layout(self) -> None:
        """Place vertices in layers (longest path from a source), left to right (one undo step)."""
        self._record()
        self._layout()
        self._changed()

    def _layout(self) -> None:
        ids = [v["id"] for v in self.vertices]
        preds: dict[str, list[str]] = {i: [] for i in ids}
        for e in self.edges:
            if e["target"] in preds and e["source"] in preds:
                preds[e["target"]].append(e["source"])
        layer: dict[str, int] = {}

        def depth(i: str, trail: frozenset) -> int:
            if i in layer:
                return layer[i]
            if i in trail:  # a cycle: cut it here
                return 0
            d = max((depth(p, trail | {i}) + 1 for p in preds[i]), default=0)
            layer[i] = d
            return d

        for i in ids:
            depth(i, frozenset())
        rows: dict[int, int] = {}
        # order within a layer: by the mean row of the predecessors (fewer crossings), then as added
        order: dict[str, float] = {}
        for i in sorted(ids, key=lambda i: layer[i]):
            ps = [order[p] for p in preds[i] if p in order]
            order[i] = sum(ps) / len(ps) if ps else float(len(order))
        for i in sorted(ids, key=lambda i: (layer[i], order[i])):
            r = rows.get(layer[i], 0)
            rows[layer[i]] = r + 1
            v = self.vertex(i)
            v["x"] = 40.0 + layer[i] * (NODE_W + GAP_X)
            v["y"] = 40.0 + r * (NODE_H + GAP_Y)

    # ------------------------------------------------------------------------ validation

    def problems(self) -> list[Problem]:
        """Everything wrong with the document, each on the vertex or edge at fault; [] if it can run."""
        problems: list[Problem] = []
        add = problems.append
        by_id = {v["id"]: v for v in self.vertices}
        names: dict[str, int] = {}
        for v in self.vertices:
            names[v["name"]] = names.get(v["name"], 0) + 1
        for v in self.vertices:
            vid, kind = v["id"], self.palette.kind(v["kind"])
            if not v["name"]:
                add(Problem("vertex", vid, "the name is empty"))
            elif names[v["name"]] > 1:
                add(Problem("vertex", vid, f"duplicate name {v['name']!r}"))
            lp = v["parallelism"]
            if lp is not None and (not isinstance(lp, int) or isinstance(lp, bool) or lp < 1):
                add(Problem("vertex", vid, f"local parallelism must be >= 1, got {lp}"))
            if kind is None:
                add(Problem("vertex", vid, f"unknown kind {v['kind']!r} (register it in the palette)"))
                continue
            for param in kind.params:
                msg = _check_param(param, v["params"].get(param.name), v["params"])
                if msg:
                    add(Problem("vertex", vid, f"{param.name}: {msg}"))
            if v["kind"] == "custom" and vid not in self.suppliers:
                add(Problem("vertex", vid, "no supplier attached (set_supplier(); a saved custom vertex keeps "
                                           "only its label)"))
            inbound = [e for e in self.edges if e["target"] == vid]
            outbound = [e for e in self.edges if e["source"] == vid]
            if kind.inputs and not inbound:
                add(Problem("vertex", vid, "input not connected"))
            if kind.outputs and not kind.inputs and not outbound:
                add(Problem("vertex", vid, "output not connected", "warning"))
            for edges_, direction, field_ in ((inbound, "inbound", "target_ordinal"),
                                              (outbound, "outbound", "source_ordinal")):
                msg = _ordinal_problem([e[field_] for e in edges_], direction)
                if msg:
                    add(Problem("vertex", vid, msg))
        cyclic = self._cyclic_edges()
        for e in self.edges:
            eid = e["id"]
            s, t = by_id.get(e["source"]), by_id.get(e["target"])
            if s is None or t is None:
                add(Problem("edge", eid, "an end of this edge is not a vertex"))
                continue
            if eid in cyclic:
                add(Problem("edge", eid, "this edge is part of a cycle"))
            if e["routing"] not in ROUTINGS:
                add(Problem("edge", eid, f"unknown routing {e['routing']!r}"))
            if e["routing"] == "partitioned" and eid not in self.suppliers:
                msg = check_code(e.get("key") or "", ("x",))
                if msg:
                    add(Problem("edge", eid, f"key: {'a partitioned edge needs a key' if msg == 'empty code' else msg}"))
            qs = e.get("queue_size")
            if not isinstance(qs, int) or isinstance(qs, bool) or qs < 1:
                add(Problem("edge", eid, f"queue size must be an int >= 1, got {qs!r}"))
            if not isinstance(e.get("priority"), int):
                add(Problem("edge", eid, f"priority must be an int, got {e.get('priority')!r}"))
            for f in ("source_ordinal", "target_ordinal"):
                if not isinstance(e.get(f), int) or e[f] < 0:
                    add(Problem("edge", eid, f"{f.replace('_', ' ')} must be an int >= 0"))
            if e["routing"] == "isolated":
                up, down = s["parallelism"], t["parallelism"]
                if isinstance(up, int) and isinstance(down, int) and down < up:
                    add(Problem("edge", eid, f"isolated: consumer parallelism ({down}) < producer's ({up})"))
        if cyclic:
            for vid in {self.edge(eid)["source"] for eid in cyclic}:
                add(Problem("vertex", vid, "on a cycle"))
        if not any(p.level == "error" for p in problems):
            problems.extend(self._engine_check())
        return problems

    def _engine_check(self) -> list[Problem]:
        """`DAG.validate()` on a skeleton of the document (placeholder suppliers, no code run):
        whatever the engine rejects that the checks above missed lands on the vertex it names."""
        try:
            dag = self._skeleton()
            dag.validate()
        except DagError as exc:
            text = str(exc)
            for v in self.vertices:
                if f"'{v['name']}'" in text:
                    return [Problem("vertex", v["id"], text)]
            return [Problem("dag", "", text)]
        return []

    def _skeleton(self) -> DAG:
        dag = DAG()
        vs = {v["id"]: dag.new_vertex(v["name"], _placeholder, v["parallelism"]) for v in self.vertices}
        for e in self.edges:
            edge = Edge.from_(vs[e["source"]], e["source_ordinal"]).to(vs[e["target"]], e["target_ordinal"])
            dag.edge(_route(edge, e["routing"], _placeholder_key))
        return dag

    def _cyclic_edges(self) -> set[str]:
        """Ids of edges inside a strongly connected component (Tarjan), self-loops included."""
        out: dict[str, list[str]] = {v["id"]: [] for v in self.vertices}
        for e in self.edges:
            if e["source"] in out and e["target"] in out:
                out[e["source"]].append(e["target"])
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        comp: dict[str, int] = {}
        stack: list[str] = []
        counter = [0]

        def strong(v: str) -> None:  # recursive: fine below ~900 vertices
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            for w in out[v]:
                if w not in index:
                    strong(w)
                    low[v] = min(low[v], low[w])
                elif w not in comp:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    comp[w] = index[v]
                    if w == v:
                        break

        for v in out:
            if v not in index:
                strong(v)
        return {e["id"] for e in self.edges
                if e["source"] in comp and e["target"] in comp and comp[e["source"]] == comp[e["target"]]}

    def problems_json(self) -> dict[str, Any]:
        """Problems grouped for the front end: ``{"vertices": {id: [...]}, "edges": {...}, "dag": [...]}``."""
        grouped: dict[str, Any] = {"vertices": {}, "edges": {}, "dag": []}
        for p in self.problems():
            if p.target == "dag":
                grouped["dag"].append(p.to_json())
            else:
                grouped["vertices" if p.target == "vertex" else "edges"].setdefault(p.id, []).append(p.to_json())
        return grouped

    # ------------------------------------------------------------------------ to a DAG

    def to_dag(self) -> DAG:
        """A real `jetbench.DAG`: code is compiled into functions (and ``expr`` parameters evaluated)
        now. Raises `BuilderError` listing the problems if the document has errors."""
        errors = [p for p in self.problems() if p.level == "error"]
        if errors:
            raise BuilderError("the DAG has problems:\n" + "\n".join(f"  - {self._where(p)}: {p.message}" for p in errors))
        dag = DAG()
        vs = {}
        for v in self.vertices:
            vs[v["id"]] = dag.new_vertex(v["name"], self._supplier(v), v["parallelism"])
        for e in self.edges:
            edge = Edge.from_(vs[e["source"]], e["source_ordinal"]).to(vs[e["target"]], e["target_ordinal"])
            key = None
            if e["routing"] == "partitioned" and e["id"] in self.suppliers:
                key = self.suppliers[e["id"]]  # a key function imported from a DAG, not as text
            elif e["routing"] == "partitioned":
                label = f"{self.vertex(e['source'])['name']}->{self.vertex(e['target'])['name']}.key"
                key = compile_function(e["key"], ("x",), self.namespace, label)
            _route(edge, e["routing"], key).queue_size(e["queue_size"]).priority(e["priority"])
            dag.edge(edge)
        return dag

    def _supplier(self, v: dict[str, Any]) -> Any:
        if v["kind"] == "custom":
            return self.suppliers[v["id"]]
        kind = self.palette.kind(v["kind"])
        params = v["params"]
        fns: dict[str, Any] = {}
        for p in kind.params:
            if p.type == "code":
                code = params.get(p.name) or ""
                if not code.strip() or (p.name == "value" and not OPS.get(params.get("op"))):
                    fns[p.name] = None
                else:
                    fns[p.name] = compile_function(code, p.args, self.namespace, f"{v['name']}.{p.name}")
        try:
            return kind.build(params, fns, self.namespace)
        except BuilderError:
            raise
        except Exception as exc:
            raise BuilderError(f"vertex {v['name']!r}: {type(exc).__name__}: {exc}") from exc

    def _where(self, p: Problem) -> str:
        if p.target == "vertex":
            return f"vertex {self.vertex(p.id)['name']!r}"
        if p.target == "edge":
            e = self.edge(p.id)
            s, t = self._name_of(e["source"]), self._name_of(e["target"])
            return f"edge {s}[{e['source_ordinal']}] -> {t}[{e['target_ordinal']}]"
        return "DAG"

    def _name_of(self, vid: str) -> str:
        try:
            return self.vertex(vid)["name"]
        except BuilderError:
            return vid

    # ------------------------------------------------------------------------ from a DAG

    def load_dag(self, dag: Any) -> None:
        """Replace the document by ``dag`` (a `DAG` or a `Pipeline`), laid out automatically.

        Suppliers the palette knows become editable vertices with their code as text; any other
        supplier becomes a "custom" vertex holding the object itself."""
        if hasattr(dag, "to_dag") and not isinstance(dag, DAG):
            dag = dag.to_dag()
        self._record()
        self.vertices, self.edges, self.suppliers = [], [], {}
        ids = {}
        for vertex in dag.vertices:
            kind, params = self._import_supplier(vertex.supplier)
            vid = self._new_id("v")
            ids[vertex.name] = vid
            self.vertices.append(_vertex(vid, kind, vertex.name, params, vertex.local_parallelism, 0, 0))
            if kind == "custom":
                self.suppliers[vid] = vertex.supplier
        for edge in dag.edges:
            key = ""
            if edge.routing is Routing.PARTITIONED:
                key = _fn_code(edge.key_fn) or ""
            self.edges.append({"id": self._new_id("e"), "source": ids[edge.source.name],
                               "target": ids[edge.destination.name], "source_ordinal": edge.source_ordinal,
                               "target_ordinal": edge.destination_ordinal, "routing": edge.routing.value,
                               "key": key, "queue_size": edge.edge_queue_size, "priority": edge.edge_priority})
            if edge.routing is Routing.PARTITIONED and not key:
                # a key function we cannot show as text: keep the function itself
                self.suppliers[self.edges[-1]["id"]] = edge.key_fn
        self._layout()
        self._changed()

    def _import_supplier(self, supplier: Any) -> tuple[str, dict[str, Any]]:
        from ...core.processor import Processor
        from ...processors.connectors import FilesSource, GeneratorSource
        from ...processors.sinks import CollectSink, NoopSinkP
        from ...processors.sources import ItemsSource
        from ...processors.transforms import TransformSupplier
        from ...processors.watermarks import InsertWatermarks

        custom = ("custom", {"label": _label(supplier)})
        if isinstance(supplier, ItemsSource):
            text = _literal_code(supplier.items)
            return ("items", {"items": text}) if text is not None else custom
        if isinstance(supplier, TransformSupplier):
            t = supplier.transform
            if len(t.steps) == 1 and not t.timestamped:
                step, fn = t.steps[0]
                code = _fn_code(fn)
                if code is not None:
                    return step, {"fn": code}
            return custom
        if isinstance(supplier, GeneratorSource):
            item_fn = "" if supplier.item_fn is None else _fn_code(supplier.item_fn, "s")
            if item_fn is None:
                return custom
            return "generator", {"rate_per_s": float(supplier.rate_per_s), "count": supplier.count,
                                 "timestamped": bool(supplier.timestamped), "item_fn": item_fn}
        if isinstance(supplier, FilesSource):
            return "files", {"pattern": supplier.glob_pattern, "encoding": supplier.encoding}
        if isinstance(supplier, InsertWatermarks):
            ts = "" if supplier.ts_fn is None else _fn_code(supplier.ts_fn)
            if ts is None:
                return custom
            return "insert_watermarks", {"ts": ts, "allowed_lag": supplier.allowed_lag,
                                         "throttle_frame": supplier.throttle_frame}
        if isinstance(supplier, CollectSink):
            return "collect", {}
        if supplier is NoopSinkP:
            return "noop", {}
        if isinstance(supplier, type) and issubclass(supplier, Processor):
            path = class_path(supplier)
            for k in self.palette.kinds():
                if k.preset.get("cls") == path:
                    return k.id, {"cls": path}
            return "processor", {"cls": path}
        return custom

    # ------------------------------------------------------------------------ to Python code

    def to_code(self, dag_name: str = "dag") -> str:
        """Python source that rebuilds this DAG (``exec`` it to get an equal DAG in ``dag_name``).

        Custom vertices read their supplier from a dict ``custom_suppliers`` (by vertex name) that
        the code expects to find (`BuilderModel.custom_suppliers` gives it)."""
        imports = {"from jetbench import DAG, Edge"}
        defs: list[str] = []
        body: list[str] = [f"{dag_name} = DAG()"]
        var_of: dict[str, str] = {}
        used: set[str] = set()
        for v in self.vertices:
            var = _identifier(v["name"], used)
            var_of[v["id"]] = var
            kind = self.palette.kind(v["kind"])
            if kind is None:
                raise BuilderError(f"vertex {v['name']!r}: unknown kind {v['kind']!r}")
            if v["kind"] == "custom":
                expr = f"custom_suppliers[{v['name']!r}]"
            else:
                fns: dict[str, str | None] = {}
                for p in kind.params:
                    if p.type != "code":
                        continue
                    code = v["params"].get(p.name) or ""
                    if not code.strip() or (p.name == "value" and not OPS.get(v["params"].get("op"))):
                        fns[p.name] = None
                        continue
                    fns[p.name] = lambda_source(code, p.args)
                    if fns[p.name] is None:
                        fname = f"{var}_{p.name}"
                        defs.append(function_source(code, p.args, fname))
                        fns[p.name] = fname
                expr, needs = kind.code(v["params"], fns)
                imports |= needs
            lp = "" if v["parallelism"] is None else f", local_parallelism={v['parallelism']}"
            body.append(f"{var} = {dag_name}.new_vertex({v['name']!r}, {expr}{lp})")
        for e in self.edges:
            chain = f"Edge.from_({var_of[e['source']]}, {e['source_ordinal']}).to({var_of[e['target']]}, {e['target_ordinal']})"
            routing = e["routing"]
            if routing == "partitioned" and e["id"] in self.suppliers:
                chain += f".partitioned(custom_suppliers[{self._edge_label(e)!r}])"
            elif routing == "partitioned":
                key = lambda_source(e["key"], ("x",))
                if key is None:
                    fname = f"key_{var_of[e['source']]}_{var_of[e['target']]}"
                    defs.append(function_source(e["key"], ("x",), fname))
                    key = fname
                chain += f".partitioned({key})"
            elif routing != "unicast":
                chain += f".{routing.replace('-', '_')}()"
            if e["queue_size"] != DEFAULT_QUEUE_SIZE:
                chain += f".queue_size({e['queue_size']})"
            if e["priority"]:
                chain += f".priority({e['priority']})"
            body.append(f"{dag_name}.edge({chain})")
        parts = [_merge_imports(imports)]
        if defs:
            parts.append("\n\n".join(d.rstrip() for d in defs))
        parts.append("\n".join(body))
        return "\n\n\n".join(parts) + "\n"

    @property
    def custom_suppliers(self) -> dict[str, Any]:
        """``{vertex name: supplier}`` of the custom vertices (what `to_code`'s output expects)."""
        found = {v["name"]: self.suppliers[v["id"]] for v in self.vertices if v["id"] in self.suppliers}
        found.update({self._edge_label(e): self.suppliers[e["id"]] for e in self.edges if e["id"] in self.suppliers})
        return found

    def _edge_label(self, e: dict[str, Any]) -> str:
        """How `to_code` names an opaque key function: ``"source->target"``."""
        return f"{self._name_of(e['source'])}->{self._name_of(e['target'])}"

    # ------------------------------------------------------------------------ JSON

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, "vertices": copy.deepcopy(self.vertices),
                "edges": copy.deepcopy(self.edges)}

    def save(self, path: str | os.PathLike) -> None:
        """Write the document as compact JSON (code as text; custom suppliers keep their label only)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, separators=(",", ":"))
            f.write("\n")

    def load_json(self, data: dict[str, Any]) -> None:
        """Replace the document by saved data. Nothing is executed: code stays text."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise BuilderError(f"not a {FORMAT} document")
        if data.get("version") != VERSION:
            raise BuilderError(f"unsupported {FORMAT} version {data.get('version')!r}")
        vertices, edges = [], []
        for v in data.get("vertices", []):
            vertices.append(_vertex(str(v["id"]), str(v["kind"]), str(v["name"]), dict(v.get("params") or {}),
                                    v.get("parallelism"), v.get("x", 0), v.get("y", 0)))
        for e in data.get("edges", []):
            edges.append({"id": str(e["id"]), "source": str(e["source"]), "target": str(e["target"]),
                          "source_ordinal": e.get("source_ordinal", 0), "target_ordinal": e.get("target_ordinal", 0),
                          "routing": e.get("routing", "unicast"), "key": e.get("key", ""),
                          "queue_size": e.get("queue_size", DEFAULT_QUEUE_SIZE), "priority": e.get("priority", 0)})
        self._record()
        self.vertices, self.edges, self.suppliers = vertices, edges, {}
        self._changed()

    def load(self, path: str | os.PathLike) -> None:
        with open(path, encoding="utf-8") as f:
            self.load_json(json.load(f))


# ---------------------------------------------------------------------------------- helpers


def _placeholder() -> None:  # pragma: no cover - never called: skeleton DAGs are only validated
    return None


def _placeholder_key(x: Any) -> None:  # pragma: no cover
    return None


def _route(edge: Edge, routing: str, key: Any) -> Edge:
    if routing == "partitioned":
        return edge.partitioned(key)
    return getattr(edge, {"all-to-one": "all_to_one"}.get(routing, routing))()


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise BuilderError(f"{what} must be an int, got {value!r}")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise BuilderError(f"{what} must be an int, got {value!r}") from None


def _check_param(param: Any, value: Any, params: dict[str, Any]) -> str | None:
    if param.name == "value" and not OPS.get(params.get("op")):
        return None  # not used by this operation
    window = params.get("window")
    if param.name in ("slide",) and window != "sliding" or param.name == "gap" and window != "session" \
            or param.name == "size" and window == "session":
        return None
    if param.optional and value in (None, ""):
        return None
    if param.type == "code":
        return check_code(value or "", param.args)
    if param.type == "expr":
        return check_expr(value or "")
    if param.type == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be an int, got {value!r}"
        if param.name in ("count",) and value < 0 or param.name in ("size", "slide", "gap", "throttle_frame") \
                and value <= 0:
            return f"must be {'>= 0' if param.name == 'count' else '> 0'}, got {value}"
    if param.type == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"must be a number, got {value!r}"
        if param.name == "rate_per_s" and value <= 0:
            return f"must be > 0, got {value}"
        if value < 0:
            return f"must be >= 0, got {value}"
    if param.type == "bool" and not isinstance(value, bool):
        return f"must be true or false, got {value!r}"
    if param.type == "choice" and value not in param.choices:
        return f"must be one of {', '.join(param.choices)}, got {value!r}"
    if param.type == "str" and (not isinstance(value, str) or (param.name in ("cls", "pattern") and not value.strip())):
        return "must not be empty" if isinstance(value, str) else f"must be text, got {value!r}"
    if param.name == "window" and value == "sliding":
        size, slide = params.get("size"), params.get("slide")
        if isinstance(size, int) and isinstance(slide, int) and slide > 0 and size % slide:
            return f"size ({size}) must be a multiple of slide ({slide})"
    return None


def _ordinal_problem(ordinals: list[int], direction: str) -> str | None:
    if not all(isinstance(o, int) for o in ordinals):
        return None  # reported on the edge
    seen = sorted(ordinals)
    if len(set(seen)) < len(seen):
        dup = next(o for i, o in enumerate(seen[1:]) if o == seen[i])
        return f"duplicate {direction} ordinal {dup}"
    if seen and seen != list(range(len(seen))):
        return f"{direction} ordinals must be 0..{len(seen) - 1} without gaps, got {seen}"
    return None


def _label(supplier: Any) -> str:
    if isinstance(supplier, type):
        return class_path(supplier)
    try:
        text = repr(supplier)
    except Exception:  # a broken __repr__ must not stop an import
        text = type(supplier).__name__
    return text if len(text) <= 80 else text[:77] + "..."


def _literal_code(value: Any) -> str | None:
    """Source text that evaluates to ``value``: a range, or a literal (checked by `ast.literal_eval`)."""
    if isinstance(value, range):
        return repr(value)
    if isinstance(value, list | tuple | str | bytes | dict | set | frozenset):
        text = repr(value)
        if len(text) > 10_000:
            return None
        try:
            if ast.literal_eval(text) == value:
                return text
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    return None


def _fn_code(fn: Any, arg: str = "x") -> str | None:
    """The code text of a function, as an expression in ``arg`` when possible, else None.

    Builder-made functions keep their text; a one-argument lambda is read back from its source
    (its parameter renamed to ``arg``); a named module-level function becomes ``name(arg)``
    (the namespace or an import must provide it).
    """
    code = getattr(fn, "__jetbench_code__", None)
    if isinstance(code, str):
        return code
    if getattr(fn, "__name__", "") == "<lambda>":
        return _lambda_text(fn, arg)
    name = getattr(fn, "__qualname__", "")
    if callable(fn) and name.isidentifier():
        return f"{name}({arg})"
    return None


def _lambda_text(fn: Any, arg: str) -> str | None:
    try:
        lines, _ = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    source = textwrap.dedent("".join(lines))
    tree = None
    for attempt in (source, source.strip().rstrip(",")):
        for candidate in (attempt, f"({attempt})", f"_ = {attempt}"):
            try:
                tree = ast.parse(candidate)
                break
            except SyntaxError:
                continue
        if tree is not None:
            break
    if tree is None:
        return None
    code = fn.__code__
    lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and len(n.args.args) == code.co_argcount == 1
               and not n.args.vararg and not n.args.kwarg and not n.args.kwonlyargs]
    if len(lambdas) != 1:  # several lambdas on the same lines: which one is ambiguous
        return None
    node = lambdas[0]
    old = node.args.args[0].arg
    body = node.body
    if old != arg:
        if any(isinstance(n, ast.Name) and n.id == arg for n in ast.walk(body)):
            return None  # renaming would capture another name
        body = _Rename(old, arg).visit(body)
    return ast.unparse(body)


class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str):
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id == self.old:
            return ast.copy_location(ast.Name(self.new, node.ctx), node)
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.Lambda:
        if any(a.arg == self.old for a in node.args.args):
            return node  # shadowed
        self.generic_visit(node)
        return node


def _merge_imports(lines: set[str]) -> str:
    """``from m import a`` + ``from m import b`` -> ``from m import a, b``; sorted."""
    froms: dict[str, set[str]] = {}
    plain = set()
    for line in lines:
        match = re.fullmatch(r"from (\S+) import (.+)", line)
        if match:
            froms.setdefault(match[1], set()).update(n.strip() for n in match[2].split(","))
        else:
            plain.add(line)
    out = sorted(plain) + [f"from {m} import {', '.join(sorted(ns))}" for m, ns in sorted(froms.items())]
    return "\n".join(out)


def _identifier(name: str, used: set[str]) -> str:
    # Always prefixed, so a vertex variable never shadows a function its own code calls
    # (a vertex "tokenize" running ``tokenize(x)``).
    base = "v_" + (re.sub(r"\W", "_", name).strip("_") or "vertex")
    candidate, i = base, 2
    while candidate in used:
        candidate = f"{base}_{i}"
        i += 1
    used.add(candidate)
    return candidate
