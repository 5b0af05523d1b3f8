"""Where the builder puts vertices on its canvas: a layered layout of the whole document, and
places for vertices added next to ones already placed (an import merged into a document).

Both work on the document's lists of vertex and edge dicts and write ``x``/``y`` in place.
"""

from __future__ import annotations

from typing import Any

#: a vertex box on the canvas and the gaps between boxes (pixels; the front end uses the same)
NODE_W, NODE_H, GAP_X, GAP_Y = 150, 64, 64, 40  # narrow enough for a 6-vertex chain at a legible zoom


def layered(vertices: list[dict[str, Any]], edges: list[dict[str, Any]]) -> None:
    """Place vertices in layers (longest path from a source), left to right."""
    ids = [v["id"] for v in vertices]
    by_id = {v["id"]: v for v in reversed(vertices)}
    preds: dict[str, list[str]] = {i: [] for i in ids}
    for e in edges:
        if e["target"] in preds and e["source"] in preds:
            preds[e["target"]].append(e["source"])
    layer: dict[str, int] = {}

    def depth(i: str, trail: frozenset[str]) -> int:
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
        v = by_id[i]
        v["x"] = 40.0 + layer[i] * (NODE_W + GAP_X)
        v["y"] = 40.0 + r * (NODE_H + GAP_Y)


def place(vertices: list[dict[str, Any]], edges: list[dict[str, Any]], vids: list[str]) -> None:
    """Positions for the new vertices ``vids`` next to placed ones: right of their producers
    (else left of their consumers), moved down until they overlap nothing."""
    if not vids:
        return
    pending = set(vids)
    by_id = {v["id"]: v for v in vertices}
    for vid in _topological(edges, vids):
        v = by_id[vid]
        preds = [by_id[e["source"]] for e in edges if e["target"] == vid and e["source"] not in pending]
        succs = [by_id[e["target"]] for e in edges if e["source"] == vid and e["target"] not in pending]
        if preds:
            x, y = max(p["x"] for p in preds) + NODE_W + GAP_X, sum(p["y"] for p in preds) / len(preds)
        elif succs:
            x, y = min(s["x"] for s in succs) - NODE_W - GAP_X, sum(s["y"] for s in succs) / len(succs)
        else:
            placed = [p for p in vertices if p["id"] not in pending]
            x, y = 40.0, (max(p["y"] for p in placed) + NODE_H + GAP_Y) if placed else 40.0
        others = [p for p in vertices if p["id"] not in pending]
        while any(abs(p["x"] - x) < NODE_W and abs(p["y"] - y) < NODE_H + GAP_Y / 2 for p in others):
            y += NODE_H + GAP_Y
        v["x"], v["y"] = float(x), float(y)
        pending.discard(vid)


def _topological(edges: list[dict[str, Any]], vids: list[str]) -> list[str]:
    """``vids`` with each after those of its producers that are among them."""
    wanted, seen = set(vids), set()
    order: list[str] = []

    def visit(vid: str) -> None:
        if vid in seen:
            return
        seen.add(vid)
        for e in edges:
            if e["target"] == vid and e["source"] in wanted:
                visit(e["source"])
        order.append(vid)

    for vid in vids:
        visit(vid)
    return order
