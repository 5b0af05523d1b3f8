"""The to-dict sink: ``(key, value)`` items become one dict, the job's result.
"""

from __future__ import annotations

from typing import Any

from ..core.inbox import Inbox
from ..core.plan import merge_parts
from ..core.processor import Processor
from .supplier import ProcessorSupplier


class ToDictSinkP(Processor):
    """Puts ``(key, value)`` pairs into a dict (a later value replaces an earlier one)."""

    collects = True

    def __init__(self) -> None:
        self.result: dict[Any, Any] = {}

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self.result.update(inbox.take())

    def result_part(self) -> dict[Any, Any]:
        return self.result


class ToDictSink(ProcessorSupplier):
    """Supplier of `ToDictSinkP`; the job's result is one dict (instances merged in index order)."""

    def __init__(self) -> None:
        super().__init__(ToDictSinkP, label="to_dict_sink")

    #: the dicts of the instances merged in index order
    merge_results = staticmethod(merge_parts)

    def __repr__(self) -> str:
        return "to_dict_sink()"

