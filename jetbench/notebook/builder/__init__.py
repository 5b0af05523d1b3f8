"""The visual DAG builder: `DagBuilder` (an anywidget) over `BuilderModel` (pure Python).

``jetbench.notebook.builder.model`` and ``.palette`` import no widget library; the widget
(``.widget``) is imported on first use of ``DagBuilder``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .model import BuilderModel, Problem
from .palette import BuilderError, Kind, Palette, Param

if TYPE_CHECKING:
    from .widget import DagBuilder

__all__ = ["BuilderError", "BuilderModel", "DagBuilder", "Kind", "Palette", "Param", "Problem"]


def __getattr__(name: str) -> Any:
    if name == "DagBuilder":
        from .widget import DagBuilder

        return DagBuilder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
