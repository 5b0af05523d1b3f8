"""The collect sink: every item goes into the job's result, a list."""

from __future__ import annotations

from typing import Any, ClassVar

from ..core.inbox import Inbox
from ..core.native import mypyc_attr
from ..core.outbox import Outbox
from ..core.processor import Processor, ProcessorContext
from .builder_kind import Kind
from .supplier import ProcessorSupplier, made_by


@mypyc_attr(allow_interpreted_subclasses=True)
class CollectSinkP(Processor):
    """Collects every item into a list; the job's result is the lists of all instances joined.

    With a processing guarantee it is a transactional sink: items received after the last
    barrier wait in a pending list; phase 1 of a snapshot (``snapshot_commit_prepare``) prepares
    them, phase 2 (``snapshot_commit_finish(True)``) commits them into ``items``, and
    ``complete()`` commits the rest. What it committed is its snapshot state, so a job restored
    from a snapshot has exactly the items that snapshot covers. Without a guarantee the pending
    list *is* ``items``: nothing is held back.
    """

    collects = True
    snapshot_support: ClassVar[str] = "supported"

    def __init__(self) -> None:
        self.items: list[Any] = []  # committed: the result
        self._pending: list[Any] = self.items  # received since the last barrier
        self._prepared: list[Any] = []  # received before the barrier of the snapshot in phase 2

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        if context.processing_guarantee != "none":
            self._pending = []

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self._pending += inbox.take()

    def complete(self) -> bool:
        if self._pending is not self.items:
            self.items += self._prepared
            self.items += self._pending
            self._prepared, self._pending = [], []
        return True

    def save_to_snapshot(self) -> bool:
        pending = self._pending if self._pending is not self.items else []
        return self.outbox.offer_to_snapshot(("CollectSinkP", self.context.global_index),
                                             self.items + self._prepared + pending)

    def snapshot_commit_prepare(self) -> bool:
        if self._pending is not self.items:
            self._prepared += self._pending
            self._pending = []
        return True

    def snapshot_commit_finish(self, success: bool) -> bool:
        if success:
            self.items += self._prepared
        elif self._pending is not self.items:
            self._pending = self._prepared + self._pending  # into the next snapshot's transaction
        self._prepared = []
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        for _, items in inbox.take():
            self.items += items

    def result_part(self) -> list[Any]:
        return self.items


def merge_lists(parts: list[list[Any]]) -> list[Any]:
    """The instances' lists joined, in instance order; one instance's list is the result as it
    is (its job has ended: nothing adds to it any more). Copying it would touch every result
    once more, long after it was made: a cache miss each (Nexmark Q1 at 1M events: 920k).

    >>> part = [1, 2]
    >>> merge_lists([part]) is part, merge_lists([[1], [], [2, 3]])
    (True, [1, 2, 3])
    """
    if len(parts) == 1:
        return parts[0]
    return [x for part in parts for x in part]


def collect_sink() -> ProcessorSupplier:
    """A sink whose items become ``Job.result`` (a list)."""
    return ProcessorSupplier(CollectSinkP, label="collect_sink()", merge_results=merge_lists)


BUILDER_KINDS = (
    Kind(id="collect", label="collect", category="sink", inputs=True, outputs=False, params=(),
         build=lambda p, f, ns: collect_sink(),
         code=lambda p, f: ("collect_sink()", {"from jetbench.processors import collect_sink"}),
         description="the job's result is the list of items", read=lambda s, r: {} if made_by(s, CollectSinkP) else None),
)
