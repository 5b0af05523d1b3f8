"""What is wrong with a builder document, each finding on the vertex or edge at fault: names,
parameters (code compiled, never run), ports and ordinals, routings, cycles, kind-specific
checks, then whatever `DAG.validate` rejects in a skeleton of the document. Also the notes
(level "info") that are not problems, and both grouped for the front end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.errors import DagError
from ...processors.builder_kind import BuilderError, Kind, Param, parse_steps
from .code_text import check_code, check_expr, check_steps, undefined_names
from .dag_building import skeleton
from .document import ROUTINGS, Document, ports_text


@dataclass(frozen=True)
class Problem:
    """A validation finding on a vertex, an edge, or the whole DAG (``target`` "dag", ``id`` "")."""

    target: str
    id: str
    message: str
    level: str = "error"

    def to_json(self) -> dict[str, str]:
        return {"target": self.target, "id": self.id, "message": self.message, "level": self.level}


def problems(doc: Document) -> list[Problem]:
    """Everything wrong with the document, each on the vertex or edge at fault; [] if it can run."""
    problems: list[Problem] = []
    add = problems.append
    by_id = {v["id"]: v for v in doc.vertices}
    names: dict[str, int] = {}
    for v in doc.vertices:
        names[v["name"]] = names.get(v["name"], 0) + 1
    for v in doc.vertices:
        vid, kind = v["id"], doc.palette.kind(v["kind"])
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
            else:
                msg = _undefined(param, v["params"].get(param.name), v["params"], doc.namespace)
                if msg:
                    add(Problem("vertex", vid, f"{param.name}: {msg}", "warning"))
        if v["kind"] == "custom" and vid not in doc.suppliers:
            add(Problem("vertex", vid, "no supplier attached (set_supplier(); a saved custom vertex keeps "
                                       "only its label)"))
        inbound = [e for e in doc.edges if e["target"] == vid]
        outbound = [e for e in doc.edges if e["source"] == vid]
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
    cyclic = _cyclic_edges(doc)
    for e in doc.edges:
        eid = e["id"]
        s, t = by_id.get(e["source"]), by_id.get(e["target"])
        if s is None or t is None:
            add(Problem("edge", eid, "an end of this edge is not a vertex"))
            continue
        if eid in cyclic:
            add(Problem("edge", eid, "this edge is part of a cycle"))
        if e["routing"] not in ROUTINGS:
            add(Problem("edge", eid, f"unknown routing {e['routing']!r}"))
        if e["routing"] == "partitioned" and eid not in doc.suppliers:
            msg = check_code(e.get("key") or "", ("x",))
            if msg:
                add(Problem("edge", eid, f"key: {'a partitioned edge needs a key' if msg == 'empty code' else msg}"))
            else:
                missing = undefined_names(e.get("key") or "", ("x",), doc.namespace)
                if missing:
                    add(Problem("edge", eid, f"key: {_not_defined(missing)}", "warning"))
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
        for vid in {doc.edge(eid)["source"] for eid in cyclic}:
            add(Problem("vertex", vid, "on a cycle"))
    if not any(p.level == "error" for p in problems):
        problems.extend(_engine_check(doc))
    return problems


def _engine_check(doc: Document) -> list[Problem]:
    """`DAG.validate()` on a skeleton of the document (placeholder suppliers, no code run):
    whatever the engine rejects that the checks above missed lands on the vertex it names."""
    try:
        dag = skeleton(doc)
        dag.validate()
    except DagError as exc:
        text = str(exc)
        for v in doc.vertices:
            if f"'{v['name']}'" in text:
                return [Problem("vertex", v["id"], text)]
        return [Problem("dag", "", text)]
    return []


def _cyclic_edges(doc: Document) -> set[str]:
    """Ids of edges inside a strongly connected component (Tarjan), self-loops included."""
    out: dict[str, list[str]] = {v["id"]: [] for v in doc.vertices}
    for e in doc.edges:
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
    return {e["id"] for e in doc.edges
            if e["source"] in comp and e["target"] in comp and comp[e["source"]] == comp[e["target"]]}


def notes(doc: Document) -> list[Problem]:
    """Things to know that are not problems (level "info"): why a vertex imported from code is
    opaque (kept as an object, not editable as code)."""
    return [Problem("vertex", v["id"], f"opaque: {v['params']['reason']}", "info") for v in doc.vertices
            if v["kind"] == "custom" and v["params"].get("reason")]


def problems_json(doc: Document) -> dict[str, Any]:
    """Problems and notes grouped for the front end, each with its level ("error", "warning",
    "info"): ``{"vertices": {id: [...]}, "edges": {...}, "dag": [...]}``."""
    grouped: dict[str, Any] = {"vertices": {}, "edges": {}, "dag": []}
    for p in problems(doc) + notes(doc):
        if p.target == "dag":
            grouped["dag"].append(p.to_json())
        else:
            grouped["vertices" if p.target == "vertex" else "edges"].setdefault(p.id, []).append(p.to_json())
    return grouped


def where(doc: Document, p: Problem) -> str:
    """Where a problem is, as an error message names it: ``vertex 'double'``, ``edge a[0] -> b[0]``."""
    if p.target == "vertex":
        return f"vertex {doc.vertex(p.id)['name']!r}"
    if p.target == "edge":
        e = doc.edge(p.id)
        s, t = doc.name_of(e["source"]), doc.name_of(e["target"])
        return f"edge {s}[{e['source_ordinal']}] -> {t}[{e['target_ordinal']}]"
    return "DAG"


def _check_param(param: Param, value: Any, params: dict[str, Any]) -> str | None:
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


def _not_defined(names: list[str]) -> str:
    listed = ", ".join(repr(n) for n in names)
    return (f"name{'s' if len(names) > 1 else ''} {listed} {'are' if len(names) > 1 else 'is'} not defined "
            "in the notebook (define it in a cell, or it fails when the DAG is built or run)")


def _undefined(param: Param, value: Any, params: dict[str, Any], ns: dict[str, Any]) -> str | None:
    """A code, expression or steps parameter that reads names neither the notebook's namespace
    nor the builtins define (a warning: a later cell may define them)."""
    if not param.applies(params) or not isinstance(value, str) or not value.strip():
        return None
    if param.type == "code":
        missing = undefined_names(value, param.args, ns, asynchronous=param.asynchronous)
    elif param.type == "expr":
        missing = undefined_names(value, (), ns, kind="expr")
    elif param.type == "steps":
        try:
            steps = parse_steps(value)
        except BuilderError:
            return None
        missing = sorted({n for _, code in steps for n in undefined_names(code, ("x",), ns)})
    else:
        return None
    return _not_defined(missing) if missing else None


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
        found.append(f"input {extra[0]}: a {kind.label} has inputs {ports_text(kind)} only")
    return found


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
