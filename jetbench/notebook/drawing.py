"""Any Graphviz drawing shown the way jetbench shows its DAGs and pipelines in a notebook: scaled
down to the cell's width, full size on click (`jetbench.core.render.drawing_bundle`)."""

from __future__ import annotations

from typing import Any

from ..core.render import drawing_bundle


class FittedDrawing:
    """Show ``drawing`` (SVG text, or a ``graphviz`` package graph: anything with
    ``pipe(format="svg", encoding="utf-8")``) fitted to the cell's width, full size on click.

    >>> page = FittedDrawing('<svg width="900pt" height="40pt"></svg>')._repr_mimebundle_()["text/html"]
    >>> page.startswith('<div class="jetbench-drawing"'), '<svg style="max-width: 100%; height: auto" ' in page
    (True, True)
    """

    def __init__(self, drawing: Any):
        if not isinstance(drawing, str) and not callable(getattr(drawing, "pipe", None)):
            raise TypeError(f"FittedDrawing takes SVG text or a graphviz graph, got {type(drawing).__name__}")
        self.drawing = drawing

    def svg(self) -> str:
        d = self.drawing
        return d if isinstance(d, str) else str(d.pipe(format="svg", encoding="utf-8"))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str] | None:
        return drawing_bundle(self.svg())
