"""A DAG or Pipeline built in code, read into a builder document (`BuilderModel.load_dag`) and
followed as it is edited in code (`BuilderModel.refresh`, a three-way merge by vertex name).

Suppliers the palette knows become editable vertices with their code as text (see
`supplier_readback`); any other supplier, and a partitioned edge's key function that cannot be
shown as text, is kept as the object itself.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

from ...core.dag import DAG, Routing
from ...processors.builder_kind import BuilderError
from .code_text import class_path
from .document import Document, vertex_record
from .function_readback import Unreadable, function_code
from .layout import layered, place
from .palette import Palette
from .supplier_readback import read_supplier

#: an edge of an import: (source name, source ordinal, target name, target ordinal)
EdgeKey = tuple[str, int, str, int]


class Imported:
    """A DAG read for the document: records by vertex name and by edge (source name, source
    ordinal, target name, target ordinal), with the objects kept for opaque ones."""

    __slots__ = ("vertices", "edges", "suppliers", "keys")

    def __init__(self) -> None:
        self.vertices: dict[str, dict[str, Any]] = {}
        self.edges: dict[EdgeKey, dict[str, Any]] = {}
        self.suppliers: dict[str, Any] = {}
        self.keys: dict[EdgeKey, Any] = {}


def _vertex_rec(rec: dict[str, Any]) -> tuple[Any, ...]:
    return rec["kind"], json.dumps(rec["params"], sort_keys=True, default=repr), rec["parallelism"]


def _edge_rec(rec: dict[str, Any]) -> tuple[Any, ...]:
    return rec["routing"], rec["key"], rec["queue_size"], rec["priority"]


def same_import(a: Imported, b: Imported) -> bool:
    return a.vertices.keys() == b.vertices.keys() and a.edges.keys() == b.edges.keys() \
        and all(_vertex_rec(a.vertices[n]) == _vertex_rec(b.vertices[n]) for n in a.vertices) \
        and all(_edge_rec(a.edges[k]) == _edge_rec(b.edges[k]) for k in a.edges)


def fingerprint(source: Any) -> Any:
    """A cheap summary of a DAG or Pipeline that changes when it is edited in code (vertices,
    edges, stages; suppliers and functions by identity); None for anything else."""
    if isinstance(source, DAG):
        return (tuple((v.name, id(v.supplier), v.local_parallelism) for v in source.vertices),
                tuple((e.source.name, e.source_ordinal, e.target.name, e.destination_ordinal, e.routing,
                       id(e.key_fn), e.edge_queue_size, e.edge_priority) for e in source.edges))
    nodes = getattr(source, "nodes", None)
    if isinstance(nodes, list):
        return getattr(source, "fuse", None), tuple(
            (n.kind, n.name, tuple(u.name for u in n.upstream), n.local_parallelism,
             tuple((f.name, id(getattr(n.spec, f.name))) for f in dataclasses.fields(n.spec))) for n in nodes)
    return None


class Following:
    """The DAG or Pipeline a document follows (`source`), as last read (`base`), and its
    `fingerprint` then."""

    __slots__ = ("source", "base", "fingerprint")

    def __init__(self, source: Any, base: Imported, fingerprint: Any) -> None:
        self.source = source
        self.base = base
        self.fingerprint = fingerprint


def read_dag(dag: Any, ns: dict[str, Any], palette: Palette) -> Imported:
    """``dag`` (a DAG or a Pipeline) read as document records, keyed by vertex name."""
    if hasattr(dag, "to_dag") and not isinstance(dag, DAG):
        dag = dag.to_dag()
    if not isinstance(dag, DAG):
        raise BuilderError(f"expected a jetbench DAG or Pipeline, got {dag!r}")
    imported = Imported()
    for vertex in dag.vertices:
        kind, params = _read_vertex(vertex.supplier, ns, palette)
        imported.vertices[vertex.name] = {"kind": kind, "params": params, "parallelism": vertex.local_parallelism}
        if kind == "custom":
            imported.suppliers[vertex.name] = vertex.supplier
    for edge in dag.edges:
        key = (edge.source.name, edge.source_ordinal, edge.target.name, edge.destination_ordinal)
        text = ""
        if edge.routing is Routing.PARTITIONED:
            try:
                text = function_code(edge.key_fn, ("x",), ns)
            except Unreadable:
                imported.keys[key] = edge.key_fn  # a key we cannot show as text: keep the function
        imported.edges[key] = {"routing": edge.routing.value, "key": text, "queue_size": edge.edge_queue_size,
                               "priority": edge.edge_priority}
    return imported


def _read_vertex(supplier: Any, ns: dict[str, Any], palette: Palette) -> tuple[str, dict[str, Any]]:
    """``(palette kind, params)`` for a supplier, or ``("custom", {"label", "reason"})``."""
    try:
        found = read_supplier(supplier, ns, palette)
    except Unreadable as exc:
        return "custom", {"label": _label(supplier), "reason": str(exc)}
    if found is None:
        return "custom", {"label": _label(supplier), "reason": "the palette has no kind for this supplier"}
    kind_id, params = found
    kind = palette.kind(kind_id)
    if kind is None:
        return "custom", {"label": _label(supplier), "reason": f"the palette has no {kind_id!r} kind here"}
    values = kind.defaults()
    values.update(params)
    return kind_id, values


def replace(doc: Document, imported: Imported) -> None:
    """Make the document ``imported``: vertices named like ones already there keep their id and
    position, the others are laid out (all of them if none is kept)."""
    kept = {v["name"]: v for v in doc.vertices}
    doc.vertices, doc.edges, doc.suppliers = [], [], {}
    new: list[str] = []
    for name, rec in imported.vertices.items():
        old = kept.get(name)
        vid = old["id"] if old is not None else doc.new_id("v")
        x, y = (old["x"], old["y"]) if old is not None else (0.0, 0.0)
        doc.vertices.append(vertex_record(vid, rec["kind"], name, copy.deepcopy(rec["params"]), rec["parallelism"], x, y))
        if old is None:
            new.append(vid)
        if name in imported.suppliers:
            doc.suppliers[vid] = imported.suppliers[name]
    for key, rec in imported.edges.items():
        _add_edge(doc, key, rec, imported)
    if len(new) == len(doc.vertices):
        layered(doc.vertices, doc.edges)
    else:
        place(doc.vertices, doc.edges, new)


def merge(doc: Document, base: Imported, theirs: Imported) -> None:
    """Three-way merge by vertex name (edges by their ends and ordinals): what changed from
    ``base`` to ``theirs`` (the code) is applied to the document; the code wins a conflict."""
    mine = {v["name"]: v for v in doc.vertices}
    new: list[str] = []
    for name, rec in theirs.vertices.items():
        old = base.vertices.get(name)
        v = mine.get(name)
        if old is not None and _vertex_rec(old) == _vertex_rec(rec):
            if v is not None and v["kind"] == "custom" and name in theirs.suppliers:
                doc.suppliers[v["id"]] = theirs.suppliers[name]
            continue
        if v is None:  # added in code (or changed in code after it was deleted here)
            v = vertex_record(doc.new_id("v"), rec["kind"], name, {}, None, 0, 0)
            doc.vertices.append(v)
            mine[name] = v
            new.append(v["id"])
        v["kind"], v["params"], v["parallelism"] = rec["kind"], copy.deepcopy(rec["params"]), rec["parallelism"]
        if name in theirs.suppliers:
            doc.suppliers[v["id"]] = theirs.suppliers[name]
        else:
            doc.suppliers.pop(v["id"], None)
    gone = {mine[name]["id"] for name in base.vertices.keys() - theirs.vertices.keys() if name in mine}
    if gone:
        doc.edges = [e for e in doc.edges if e["source"] not in gone and e["target"] not in gone]
        doc.vertices = [v for v in doc.vertices if v["id"] not in gone]
        for vid in gone:
            doc.suppliers.pop(vid, None)
    names = {v["id"]: v["name"] for v in doc.vertices}
    current = {(names[e["source"]], e["source_ordinal"], names[e["target"]], e["target_ordinal"]): e
               for e in doc.edges if e["source"] in names and e["target"] in names}
    for key, rec in theirs.edges.items():
        old = base.edges.get(key)
        e = current.get(key)
        if old is not None and _edge_rec(old) == _edge_rec(rec):
            if e is not None and e["id"] in doc.suppliers and key in theirs.keys:
                doc.suppliers[e["id"]] = theirs.keys[key]
            continue
        if e is None:
            _add_edge(doc, key, rec, theirs)
            continue
        e.update({f: rec[f] for f in ("routing", "key", "queue_size", "priority")})
        if key in theirs.keys:
            doc.suppliers[e["id"]] = theirs.keys[key]
        else:
            doc.suppliers.pop(e["id"], None)
    for key in base.edges.keys() - theirs.edges.keys():
        e = current.get(key)
        if e is not None:
            doc.edges.remove(e)
            doc.suppliers.pop(e["id"], None)
    place(doc.vertices, doc.edges, [vid for vid in new if vid in names])


def adopt_objects(doc: Document, theirs: Imported) -> None:
    """Use the supplier and key objects of a new import for the vertices still custom."""
    for v in doc.vertices:
        if v["kind"] == "custom" and v["name"] in theirs.suppliers:
            doc.suppliers[v["id"]] = theirs.suppliers[v["name"]]
    names = {v["id"]: v["name"] for v in doc.vertices}
    for e in doc.edges:
        key = (names.get(e["source"]), e["source_ordinal"], names.get(e["target"]), e["target_ordinal"])
        if e["id"] in doc.suppliers and key in theirs.keys:
            doc.suppliers[e["id"]] = theirs.keys[key]


def _add_edge(doc: Document, key: EdgeKey, rec: dict[str, Any], imported: Imported) -> None:
    ids = {v["name"]: v["id"] for v in doc.vertices}
    if key[0] not in ids or key[2] not in ids:
        return  # an end was deleted here: the edge has nothing to attach to
    eid = doc.new_id("e")
    doc.edges.append({"id": eid, "source": ids[key[0]], "target": ids[key[2]], "source_ordinal": key[1],
                      "target_ordinal": key[3], "routing": rec["routing"], "key": rec["key"],
                      "queue_size": rec["queue_size"], "priority": rec["priority"]})
    if key in imported.keys:
        doc.suppliers[eid] = imported.keys[key]


def _label(supplier: Any) -> str:
    if isinstance(supplier, type):
        return class_path(supplier)
    try:
        text = repr(supplier)
    except Exception:  # a broken __repr__ must not stop an import
        text = type(supplier).__name__
    return text if len(text) <= 80 else text[:77] + "..."
