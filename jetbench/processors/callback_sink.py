"""The callback sink: calls a function for every item.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.errors import JetbenchError
from ..core.inbox import Inbox
from ..core.processor import Processor
from .builder_kind import Kind, Param, Reader
from .supplier import ProcessorSupplier, made_by


class CallbackSinkP(Processor):
    """Calls ``fn(item)`` for each item (an exception fails the job)."""

    def __init__(self, fn: Callable[[Any], Any]):
        self.fn = fn

    def process(self, ordinal: int, inbox: Inbox) -> None:
        inbox.drain(self.fn)


def callback_sink(fn: Callable[[Any], Any]) -> ProcessorSupplier:
    """A sink calling ``fn(item)`` for every item, on the sink's worker thread."""
    if not callable(fn):
        raise JetbenchError(f"callback sink: fn must be callable, got {fn!r}")
    return ProcessorSupplier(CallbackSinkP, fn, label=f"callback_sink({getattr(fn, '__name__', fn)})")


def _read(supplier: Any, reader: Reader) -> dict[str, Any] | None:
    return {"fn": reader.code(supplier.fn, "fn")} if made_by(supplier, CallbackSinkP) else None


BUILDER_KINDS = (
    Kind("callback", "callback", "sink", True, False,
         (Param("fn", "code", "print(x)", help="called with every item (its result is ignored)"),),
         lambda p, f, ns: callback_sink(f["fn"]),
         lambda p, f: (f"callback_sink({f['fn']})", {"from jetbench.processors.callback_sink import callback_sink"}),
         "calls a function for every item", read=_read),
)
