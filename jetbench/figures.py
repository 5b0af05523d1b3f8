"""Matplotlib figures that show themselves in Jupyter without pyplot.

A bare ``matplotlib.figure.Figure`` displays only as text unless pyplot's inline backend was
loaded (IPython registers its Figure formatter with it); these render as PNG regardless.
"""

from __future__ import annotations

import functools
import io
from typing import Any


@functools.cache
def figure_class() -> type:
    """A ``Figure`` subclass with ``_repr_png_``."""
    from matplotlib.figure import Figure

    class DisplayFigure(Figure):
        """A plain Figure that shows itself as PNG in Jupyter even when pyplot was never imported."""

        def _repr_png_(self) -> bytes:
            buf = io.BytesIO()
            self.savefig(buf, format="png", dpi=90)
            return buf.getvalue()

    return DisplayFigure


def new_figure(**kwargs: Any) -> Any:
    """``Figure(**kwargs)`` that displays itself in notebooks."""
    return figure_class()(**kwargs)
