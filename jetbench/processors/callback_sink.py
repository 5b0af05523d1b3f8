"""The callback sink: calls a function for every item.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.errors import JetbenchError
from ..core.inbox import Inbox
from ..core.processor import Processor
from .supplier import ProcessorSupplier


class CallbackSinkP(Processor):
    """Calls ``fn(item)`` for each item (an exception fails the job)."""

    def __init__(self, fn: Callable[[Any], Any]):
        self.fn = fn

    def process(self, ordinal: int, inbox: Inbox) -> None:
        inbox.drain(self.fn)


class CallbackSink(ProcessorSupplier):
    """Supplier of `CallbackSinkP`; ``fn`` is its param."""

    def __init__(self, fn: Callable[[Any], Any]):
        if not callable(fn):
            raise JetbenchError(f"callback sink: fn must be callable, got {fn!r}")
        super().__init__(CallbackSinkP, fn, label="callback_sink")

    def __repr__(self) -> str:
        return f"callback_sink({getattr(self.fn, '__name__', self.fn)})"

