"""The to-dict sink: ``(key, value)`` items become one dict, the job's result.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..core.inbox import Inbox
from ..core.plan import merge_parts
from ..core.processor import Processor
from .builder_kind import Kind
from .snapshotting import instance_key, own_values
from .supplier import ProcessorSupplier, made_by


class ToDictSinkP(Processor):
    """Puts ``(key, value)`` pairs into a dict (a later value replaces an earlier one).

    Snapshots: the dict, under a broadcast key naming the instance; a restored instance takes
    its own (at another parallelism, those of the old instances it stands for, in index order).
    Exactly-once, as the result is only read once the job has completed: what a failed
    execution added after the last snapshot went with its instance and is added again once.
    """

    snapshot_support: ClassVar[str] = "supported"

    collects = True

    def __init__(self) -> None:
        self.result: dict[Any, Any] = {}

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self.result.update(inbox.take())

    def save_to_snapshot(self) -> bool:
        return self.outbox.offer_to_snapshot(instance_key("ToDictSinkP", self.context), self.result)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        mine, _, _ = own_values(inbox, "ToDictSinkP", self.context)
        for part in mine:
            self.result.update(part)

    def result_part(self) -> dict[Any, Any]:
        return self.result


def to_dict_sink() -> ProcessorSupplier:
    """A sink of ``(key, value)`` pairs whose result is one dict (instances merged in index
    order, so a later instance's value for a key wins)."""
    return ProcessorSupplier(ToDictSinkP, label="to_dict_sink()", merge_results=merge_parts)


BUILDER_KINDS = (
    Kind(id="to_dict", label="to dict", category="sink", inputs=True, outputs=False, params=(),
         build=lambda p, f, ns: to_dict_sink(),
         code=lambda p, f: ("to_dict_sink()", {"from jetbench.processors.to_dict_sink import to_dict_sink"}),
         description="(key, value) items; the job's result is a dict", read=lambda s, r: {} if made_by(s, ToDictSinkP) else None),
)
