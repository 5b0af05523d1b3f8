"""Read back: which palette kind, with which parameters, a supplier found in a DAG built in code
is, so that it opens in the builder as an editable vertex.

Each kind reads its own suppliers (``Kind.read``, declared beside the processor); this module
gives them a `FunctionReader`, which turns functions into code text (`function_readback`) and
values into literals, and reads the one kind the builder owns: a `Processor` subclass used as a
supplier.

A supplier no kind knows gives None; one whose functions or values cannot be shown as text
raises `Unreadable` saying why. `dag_import` makes either a "custom" vertex that keeps the
object.
"""

from __future__ import annotations

from typing import Any

from ...core.processor import Processor
from ...processors.builder_kind import LiteralReader, Unreadable
from .code_text import class_path
from .function_readback import function_code
from .palette import Palette


class FunctionReader(LiteralReader):
    """The `jetbench.processors.builder_kind.Reader` of the builder: literals as `LiteralReader`
    shows them, and functions as code text that means the same function in ``namespace`` (a
    notebook's globals)."""

    def code(self, fn: Any, what: str, args: tuple[str, ...] = ("x",), asynchronous: bool = False) -> str:
        try:
            return function_code(fn, args, self.namespace, asynchronous)
        except Unreadable as exc:
            raise Unreadable(f"{what}: {exc}") from None


def read_supplier(supplier: Any, ns: dict[str, Any], palette: Palette) -> tuple[str, dict[str, Any]] | None:
    """``(palette kind id, params)`` for a supplier of a kind the palette has, None for one it has
    no kind for; raises `Unreadable` (saying why) for one whose functions or values cannot be
    shown as text in namespace ``ns``."""
    reader = FunctionReader(ns)
    for kind in palette.kinds():
        if kind.read is not None:
            params = kind.read(supplier, reader)
            if params is not None:
                return kind.id, params
    if isinstance(supplier, type) and issubclass(supplier, Processor):
        path = class_path(supplier)
        for k in palette.kinds():
            if k.preset.get("cls") == path:
                return k.id, {"cls": path}
        return "processor", {"cls": path}
    return None
