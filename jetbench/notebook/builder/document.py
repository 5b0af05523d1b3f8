"""The DAG builder's document: vertices and edges as plain data (JSON-ready dicts), looked up by
id or name, edited through methods that refuse what cannot be built (a cycle, an input a join
does not have) and record undo/redo history.

What else is done with a document lives beside it, one idea a module: `validation` (problems),
`dag_building` (to a `jetbench.DAG`), `dag_import` (from a DAG or Pipeline, merged on refresh),
`code_export` (to Python code) and `json_form` (save and load); `builder_model.BuilderModel`
puts them together.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ...core.dag import DEFAULT_QUEUE_SIZE
from ...processors.builder_kind import BuilderError, Kind
from .layout import GAP_X, NODE_W, layered
from .palette import Palette

HISTORY_LIMIT = 200

ROUTINGS = ("unicast", "partitioned", "broadcast", "isolated", "all-to-one")


def vertex_record(vid: str, kind: str, name: str, params: dict[str, Any], parallelism: int | None,
                  x: float, y: float) -> dict[str, Any]:
    """A vertex of the document, as the dict it is stored as."""
    return {"id": vid, "kind": kind, "name": name, "params": params, "parallelism": parallelism,
            "x": float(x), "y": float(y)}


class Document:
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

    def new_id(self, prefix: str) -> str:
        """A fresh id: ``prefix`` ("v" for a vertex, "e" for an edge) and a number no vertex or edge has."""
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

    def forget_history(self) -> None:
        """Drop the undo and redo steps (a document just opened has nothing to undo)."""
        self._undo.clear()
        self._redo.clear()

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
        params = k.upgrade(params or {})
        unknown = set(params) - set(values)
        if unknown:
            raise BuilderError(f"{kind}: unknown parameter(s) {sorted(unknown)}")
        values.update(params or {})
        if x is None or y is None:
            x, y = self._free_spot()
        self._record()
        vid = self.new_id("v")
        base = name or (kind.split(":", 1)[1] if ":" in kind else kind)
        lp = k.parallelism if parallelism is None else parallelism
        self.vertices.append(vertex_record(vid, kind, self._unique_name(base), values, lp, x, y))
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
            raise BuilderError(f"refused: {t['name']} ({kind.label}) has inputs {ports_text(kind)} only")
        defaults = kind.edge_defaults(t["params"], target_ordinal) if kind is not None and kind.edge_defaults else {}
        routing = defaults.get("routing", "unicast") if routing is None else routing
        key = defaults.get("key", "") if key is None else key
        priority = defaults.get("priority", 0) if priority is None else priority
        if routing not in ROUTINGS:
            raise BuilderError(f"routing must be one of {ROUTINGS}, got {routing!r}")
        self._record()
        eid = self.new_id("e")
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
            kind = self.palette.kind(v["kind"])
            given = changes.pop("params")
            v["params"] = {**v["params"], **(given if kind is None else kind.upgrade(given))}
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
        layered(self.vertices, self.edges)
        self._changed()

    def name_of(self, vid: str) -> str:
        """The name of vertex ``vid``, or ``vid`` itself if there is no such vertex."""
        try:
            return self.vertex(vid)["name"]
        except BuilderError:
            return vid


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise BuilderError(f"{what} must be an int, got {value!r}")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise BuilderError(f"{what} must be an int, got {value!r}") from None


def _lowest_free(used: Any) -> int:
    taken = set(used)
    i = 0
    while i in taken:
        i += 1
    return i


def ports_text(kind: Kind) -> str:
    """The inputs of a kind with fixed inputs, as a message shows them: ``0 (probe), 1 (build)``."""
    return ", ".join(f"{i} ({name})" for i, name in enumerate(kind.in_ports))
