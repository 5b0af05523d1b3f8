"""A builder document exported as Python code that rebuilds its DAG: each kind writes its
supplier (`Kind.code`), code parameters become lambdas where they are one expression and
``def``s otherwise, and objects the document only holds (custom suppliers, opaque keys) are read
from a dict ``custom_suppliers`` the code expects to find.
"""

from __future__ import annotations

import re
from typing import Any

from ...core.dag import DEFAULT_QUEUE_SIZE
from ...processors.builder_kind import BuilderError
from .code_text import function_source, lambda_source
from .dag_building import functions
from .document import Document


def to_code(doc: Document, dag_name: str = "dag") -> str:
    """Python source that rebuilds this DAG (``exec`` it to get an equal DAG in ``dag_name``).

    Custom vertices read their supplier from a dict ``custom_suppliers`` (by vertex name) that
    the code expects to find (`custom_suppliers` gives it)."""
    imports = {"from jetbench import DAG, Edge"}
    defs: list[str] = []
    body: list[str] = [f"{dag_name} = DAG()"]
    var_of: dict[str, str] = {}
    used: set[str] = set()
    for v in doc.vertices:
        var = _identifier(v["name"], used)
        var_of[v["id"]] = var
        kind = doc.palette.kind(v["kind"])
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

            expr, needs = kind.code(v["params"], functions(kind, v["params"], text))
            imports |= needs
        lp = "" if v["parallelism"] is None else f", local_parallelism={v['parallelism']}"
        body.append(f"{var} = {dag_name}.new_vertex({v['name']!r}, {expr}{lp})")
    for e in doc.edges:
        chain = f"Edge.from_({var_of[e['source']]}, {e['source_ordinal']}).to({var_of[e['target']]}, {e['target_ordinal']})"
        routing = e["routing"]
        if routing == "partitioned" and e["id"] in doc.suppliers:
            chain += f".partitioned(custom_suppliers[{edge_label(doc, e)!r}])"
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
    kept = sorted(custom_suppliers(doc))
    if kept:
        # The objects the document only holds: say which, and fail with that message, not a bare
        # NameError, where the code runs without them.
        names = ", ".join(repr(k) for k in kept)
        parts.append(f"# {names}: kept as objects, not code (their source was not available as text).\n"
                     "# Run this with custom_suppliers = <the builder>.custom_suppliers in its namespace.\n"
                     "try:\n    custom_suppliers\nexcept NameError:\n"
                     f"    raise NameError({'this DAG needs custom_suppliers (the builder keeps ' + names + ')'!r}) from None")
    if defs:
        parts.append("\n\n".join(d.rstrip() for d in defs))
    parts.append("\n".join(body))
    return "\n\n\n".join(parts) + "\n"


def custom_suppliers(doc: Document) -> dict[str, Any]:
    """``{vertex name: supplier}`` of the custom vertices, and ``{"source->target": key function}``
    of the opaque keys (what `to_code`'s output expects)."""
    found = {v["name"]: doc.suppliers[v["id"]] for v in doc.vertices if v["id"] in doc.suppliers}
    found.update({edge_label(doc, e): doc.suppliers[e["id"]] for e in doc.edges if e["id"] in doc.suppliers})
    return found


def edge_label(doc: Document, e: dict[str, Any]) -> str:
    """How `to_code` names an opaque key function: ``"source->target"``."""
    return f"{doc.name_of(e['source'])}->{doc.name_of(e['target'])}"


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
