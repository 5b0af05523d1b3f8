"""The collect sink: every item goes into the job's result, a list."""

from __future__ import annotations

from typing import Any

from ..core.inbox import Inbox
from ..core.processor import Processor
from .builder_kind import Kind
from .supplier import ProcessorSupplier, made_by


class CollectSinkP(Processor):
    """Collects every item into a list; the job's result is the lists of all instances joined."""

    collects = True

    def __init__(self) -> None:
        self.items: list[Any] = []

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self.items += inbox.take()

    def result_part(self) -> list[Any]:
        return self.items


def merge_lists(parts: list[list[Any]]) -> list[Any]:
    """The instances' lists joined, in instance order."""
    return [x for part in parts for x in part]


def collect_sink() -> ProcessorSupplier:
    """A sink whose items become ``Job.result`` (a list)."""
    return ProcessorSupplier(CollectSinkP, label="collect_sink()", merge_results=merge_lists)


BUILDER_KINDS = (
    Kind("collect", "collect", "sink", True, False, (),
         lambda p, f, ns: collect_sink(), lambda p, f: ("collect_sink()", {"from jetbench.processors import collect_sink"}),
         "the job's result is the list of items", read=lambda s, r: {} if made_by(s, CollectSinkP) else None),
)
