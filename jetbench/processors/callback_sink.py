"""The callback sink: calls a function for every item.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.inbox import Inbox
from ..core.processor import Processor
from .kind_params import KindParams, code


class CallbackSinkP(Processor):
    """Calls ``fn(item)`` for each item (an exception fails the job)."""

    def __init__(self, fn: Callable[[Any], Any]):
        self.fn = fn

    def process(self, ordinal: int, inbox: Inbox) -> None:
        inbox.drain(self.fn)


@dataclass(frozen=True, eq=False, repr=False)
class CallbackSink(KindParams):
    """The callback sink's parameter and vertex supplier (``callback_sink``): ``fn(item)`` for
    every item, on the sink's worker thread.

    >>> callback_sink(print)
    callback_sink(print)
    """

    fn: Callable[[Any], Any] = code("print(x)", help="called with every item (its result is ignored)")
    processor = CallbackSinkP
    function = "callback_sink"


#: the callback sink's vertex supplier (its declaration, `CallbackSink`)
callback_sink = CallbackSink


BUILDER_KINDS = (
    CallbackSink.builder_kind(id="callback", label="callback", category="sink", inputs=True, outputs=False,
                              description="calls a function for every item"),
)
