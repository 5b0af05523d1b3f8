"""A builder document made into a `jetbench.DAG`: code parameters are compiled into functions
(in the notebook's namespace) and ``expr`` parameters evaluated only here, each kind's `Kind.build`
makes its supplier, and edges get their routing. Also the skeleton DAG that validation hands to
`DAG.validate` (placeholder suppliers: no code is compiled or run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...core.dag import DAG, Edge
from ...processors.builder_kind import BuilderError, Kind, parse_steps
from .code_text import compile_function
from .document import Document


def build_dag(doc: Document) -> DAG:
    """The document as a `DAG`; the document is expected to be free of errors (see
    `validation.problems`)."""
    dag = DAG()
    vs = {}
    for v in doc.vertices:
        vs[v["id"]] = dag.new_vertex(v["name"], _supplier(doc, v), v["parallelism"])
    for e in doc.edges:
        edge = Edge.from_(vs[e["source"]], e["source_ordinal"]).to(vs[e["target"]], e["target_ordinal"])
        key = None
        if e["routing"] == "partitioned" and e["id"] in doc.suppliers:
            key = doc.suppliers[e["id"]]  # a key function imported from a DAG, not as text
        elif e["routing"] == "partitioned":
            label = f"{doc.vertex(e['source'])['name']}->{doc.vertex(e['target'])['name']}.key"
            key = compile_function(e["key"], ("x",), doc.namespace, label)
        route(edge, e["routing"], key).queue_size(e["queue_size"]).priority(e["priority"])
        dag.edge(edge)
    return dag


def _supplier(doc: Document, v: dict[str, Any]) -> Any:
    if v["kind"] == "custom":
        return doc.suppliers[v["id"]]
    kind = doc.palette.kind(v["kind"])
    if kind is None:  # validation reports it first
        raise BuilderError(f"vertex {v['name']!r}: unknown kind {v['kind']!r}")
    params = v["params"]

    def define(code: str, args: tuple[str, ...], asynchronous: bool, what: str) -> Any:
        return compile_function(code, args, doc.namespace, f"{v['name']}.{what}", asynchronous)

    fns = functions(kind, params, define)
    try:
        return kind.build(params, fns, doc.namespace)
    except BuilderError:
        raise
    except Exception as exc:
        raise BuilderError(f"vertex {v['name']!r}: {type(exc).__name__}: {exc}") from exc


def functions(kind: Kind, params: dict[str, Any],
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


def skeleton(doc: Document) -> DAG:
    """The document's shape as a `DAG` with placeholder suppliers and keys (for `DAG.validate`)."""
    dag = DAG()
    vs = {v["id"]: dag.new_vertex(v["name"], _placeholder, v["parallelism"]) for v in doc.vertices}
    for e in doc.edges:
        edge = Edge.from_(vs[e["source"]], e["source_ordinal"]).to(vs[e["target"]], e["target_ordinal"])
        dag.edge(route(edge, e["routing"], _placeholder_key))
    return dag


def route(edge: Edge, routing: str, key: Any) -> Edge:
    """``edge`` with the routing named ``routing`` (a document's name: "all-to-one", ...)."""
    if routing == "partitioned":
        return edge.partitioned(key)
    return getattr(edge, {"all-to-one": "all_to_one"}.get(routing, routing))()


def _placeholder() -> None:  # pragma: no cover - never called: skeleton DAGs are only validated
    return None


def _placeholder_key(x: Any) -> None:  # pragma: no cover
    return None
