"""Control items that travel through queues beside data: watermarks and the DONE marker.

Data moves through queues as plain lists (chunks); control items travel as single objects
between chunks, so one ``type(entry) is list`` check covers a whole chunk.
"""

from __future__ import annotations

import sys
from collections.abc import Hashable
from dataclasses import dataclass

#: Timestamp of the idle marker: a watermark this large means "this input is idle".
IDLE_TIMESTAMP = sys.maxsize


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
IDLE_MESSAGE = Watermark(IDLE_TIMESTAMP)


class _Done:
    __slots__ = ()

    def __repr__(self) -> str:
        return "DONE"

    def __reduce__(self) -> str:
        return "DONE"


#: The end-of-stream marker a tasklet sends down every outbound queue once its processor completes.
DONE = _Done()


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
