"""A builder document as compact JSON: what `DagBuilder.save` writes and `DagBuilder.load` reads.

Code stays text; custom vertices keep only their label (their supplier objects are not saved);
reading runs nothing.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

from ...core.dag import DEFAULT_QUEUE_SIZE
from ...processors.builder_kind import BuilderError
from .document import Document, vertex_record

FORMAT = "jetbench-dag-builder"
VERSION = 1


def to_json(doc: Document) -> dict[str, Any]:
    """The document as JSON-ready data (copies of its vertices and edges)."""
    return {"format": FORMAT, "version": VERSION, "vertices": copy.deepcopy(doc.vertices),
            "edges": copy.deepcopy(doc.edges)}


def from_json(data: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(vertices, edges)`` of saved data, with defaults for fields it leaves out; `BuilderError`
    if it is not a document of this format and version."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BuilderError(f"not a {FORMAT} document")
    if data.get("version") != VERSION:
        raise BuilderError(f"unsupported {FORMAT} version {data.get('version')!r}")
    vertices, edges = [], []
    for v in data.get("vertices", []):
        vertices.append(vertex_record(str(v["id"]), str(v["kind"]), str(v["name"]), dict(v.get("params") or {}),
                                      v.get("parallelism"), v.get("x", 0), v.get("y", 0)))
    for e in data.get("edges", []):
        edges.append({"id": str(e["id"]), "source": str(e["source"]), "target": str(e["target"]),
                      "source_ordinal": e.get("source_ordinal", 0), "target_ordinal": e.get("target_ordinal", 0),
                      "routing": e.get("routing", "unicast"), "key": e.get("key", ""),
                      "queue_size": e.get("queue_size", DEFAULT_QUEUE_SIZE), "priority": e.get("priority", 0)})
    return vertices, edges


def write(doc: Document, path: str | os.PathLike[str]) -> None:
    """Write `to_json` of the document to ``path``, compact, with a final newline."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(to_json(doc), f, separators=(",", ":"))
        f.write("\n")


def read(path: str | os.PathLike[str]) -> Any:
    """The JSON data in ``path`` (for `from_json`)."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)
