"""What the built-in processors share to save and restore their snapshot state.

`EntrySaver` offers a stream of ``(key, value)`` entries to the snapshot bucket across as many
``save_to_snapshot()`` calls as a bucket that fills needs. `instance_key` and `own_values` are the
per-instance state of a processor that is not partitioned by key (a source's offset, a sink's
file, a watermark's progress): it is saved under a `BroadcastKey` naming the instance, every
restored instance gets every such entry and keeps its own (or, restored at another parallelism,
those of the old instances ``k, k + n, ...`` with n the new parallelism).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..core.errors import JetbenchError
from ..core.inbox import Inbox
from ..core.items import BroadcastKey
from ..core.outbox import Outbox
from ..core.processor import ProcessorContext


class EntrySaver:
    """Offers entries to ``outbox``'s snapshot bucket until all went in.

    ``save(make)`` starts a new pass with ``make()`` if none is under way, then fills the bucket
    from it (`Outbox.offer_entries_to_snapshot`: a bucketful per call, no call per entry); True
    once the pass is complete (the next ``save`` starts a new one).

    >>> from jetbench.core.outbox import Outbox
    >>> box, saver, saved = Outbox(ordinal_count=0, capacity=2), EntrySaver(), []
    >>> while not saver.save(box, lambda: [("a", 1), ("b", 2), ("c", 3)]):
    ...     saved += box.take_snapshot()
    >>> saved + box.take_snapshot()
    [('a', 1), ('b', 2), ('c', 3)]
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: Iterator[tuple[Any, Any]] | None = None

    def save(self, outbox: Outbox, make: Callable[[], Iterable[tuple[Any, Any]]]) -> bool:
        if self._entries is None:
            self._entries = iter(make())
        if not outbox.offer_entries_to_snapshot(self._entries):
            return False
        self._entries = None
        return True


def instance_key(kind: str, context: ProcessorContext) -> BroadcastKey:
    """The broadcast key of this instance's own state: ``(kind, global index, parallelism)``."""
    return BroadcastKey((kind, context.global_index, context.total_parallelism))


def save_position(outbox: Outbox, kind: str, context: ProcessorContext, *position: Any) -> bool:
    """Offer a source's position (an offset, the files done, ...) as this instance's own state,
    with the parallelism it was taken at (`restored_position` checks it)."""
    return outbox.offer_to_snapshot(instance_key(kind, context), (context.total_parallelism, *position))


def restored_position(inbox: Inbox, kind: str, context: ProcessorContext) -> tuple[Any, ...] | None:
    """The position `save_position` saved for this instance, None if the snapshot has none; a
    `JetbenchError` naming the vertex if it was taken at another parallelism (a source's share
    of its input depends on it)."""
    mine, _, _ = own_values(inbox, kind, context)
    if not mine:
        return None
    parallelism, *position = mine[0]
    if parallelism != context.total_parallelism:
        raise JetbenchError(f"vertex {context.vertex_name!r}: the snapshot was taken at parallelism "
                            f"{parallelism}, this job runs {context.total_parallelism} instances")
    return tuple(position)


def own_values(inbox: Inbox, kind: str, context: ProcessorContext
               ) -> tuple[list[Any], list[Any], list[tuple[Any, Any]]]:
    """Take every entry from ``inbox``: the values saved under `instance_key` by the instances
    this one stands for (itself at the same parallelism), the values every instance saved under
    it, and the other entries (keyed state)."""
    mine: list[Any] = []
    every: list[Any] = []
    rest: list[tuple[Any, Any]] = []
    k, n = context.global_index, context.total_parallelism
    for key, value in inbox.take():
        if isinstance(key, BroadcastKey):
            tag = key.key
            if type(tag) is tuple and len(tag) == 3 and tag[0] == kind:
                old_k, old_n = tag[1], tag[2]
                if (old_k == k) if old_n == n else (old_k % n == k):
                    mine.append(value)
                every.append(value)
                continue
        rest.append((key, value))
    return mine, every, rest
