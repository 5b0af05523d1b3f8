"""The collect sink: every item goes into the job's result, a list."""

from __future__ import annotations

from typing import Any

from ..core.inbox import Inbox
from ..core.processor import Processor
from .supplier import ProcessorSupplier


class CollectSinkP(Processor):
    """Collects every item into a list; the job's result is the lists of all instances joined."""

    collects = True

    def __init__(self) -> None:
        self.items: list[Any] = []

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self.items += inbox.take()

    def result_part(self) -> list[Any]:
        return self.items


class CollectSink(ProcessorSupplier):
    """Supplier of `CollectSinkP`."""

    def __init__(self) -> None:
        super().__init__(CollectSinkP, label="collect_sink")

    @staticmethod
    def merge_results(parts: list[list[Any]]) -> list[Any]:
        return [x for part in parts for x in part]

    def __repr__(self) -> str:
        return "collect_sink()"


def collect_sink() -> CollectSink:
    """A sink whose items become ``Job.result`` (a list)."""
    return CollectSink()
