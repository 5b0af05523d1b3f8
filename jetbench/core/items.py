"""Control items that travel through queues beside data: watermarks and the DONE marker; and
`Stamped`, the columnar chunk of a timestamped stream.

Data moves through queues as chunks: plain lists, or `Stamped` chunks (the timestamps and the
items of a timestamped stream in two equal-length lists); control items travel as single
objects between chunks, so one class check covers a whole chunk.
"""

from __future__ import annotations

import sys
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Final

from .errors import JetbenchError

#: Timestamp of the idle marker: a watermark this large means "this input is idle".
IDLE_TIMESTAMP: Final = sys.maxsize


@dataclass(frozen=True, slots=True)
class Watermark:
    """An event-time watermark: no later item on this stream has a timestamp below ``timestamp``."""

    timestamp: int

    @property
    def is_idle_marker(self) -> bool:
        return self.timestamp == IDLE_TIMESTAMP

    def __repr__(self) -> str:
        return "Watermark(IDLE)" if self.is_idle_marker else f"Watermark({self.timestamp})"

    def __reduce__(self) -> tuple[type[Watermark], tuple[int]]:
        # pickled as a constructor call: compiled with mypyc, the default would set the frozen field
        return Watermark, (self.timestamp,)


#: Sent by a producer into a queue when it will offer nothing more.
IDLE_MESSAGE: Final = Watermark(IDLE_TIMESTAMP)


class _Done:
    __slots__ = ()

    def __repr__(self) -> str:
        return "DONE"

    def __reduce__(self) -> str:
        return "DONE"


#: The end-of-stream marker a tasklet sends down every outbound queue once its processor completes.
DONE: Final = _Done()


@dataclass(frozen=True, slots=True)
class SnapshotBarrier:
    """Jet's snapshot barrier: everything a producer emitted before it belongs to snapshot
    ``snapshot_id``, everything after it to the next one.

    Sources emit it on every output once they have saved their offsets; a tasklet saves its
    processor's state once the barrier has come on every active input, then forwards it. Like a
    watermark it travels alone between chunks, so it costs nothing while no snapshot is taken.
    """

    snapshot_id: int

    def __repr__(self) -> str:
        return f"SnapshotBarrier({self.snapshot_id})"

    def __reduce__(self) -> tuple[type[SnapshotBarrier], tuple[int]]:
        return SnapshotBarrier, (self.snapshot_id,)  # as Watermark's


@dataclass(frozen=True, slots=True)
class BroadcastKey:
    """A snapshot key every instance of the vertex gets back on restore (Jet's ``BroadcastKey``).

    A plain key goes back to the one instance that owns it (``hash(key) % parallelism``, as a
    partitioned edge routes); state that is not partitioned by key, such as a source's offset,
    is saved under a broadcast key and each restored instance takes what is its own.
    """

    key: Hashable  # hashed with the key: a snapshot key must be hashable

    def __reduce__(self) -> tuple[type[BroadcastKey], tuple[Hashable]]:
        return BroadcastKey, (self.key,)  # as Watermark's


class Stamped:
    """A chunk of a timestamped stream as two columns: ``items[i]`` has timestamp ``ts[i]``.

    It stands for the ``(ts, item)`` pairs ``zip(ts, items)`` (what `pairs` builds), without a
    tuple per item: a processor that opts in (``Processor.accepts_stamped``) reads and emits the
    columns (`jetbench.core.inbox.Inbox.take_stamped`, `jetbench.core.outbox.Outbox.offer_stamped`);
    any other gets the pairs. Its length counts items. Whoever holds a chunk owns its lists:
    handing one on (to an outbox, a queue) hands them over.

    >>> chunk = Stamped([5, 7], ["a", "b"])
    >>> len(chunk), chunk.pairs(), chunk.slice(1).pairs()
    (2, [(5, 'a'), (7, 'b')], [(7, 'b')])
    """

    __slots__ = ("ts", "items")

    def __init__(self, ts: list[Any], items: list[Any]):
        self.ts = ts
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __bool__(self) -> bool:
        return len(self.items) > 0

    def pairs(self) -> list[tuple[Any, Any]]:
        """The chunk as ``(ts, item)`` pairs, as a processor that did not opt in sees it."""
        # the columns are as long by construction (`Outbox.offer_stamped` checks); zip's strict=
        # would cost a keyword call, more than the zip itself for a small chunk
        return list(zip(self.ts, self.items))  # noqa: B905

    def slice(self, start: int, end: int | None = None) -> Stamped:
        """Items ``start`` to ``end`` (the end if None), in new lists."""
        if end is None:
            return Stamped(self.ts[start:], self.items[start:])
        return Stamped(self.ts[start:end], self.items[start:end])

    def copy(self) -> Stamped:
        return Stamped(list(self.ts), list(self.items))

    def extend(self, other: Stamped) -> None:
        """Append ``other``'s items (and timestamps) to this chunk's own lists."""
        self.ts += other.ts
        self.items += other.items

    def __repr__(self) -> str:
        return f"Stamped({self.ts!r}, {self.items!r})"

    def __reduce__(self) -> tuple[type[Stamped], tuple[list[Any], list[Any]]]:
        return Stamped, (self.ts, self.items)


#: A data chunk in a queue, an outbox bucket or an emitter: plain items, or a stamped chunk.
Chunk = list[Any] | Stamped


def chunk_len(chunk: Chunk) -> int:
    """How many items ``chunk`` holds: ``len(chunk)``, called directly (compiled, ``len`` of a
    `Stamped` typed as either kind of chunk goes through Python's protocol)."""
    if isinstance(chunk, Stamped):
        return len(chunk.items)
    return len(chunk)


def chunk_tail(chunk: Chunk, start: int) -> Chunk:
    """The items of ``chunk`` from ``start`` on, a chunk of the same kind: new lists, or
    ``chunk`` itself from 0 (a chunk waiting whole is not copied: a copy is a pass over it)."""
    if start == 0:
        return chunk
    if isinstance(chunk, Stamped):
        return chunk.slice(start)
    return chunk[start:]


def chunk_head(chunk: Chunk, end: int) -> Chunk:
    """The first ``end`` items of ``chunk``, a chunk of the same kind (new lists)."""
    if isinstance(chunk, Stamped):
        return chunk.slice(0, end)
    return chunk[:end]


def chunk_copy(chunk: Chunk) -> Chunk:
    """A copy of ``chunk`` with lists of its own (for a second consumer of the same items)."""
    if isinstance(chunk, Stamped):
        return chunk.copy()
    return list(chunk)


def unzip_pairs(pairs: list[Any]) -> tuple[list[Any], list[Any]]:
    """``(ts, items)`` columns of a list of ``(ts, item)`` pairs; a JetbenchError naming the
    first entry that is not a pair.

    >>> unzip_pairs([(5, "a"), (7, "b")])
    ([5, 7], ['a', 'b'])
    """
    try:
        return [t for t, _ in pairs], [x for _, x in pairs]
    except (TypeError, ValueError):
        for i, p in enumerate(pairs):
            try:
                _t, _x = p
            except (TypeError, ValueError):
                raise JetbenchError(f"item {i} of a timestamped batch is not a (ts, item) pair: {p!r}") from None
        raise
