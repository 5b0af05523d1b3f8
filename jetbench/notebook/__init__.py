"""Notebook views of jetbench jobs: the live `Dashboard` widget, the visual `DagBuilder`,
matplotlib plots and `FittedDrawing` (a Graphviz drawing fitted to the cell's width).

``Dashboard`` (an anywidget) is imported on first use, so ``jetbench.notebook.plots`` and the
state model work without a widget stack. ``job.dashboard()``, ``job.plot_metrics()`` and
``job.metrics_frame()`` reach these through the views registered in ``jetbench/__init__.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .builder import DagBuilder
    from .dashboard import Dashboard
    from .drawing import FittedDrawing

__all__ = ["DagBuilder", "Dashboard", "FittedDrawing", "plot_metrics"]


def __getattr__(name: str) -> Any:
    if name == "Dashboard":
        from .dashboard import Dashboard

        return Dashboard
    if name == "DagBuilder":
        from .builder import DagBuilder

        return DagBuilder
    if name == "FittedDrawing":
        from .drawing import FittedDrawing

        return FittedDrawing
    if name == "plot_metrics":
        from .plots import plot_metrics

        return plot_metrics
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
