"""The visual DAG builder: `DagBuilder` (an anywidget) over `BuilderModel` (pure Python).

Only ``.widget`` imports a widget library, on first use of ``DagBuilder``. The rest, one idea a
module:

- ``builder_model``: `BuilderModel`, the document with what is done with it, from:
- ``document``: vertices and edges as data, edits, undo/redo; ``layout``: positions on the canvas;
- ``validation``: `Problem` and the checks; ``dag_building``: the document as a `jetbench.DAG`;
- ``dag_import``: a DAG or Pipeline built in code read in, and merged again on refresh;
- ``supplier_readback``: which kind and parameters a supplier is; ``function_readback``:
  functions as code text;
- ``code_export``: the document as Python code; ``json_form``: saved as JSON;
- ``kind``: `Kind`, `Param`, `BuilderError`; ``builtin_kinds``: the catalogue of built-in
  kinds; ``palette``: `Palette`, the kinds on offer; ``code_text``: code parameters as text
  (checked, written as ``def``/``lambda``, compiled).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...processors.builder_kind import BuilderError, Kind, Param
from .builder_model import BuilderModel
from .palette import Palette
from .validation import Problem

if TYPE_CHECKING:
    from .widget import DagBuilder

__all__ = ["BuilderError", "BuilderModel", "DagBuilder", "Kind", "Palette", "Param", "Problem"]


def __getattr__(name: str) -> Any:
    if name == "DagBuilder":
        from .widget import DagBuilder

        return DagBuilder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
