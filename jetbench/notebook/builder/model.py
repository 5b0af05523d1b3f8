"""The DAG builder's document, without any widget: vertices and edges as plain data, edits with
undo/redo, validation per vertex and edge, conversion to a `jetbench.DAG`, import from a DAG or
Pipeline (`BuilderModel.load_dag`) and following it as it is edited in code
(`BuilderModel.refresh`), export as Python code, and a compact JSON form.

Function code stays text in the document: it is compiled to check it, and turned into functions
only by `BuilderModel.to_dag`. Loading JSON never runs code. A DAG built in code opens with its
functions as text where `readback.function_code` can show them; other suppliers stay objects
("custom" vertices, with the reason as an info note).

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
import dataclasses
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...core.dag import DAG, DEFAULT_QUEUE_SIZE, Edge, Routing
from ...core.errors import DagError
from .palette import (
    OPS,
    ROUTINGS,
    BuilderError,
    Kind,
    Palette,
    check_code,
    check_expr,
    check_steps,
    class_path,
    compile_function,
    function_source,
    lambda_source,
    parse_steps,
    steps_text,
)
from .readback import Unreadable, function_code

FORMAT = "jetbench-dag-builder"
VERSION = 1
NODE_W, NODE_H, GAP_X, GAP_Y = 170, 64, 90, 40
HISTORY_LIMIT = 200
_NOT_TAKEN = object()


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
        #: supplier objects of "custom" vertices (imported from a DAG), by vertex id; and key
        #: functions of partitioned edges that could not be shown as text, by edge id
        self.suppliers: dict[str, Any] = {}
        #: the DAG or Pipeline the document was loaded from (`load_dag`), which `refresh` reads
        self.source: Any = None
        self._base: _Imported | None = None
        self._source_print: Any = None
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
        """Add a vertex of palette ``kind``; returns its id. Unset params take the kind's defaults,
        an unset parallelism the kind's (None, the service's default, for most kinds)."""
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
        lp = k.parallelism if parallelism is None else parallelism
        self.vertices.append(_vertex(vid, kind, self._unique_name(base), values, lp, x, y))
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
                target_ordinal: int | None = None, routing: str | None = None, key: str | None = None,
                queue_size: int = DEFAULT_QUEUE_SIZE, priority: int | None = None) -> str:
        """Add an edge (vertex ids or names); ordinals default to the lowest free ones. A connection
        that would close a cycle, or go to an input a join does not have, is refused with
        `BuilderError`. Routing, key and priority left unset take the target kind's defaults for
        that input (a hash join's build side: broadcast, priority -1), else unicast."""
        s, t = self.vertex(source), self.vertex(target)
        if self.would_cycle(s["id"], t["id"]):
            raise BuilderError(f"refused: {s['name']} -> {t['name']} would create a cycle")
        for v, role, has in ((s, "output", "outputs"), (t, "input", "inputs")):
            k = self.palette.kind(v["kind"])
            if k is not None and not getattr(k, has):
                raise BuilderError(f"refused: {v['name']} ({v['kind']}) has no {role}")
        if source_ordinal is None:
            source_ordinal = _lowest_free(e["source_ordinal"] for e in self.edges if e["source"] == s["id"])
        if target_ordinal is None:
            target_ordinal = _lowest_free(e["target_ordinal"] for e in self.edges if e["target"] == t["id"])
        kind = self.palette.kind(t["kind"])
        if kind is not None and kind.in_ports and isinstance(target_ordinal, int) \
                and not 0 <= target_ordinal < len(kind.in_ports):
            raise BuilderError(f"refused: {t['name']} ({kind.label}) has inputs {_ports(kind)} only")
        defaults = kind.edge_defaults(t["params"], target_ordinal) if kind is not None and kind.edge_defaults else {}
        routing = defaults.get("routing", "unicast") if routing is None else routing
        key = defaults.get("key", "") if key is None else key
        priority = defaults.get("priority", 0) if priority is None else priority
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
            if kind.in_ports:
                for msg in _port_problems(kind, [e["target_ordinal"] for e in inbound]):
                    add(Problem("vertex", vid, msg))
            elif kind.inputs and not inbound:
                add(Problem("vertex", vid, "input not connected"))
            if kind.outputs and not kind.inputs and not outbound:
                add(Problem("vertex", vid, "output not connected", "warning"))
            for edges_, direction, field_ in ((inbound, "inbound", "target_ordinal"),
                                              (outbound, "outbound", "source_ordinal")):
                if direction == "inbound" and kind.in_ports:
                    continue
                msg = _ordinal_problem([e[field_] for e in edges_], direction)
                if msg:
                    add(Problem("vertex", vid, msg))
            if kind.check is not None:
                for msg, level in kind.check(v, inbound, outbound):
                    add(Problem("vertex", vid, msg, level))
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

    def notes(self) -> list[Problem]:
        """Things to know that are not problems (level "info"): why a vertex imported from code is
        opaque (kept as an object, not editable as code)."""
        return [Problem("vertex", v["id"], f"opaque: {v['params']['reason']}", "info") for v in self.vertices
                if v["kind"] == "custom" and v["params"].get("reason")]

    def problems_json(self) -> dict[str, Any]:
        """Problems and notes grouped for the front end, each with its level ("error", "warning",
        "info"): ``{"vertices": {id: [...]}, "edges": {...}, "dag": [...]}``."""
        grouped: dict[str, Any] = {"vertices": {}, "edges": {}, "dag": []}
        for p in self.problems() + self.notes():
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

        def define(code: str, args: tuple[str, ...], asynchronous: bool, what: str) -> Any:
            return compile_function(code, args, self.namespace, f"{v['name']}.{what}", asynchronous)

        fns = _functions(kind, params, define)
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

    # ------------------------------------------------------------------------ from code: DAG / Pipeline

    def load_dag(self, dag: Any) -> None:
        """Replace the document by ``dag`` (a `DAG`, or a `Pipeline` planned now), as one undo step.

        Suppliers the palette knows become editable vertices with their code as text; any other
        supplier becomes a "custom" vertex holding the object itself, with the reason in its
        ``reason`` parameter. Vertices named like ones already in the document keep their id and
        position; the others are laid out. ``dag`` is remembered as `source` for `refresh`.
        """
        imported = self._import(dag)
        self._record()
        kept = {v["name"]: v for v in self.vertices}
        self.vertices, self.edges, self.suppliers = [], [], {}
        new: list[str] = []
        for name, rec in imported.vertices.items():
            old = kept.get(name)
            vid = old["id"] if old is not None else self._new_id("v")
            x, y = (old["x"], old["y"]) if old is not None else (0.0, 0.0)
            self.vertices.append(_vertex(vid, rec["kind"], name, copy.deepcopy(rec["params"]), rec["parallelism"], x, y))
            if old is None:
                new.append(vid)
            if name in imported.suppliers:
                self.suppliers[vid] = imported.suppliers[name]
        for key, rec in imported.edges.items():
            self._add_imported_edge(key, rec, imported)
        if len(new) == len(self.vertices):
            self._layout()
        else:
            self._place(new)
        self._remember(dag, imported)
        self._changed()

    def refresh(self, force: bool = False) -> bool:
        """Bring in what changed in code in the `source` DAG or Pipeline since it was loaded (or
        last refreshed); True if anything did. One undo step.

        A three-way merge by vertex name (edges by their ends and ordinals): what the code
        added, changed or removed is applied to the document, and edits made in the builder to
        anything else stay. Where both changed the same vertex or edge, the code's version
        wins. A Pipeline is planned again. Unchanged sources are noticed cheaply (identity of
        suppliers and functions). ``force=True`` re-reads the source anyway and counts all of it
        as changed in code (its version wins; vertices only on the canvas stay), e.g. to bring
        back a refresh that was undone.

        >>> from jetbench import DAG, Edge
        >>> from jetbench.processors import collect_sink, items_source, map_processor
        >>> dag = DAG()
        >>> src = dag.new_vertex("src", items_source(range(3)))
        >>> out = dag.new_vertex("out", collect_sink())
        >>> _ = dag.edge(Edge.between(src, out))
        >>> m = BuilderModel()
        >>> m.load_dag(dag)
        >>> m.update_vertex("out", parallelism=1)        # an edit in the builder
        >>> sq = dag.new_vertex("square", map_processor(lambda x: x * x))   # edits in code
        >>> _ = dag.edge(Edge.between(src, sq))
        >>> m.refresh()
        True
        >>> [(v["name"], v["kind"], v["params"], v["parallelism"]) for v in m.vertices]
        [('src', 'items', {'items': 'range(0, 3)'}, None), ('out', 'collect', {}, 1), ('square', 'map', {'fn': 'x * x'}, None)]
        >>> m.refresh()
        False
        """
        source = self.source
        if source is None:
            return False
        fingerprint = _fingerprint(source)
        if not force and fingerprint is not None and fingerprint == self._source_print:
            return False
        theirs = self._import(source)
        base = self._base if self._base is not None and not force else _Imported()
        if not force and _same_import(base, theirs):
            self._source_print = fingerprint
            self._base = theirs  # fresh objects (a re-planned pipeline): use them from now on
            self._adopt_objects(theirs)
            return False
        self._record()
        self._merge(base, theirs)
        self._remember(source, theirs, fingerprint)
        self._changed()
        return True

    def _remember(self, source: Any, imported: _Imported, fingerprint: Any = _NOT_TAKEN) -> None:
        self.source = source
        self._base = imported
        self._source_print = _fingerprint(source) if fingerprint is _NOT_TAKEN else fingerprint

    def _adopt_objects(self, theirs: _Imported) -> None:
        """Use the supplier and key objects of a new import for the vertices still custom."""
        for v in self.vertices:
            if v["kind"] == "custom" and v["name"] in theirs.suppliers:
                self.suppliers[v["id"]] = theirs.suppliers[v["name"]]
        names = {v["id"]: v["name"] for v in self.vertices}
        for e in self.edges:
            key = (names.get(e["source"]), e["source_ordinal"], names.get(e["target"]), e["target_ordinal"])
            if e["id"] in self.suppliers and key in theirs.keys:
                self.suppliers[e["id"]] = theirs.keys[key]

    def _merge(self, base: _Imported, theirs: _Imported) -> None:
        mine = {v["name"]: v for v in self.vertices}
        new: list[str] = []
        for name, rec in theirs.vertices.items():
            old = base.vertices.get(name)
            v = mine.get(name)
            if old is not None and _vertex_rec(old) == _vertex_rec(rec):
                if v is not None and v["kind"] == "custom" and name in theirs.suppliers:
                    self.suppliers[v["id"]] = theirs.suppliers[name]
                continue
            if v is None:  # added in code (or changed in code after it was deleted here)
                v = _vertex(self._new_id("v"), rec["kind"], name, {}, None, 0, 0)
                self.vertices.append(v)
                mine[name] = v
                new.append(v["id"])
            v["kind"], v["params"], v["parallelism"] = rec["kind"], copy.deepcopy(rec["params"]), rec["parallelism"]
            if name in theirs.suppliers:
                self.suppliers[v["id"]] = theirs.suppliers[name]
            else:
                self.suppliers.pop(v["id"], None)
        gone = {mine[name]["id"] for name in base.vertices.keys() - theirs.vertices.keys() if name in mine}
        if gone:
            self.edges = [e for e in self.edges if e["source"] not in gone and e["target"] not in gone]
            self.vertices = [v for v in self.vertices if v["id"] not in gone]
            for vid in gone:
                self.suppliers.pop(vid, None)
        names = {v["id"]: v["name"] for v in self.vertices}
        current = {(names[e["source"]], e["source_ordinal"], names[e["target"]], e["target_ordinal"]): e
                   for e in self.edges if e["source"] in names and e["target"] in names}
        for key, rec in theirs.edges.items():
            old = base.edges.get(key)
            e = current.get(key)
            if old is not None and _edge_rec(old) == _edge_rec(rec):
                if e is not None and e["id"] in self.suppliers and key in theirs.keys:
                    self.suppliers[e["id"]] = theirs.keys[key]
                continue
            if e is None:
                self._add_imported_edge(key, rec, theirs)
                continue
            e.update({f: rec[f] for f in ("routing", "key", "queue_size", "priority")})
            if key in theirs.keys:
                self.suppliers[e["id"]] = theirs.keys[key]
            else:
                self.suppliers.pop(e["id"], None)
        for key in base.edges.keys() - theirs.edges.keys():
            e = current.get(key)
            if e is not None:
                self.edges.remove(e)
                self.suppliers.pop(e["id"], None)
        self._place([vid for vid in new if vid in names])

    def _add_imported_edge(self, key: tuple, rec: dict[str, Any], imported: _Imported) -> None:
        ids = {v["name"]: v["id"] for v in self.vertices}
        if key[0] not in ids or key[2] not in ids:
            return  # an end was deleted here: the edge has nothing to attach to
        eid = self._new_id("e")
        self.edges.append({"id": eid, "source": ids[key[0]], "target": ids[key[2]], "source_ordinal": key[1],
                           "target_ordinal": key[3], "routing": rec["routing"], "key": rec["key"],
                           "queue_size": rec["queue_size"], "priority": rec["priority"]})
        if key in imported.keys:
            self.suppliers[eid] = imported.keys[key]

    def _place(self, vids: list[str]) -> None:
        """Positions for new vertices next to placed ones: right of their producers (else left of
        their consumers), moved down until they overlap nothing."""
        if not vids:
            return
        pending = set(vids)
        by_id = {v["id"]: v for v in self.vertices}
        for vid in self._topological(vids):
            v = by_id[vid]
            preds = [by_id[e["source"]] for e in self.edges if e["target"] == vid and e["source"] not in pending]
            succs = [by_id[e["target"]] for e in self.edges if e["source"] == vid and e["target"] not in pending]
            if preds:
                x, y = max(p["x"] for p in preds) + NODE_W + GAP_X, sum(p["y"] for p in preds) / len(preds)
            elif succs:
                x, y = min(s["x"] for s in succs) - NODE_W - GAP_X, sum(s["y"] for s in succs) / len(succs)
            else:
                placed = [p for p in self.vertices if p["id"] not in pending]
                x, y = 40.0, (max(p["y"] for p in placed) + NODE_H + GAP_Y) if placed else 40.0
            others = [p for p in self.vertices if p["id"] not in pending]
            while any(abs(p["x"] - x) < NODE_W and abs(p["y"] - y) < NODE_H + GAP_Y / 2 for p in others):
                y += NODE_H + GAP_Y
            v["x"], v["y"] = float(x), float(y)
            pending.discard(vid)

    def _topological(self, vids: list[str]) -> list[str]:
        wanted, order, seen = set(vids), [], set()

        def visit(vid: str) -> None:
            if vid in seen:
                return
            seen.add(vid)
            for e in self.edges:
                if e["target"] == vid and e["source"] in wanted:
                    visit(e["source"])
            order.append(vid)

        for vid in vids:
            visit(vid)
        return order

    def _import(self, dag: Any) -> _Imported:
        """``dag`` (a DAG or a Pipeline) read as document records, keyed by vertex name."""
        if hasattr(dag, "to_dag") and not isinstance(dag, DAG):
            dag = dag.to_dag()
        if not isinstance(dag, DAG):
            raise BuilderError(f"expected a jetbench DAG or Pipeline, got {dag!r}")
        imported = _Imported()
        for vertex in dag.vertices:
            kind, params = self._import_supplier(vertex.supplier)
            imported.vertices[vertex.name] = {"kind": kind, "params": params, "parallelism": vertex.local_parallelism}
            if kind == "custom":
                imported.suppliers[vertex.name] = vertex.supplier
        for edge in dag.edges:
            key = (edge.source.name, edge.source_ordinal, edge.destination.name, edge.destination_ordinal)
            text = ""
            if edge.routing is Routing.PARTITIONED:
                try:
                    text = function_code(edge.key_fn, ("x",), self.namespace)
                except Unreadable:
                    imported.keys[key] = edge.key_fn  # a key we cannot show as text: keep the function
            imported.edges[key] = {"routing": edge.routing.value, "key": text, "queue_size": edge.edge_queue_size,
                                   "priority": edge.edge_priority}
        return imported

    def _import_supplier(self, supplier: Any) -> tuple[str, dict[str, Any]]:
        """``(palette kind, params)`` for a supplier, or ``("custom", {"label", "reason"})``."""
        try:
            found = self._read_supplier(supplier)
        except Unreadable as exc:
            return "custom", {"label": _label(supplier), "reason": str(exc)}
        if found is None:
            return "custom", {"label": _label(supplier), "reason": "the palette has no kind for this supplier"}
        kind_id, params = found
        kind = self.palette.kind(kind_id)
        if kind is None:
            return "custom", {"label": _label(supplier), "reason": f"the palette has no {kind_id!r} kind here"}
        values = kind.defaults()
        values.update(params)
        return kind_id, values

    def _read_supplier(self, supplier: Any) -> tuple[str, dict[str, Any]] | None:
        from ...core.processor import Processor
        from ...processors.aggregation import AggregateSupplier
        from ...processors.callback_sink import CallbackSink
        from ...processors.co_group import CoGroup
        from ...processors.collect_sink import CollectSink
        from ...processors.files_sink import FilesSink
        from ...processors.files_source import FilesSource
        from ...processors.generator_source import GeneratorSource
        from ...processors.hash_join import HashJoin
        from ...processors.insert_watermarks import InsertWatermarks
        from ...processors.items_source import ItemsSource
        from ...processors.latency_sink import LatencySink
        from ...processors.map_using_service import MapUsingService
        from ...processors.map_using_service_async import MapUsingServiceAsync
        from ...processors.noop_sink import NoopSinkP
        from ...processors.pandas_sink import PandasSink
        from ...processors.test_stream_source import TestStreamSource
        from ...processors.to_dict_sink import ToDictSink
        from ...processors.transform import TransformSupplier
        from ...processors.window_aggregate import WindowAggregate

        ns = self.namespace

        def code(fn: Any, what: str, args: tuple[str, ...] = ("x",), asynchronous: bool = False) -> str:
            try:
                return function_code(fn, args, ns, asynchronous)
            except Unreadable as exc:
                raise Unreadable(f"{what}: {exc}") from None

        def optional(fn: Any, what: str, args: tuple[str, ...] = ("x",)) -> str:
            return "" if fn is None else code(fn, what, args)

        def literal(value: Any, what: str) -> str:
            text = _literal_code(value)
            if text is None:
                raise Unreadable(f"its {what} are a {type(value).__name__}, not a literal the builder can show")
            return text

        if isinstance(supplier, ItemsSource):
            return "items", {"items": literal(supplier.items, "items")}
        if isinstance(supplier, TestStreamSource):
            return "test_stream", {"events": literal(list(supplier.events), "events")}
        if isinstance(supplier, TransformSupplier):
            t = supplier.transform
            steps = [(step, code(fn, f"step {i + 1} ({step})")) for i, (step, fn) in enumerate(t.steps)]
            if len(steps) == 1 and not t.timestamped:
                return steps[0][0], {"fn": steps[0][1]}
            return "transform", {"steps": steps_text(steps), "timestamped": t.timestamped,
                                 "keep_timestamps": t.keep_timestamps}
        if isinstance(supplier, GeneratorSource):
            return "generator", {"rate_per_s": float(supplier.rate_per_s), "count": supplier.count,
                                 "timestamped": bool(supplier.timestamped),
                                 "item_fn": optional(supplier.item_fn, "item_fn", ("s",))}
        if isinstance(supplier, FilesSource):
            return "files", {"pattern": supplier.glob_pattern, "encoding": supplier.encoding}
        if isinstance(supplier, InsertWatermarks):
            idle = supplier.idle_timeout_ms
            return "insert_watermarks", {"ts": optional(supplier.ts_fn, "ts"), "allowed_lag": supplier.allowed_lag,
                                         "throttle_frame": supplier.throttle_frame,
                                         "idle_timeout_ms": "" if idle is None else idle}
        if isinstance(supplier, AggregateSupplier):
            kind_id = {"accumulate_by_key": "accumulate_by_key", "aggregate_by_key": "aggregate_by_key",
                       "combine_by_key": "combine_by_key", "accumulate": "global_accumulate",
                       "combine": "global_combine", "aggregate": "global_aggregate"}.get(supplier.label)
            if kind_id is None:
                return None
            params = _read_op(supplier.op, code)
            if kind_id in ("accumulate_by_key", "aggregate_by_key"):
                params["key"] = code(supplier.key_fn, "key")
            return kind_id, params
        if isinstance(supplier, WindowAggregate):
            wd = supplier.window_def
            params = _read_op(supplier.op, code)
            params["key"] = optional(supplier.key_fn, "key")
            if wd.kind == "session":
                params.update(window="session", gap=wd.gap)
            else:
                params.update(window="tumbling" if wd.is_tumbling else "sliding", size=wd.size, slide=wd.slide)
            return "window", params
        if isinstance(supplier, HashJoin):
            return "hash_join", {"left_key": code(supplier.left_key, "left_key"),
                                 "right_key": code(supplier.right_key, "right_key"), "how": supplier.how,
                                 "timestamped": bool(supplier.timestamped)}
        if isinstance(supplier, CoGroup):
            return "co_group", {"left_key": code(supplier.left_key, "left_key"),
                                "right_key": code(supplier.right_key, "right_key")}
        if isinstance(supplier, MapUsingServiceAsync):
            return "map_using_service_async", {
                "service": code(supplier.service_factory, "service", ()),
                "fn": code(supplier.fn, "fn", ("service", "x"), asynchronous=True),
                "max_concurrent": supplier.max_concurrent, "preserve_order": bool(supplier.preserve_order),
                "timestamped": bool(supplier.timestamped)}
        if isinstance(supplier, MapUsingService):
            return "map_using_service", {"service": code(supplier.service_factory, "service", ()),
                                         "fn": code(supplier.fn, "fn", ("service", "x")),
                                         "timestamped": bool(supplier.timestamped)}
        if isinstance(supplier, CollectSink):
            return "collect", {}
        if isinstance(supplier, ToDictSink):
            return "to_dict", {}
        if isinstance(supplier, PandasSink):
            return "pandas", {}
        if isinstance(supplier, CallbackSink):
            return "callback", {"fn": code(supplier.fn, "fn")}
        if isinstance(supplier, FilesSink):
            return "files_sink", {"directory": supplier.directory, "encoding": supplier.encoding}
        if isinstance(supplier, LatencySink):
            return "latency", {"limit": supplier.limit}
        if supplier is NoopSinkP:
            return "noop", {}
        if type(supplier).__module__ == "jetbench.spark.dataframe_sources":
            return self._read_spark(supplier)
        if isinstance(supplier, type) and issubclass(supplier, Processor):
            path = class_path(supplier)
            for k in self.palette.kinds():
                if k.preset.get("cls") == path:
                    return k.id, {"cls": path}
            return "processor", {"cls": path}
        return None

    def _read_spark(self, supplier: Any) -> tuple[str, dict[str, Any]] | None:
        from ...spark.dataframe_sources import DataFrameSource, ParquetSource

        decoder = supplier.decoder
        common = {"as_": decoder.kind, "timestamp": decoder.timestamp or ""}
        if isinstance(supplier, ParquetSource):
            names = list(decoder.names)
            columns = "" if names == list(supplier.schema.names) else repr(names)
            return "spark_parquet", {"path": supplier.path, "columns": columns, "engine": "arrow", **common}
        if isinstance(supplier, DataFrameSource):
            name = next((k for k, value in self.namespace.items() if value is supplier.df and k.isidentifier()
                         and not k.startswith("_")), None)
            if name is None:
                raise Unreadable("a Spark DataFrame object: bind it to a name in the notebook to edit it here")
            return "spark_dataframe", {"df": name, "columns": "", **common}
        return None

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

                def text(code: str, args: tuple[str, ...], asynchronous: bool, what: str, var: str = var) -> str:
                    if not asynchronous:
                        short = lambda_source(code, args)
                        if short is not None:
                            return short
                    fname = f"{var}_{re.sub(r'[^0-9a-zA-Z_]', '', what.replace('[', '_'))}"
                    defs.append(function_source(code, args, fname, asynchronous))
                    return fname

                expr, needs = kind.code(v["params"], _functions(kind, v["params"], text))
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
        self.source, self._base, self._source_print = None, None, None  # follows no code any more
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
    if not param.applies(params):
        return None  # not used with these settings
    if param.optional and value in (None, ""):
        return None
    if param.type == "code":
        return check_code(value or "", param.args, param.asynchronous)
    if param.type == "expr":
        return check_expr(value or "")
    if param.type == "steps":
        return check_steps(value if value is not None else "")
    if param.type in ("int", "float"):
        number = int if param.type == "int" else int | float
        if isinstance(value, bool) or not isinstance(value, number):
            return f"must be {'an int' if param.type == 'int' else 'a number'}, got {value!r}"
        low = param.minimum
        if low is not None and (value <= low if param.strict else value < low):
            return f"must be {'>' if param.strict else '>='} {low:g}, got {value}"
    if param.type == "bool" and not isinstance(value, bool):
        return f"must be true or false, got {value!r}"
    if param.type == "choice" and value not in param.choices:
        return f"must be one of {', '.join(param.choices)}, got {value!r}"
    if param.type == "str" and (not isinstance(value, str) or (not param.optional and not value.strip())):
        return "must not be empty" if isinstance(value, str) else f"must be text, got {value!r}"
    if param.name == "window" and value == "sliding":
        size, slide = params.get("size"), params.get("slide")
        if isinstance(size, int) and isinstance(slide, int) and slide > 0 and size % slide:
            return f"size ({size}) must be a multiple of slide ({slide})"
    return None


def _functions(kind: Kind, params: dict[str, Any],
               make: Callable[[str, tuple[str, ...], bool, str], Any]) -> dict[str, Any]:
    """What the kind's build/code get for its code parameters: ``make(code, args, asynchronous,
    what)`` for each one that applies and is not empty (else None); a list for ``steps``."""
    fns: dict[str, Any] = {}
    for p in kind.params:
        if p.type == "steps":
            steps = parse_steps(params.get(p.name) or "")
            fns[p.name] = [make(code, ("x",), False, f"step{i + 1}") for i, (_, code) in enumerate(steps)]
        elif p.type == "code":
            code = params.get(p.name) or ""
            fns[p.name] = make(code, p.args, p.asynchronous, p.name) if p.applies(params) and code.strip() else None
    return fns


def _read_op(op: Any, code: Callable[..., str]) -> dict[str, Any]:
    """The ``op`` / ``value`` params of an aggregate operation made by the library."""
    recipe = getattr(op, "recipe", None)
    if recipe is None:
        raise Unreadable("its aggregate operation is hand-made; the palette offers " + ", ".join(OPS))
    name, args = recipe
    if name not in OPS:
        raise Unreadable(f"its aggregate operation {name} is not one the palette offers ({', '.join(OPS)})")
    params: dict[str, Any] = {"op": name}
    if OPS[name]:
        params["value"] = code(args[0], "value")
    return params


def _lowest_free(used: Any) -> int:
    taken = set(used)
    i = 0
    while i in taken:
        i += 1
    return i


def _ports(kind: Kind) -> str:
    return ", ".join(f"{i} ({name})" for i, name in enumerate(kind.in_ports))


def _port_problems(kind: Kind, ordinals: list[Any]) -> list[str]:
    found = []
    ints = [o for o in ordinals if isinstance(o, int)]
    for i, name in enumerate(kind.in_ports):
        n = ints.count(i)
        if n == 0:
            found.append(f"input {i} ({name}) not connected")
        elif n > 1:
            found.append(f"duplicate inbound ordinal {i}")
    extra = sorted({o for o in ints if not 0 <= o < len(kind.in_ports)})
    if extra:
        found.append(f"input {extra[0]}: a {kind.label} has inputs {_ports(kind)} only")
    return found


class _Imported:
    """A DAG read for the document: records by vertex name and by edge (source name, source
    ordinal, target name, target ordinal), with the objects kept for opaque ones."""

    __slots__ = ("vertices", "edges", "suppliers", "keys")

    def __init__(self) -> None:
        self.vertices: dict[str, dict[str, Any]] = {}
        self.edges: dict[tuple, dict[str, Any]] = {}
        self.suppliers: dict[str, Any] = {}
        self.keys: dict[tuple, Any] = {}


def _vertex_rec(rec: dict[str, Any]) -> tuple:
    return rec["kind"], json.dumps(rec["params"], sort_keys=True, default=repr), rec["parallelism"]


def _edge_rec(rec: dict[str, Any]) -> tuple:
    return rec["routing"], rec["key"], rec["queue_size"], rec["priority"]


def _same_import(a: _Imported, b: _Imported) -> bool:
    return a.vertices.keys() == b.vertices.keys() and a.edges.keys() == b.edges.keys() \
        and all(_vertex_rec(a.vertices[n]) == _vertex_rec(b.vertices[n]) for n in a.vertices) \
        and all(_edge_rec(a.edges[k]) == _edge_rec(b.edges[k]) for k in a.edges)


def _fingerprint(source: Any) -> Any:
    """A cheap summary of a DAG or Pipeline that changes when it is edited in code (vertices,
    edges, stages; suppliers and functions by identity); None for anything else."""
    if isinstance(source, DAG):
        return (tuple((v.name, id(v.supplier), v.local_parallelism) for v in source.vertices),
                tuple((e.source.name, e.source_ordinal, e.destination.name, e.destination_ordinal, e.routing,
                       id(e.key_fn), e.edge_queue_size, e.edge_priority) for e in source.edges))
    nodes = getattr(source, "nodes", None)
    if isinstance(nodes, list):
        return getattr(source, "fuse", None), tuple(
            (n.kind, n.name, tuple(u.name for u in n.upstream), n.local_parallelism,
             tuple((f.name, id(getattr(n.spec, f.name))) for f in dataclasses.fields(n.spec))) for n in nodes)
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
