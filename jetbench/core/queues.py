"""Bounded single-producer/single-consumer queues, and the inbound stream that drains them.

Data travels as chunks, plain lists or `Stamped` columns (a timestamped stream, see
`jetbench.core.items`); control items (watermarks, DONE) travel alone between chunks. Each
side writes only its own counter (``offered`` by the producer, ``polled`` by the consumer), so
no lock is needed: deque append/popleft are atomic, and a stale read only under-reports room.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from .items import DONE, Chunk, Stamped, Watermark, chunk_head, chunk_len
from .watermarks import WatermarkCoalescer

#: Capacity, in items, of each queue of an edge unless `Edge.queue_size` says otherwise.
DEFAULT_QUEUE_SIZE = 1024


class SPSCQueue:
    """A bounded queue of items between one producer and one consumer instance.

    Capacity counts items, whatever the chunks (a control item takes one slot). A full queue
    refuses, never blocks.

    >>> q = SPSCQueue(capacity=3)
    >>> q.offer_chunk([1, 2]), q.offer_chunk(Stamped([5, 6], [3, 4])), q.size
    (2, 1, 3)
    """

    __slots__ = ("capacity", "chunks", "append", "popleft", "offered", "polled", "index", "wake")

    def __init__(self, capacity: int, index: int = 0):
        self.capacity = capacity
        self.chunks: deque[Any] = deque()  # data chunks (lists, Stamped), or a control item (Watermark, DONE) alone
        #: ``chunks.append`` and ``chunks.popleft``, bound once: the producer's offers and the
        #: consumer's drain call them without a method lookup each
        self.append: Callable[[Any], None] = self.chunks.append
        self.popleft: Callable[[], Any] = self.chunks.popleft
        self.offered = 0
        self.polled = 0
        self.index = index  # the producer's position in the consumer's conveyor
        #: called after each accepted offer when the consumer sleeps until handed work (its
        #: thread's `jetbench.core.idle.TimerIdler.wake`); None when the consumer polls
        self.wake: Callable[[], None] | None = None

    @property
    def size(self) -> int:
        size = self.offered - self.polled
        return size if size > 0 else 0

    def offer_chunk(self, chunk: Chunk) -> int:
        """Append the longest prefix of ``chunk`` that fits (the queue owns it); return its length."""
        free = self.capacity - self.offered + self.polled
        if free <= 0:
            return 0
        n = chunk_len(chunk)
        if n > free:
            chunk = chunk_head(chunk, free)
            n = free
        self.append(chunk)
        self.offered += n
        wake = self.wake
        if wake is not None:
            wake()
        return n

    def offer_control(self, item: object) -> bool:
        if self.offered - self.polled >= self.capacity:
            return False
        self.append(item)
        self.offered += 1
        wake = self.wake
        if wake is not None:
            wake()
        return True


class InboundStream:
    """The queues feeding one inbound ordinal of one consumer instance (Jet's conveyor).

    `drain` visits live queues round-robin, taking whole chunks until ``limit`` items are in
    hand, all of one kind (plain lists, or `Stamped`: a chunk of the other kind is left for the
    next drain). At a control item it stops draining that queue: DONE retires the queue, a watermark
    goes through the queue-level coalescer. A newly coalesced watermark is left in
    ``self.watermark`` and the drain returns at once, so the items before it are processed first.

    A subclass that understands more control items (snapshot barriers: `jetbench.core.
    snapshot_tasklet.BarrierInboundStream`) overrides the three hooks `_held`, `_control` and
    `_drained`, not the drain itself.
    """

    __slots__ = ("ordinal", "priority", "queues", "_live", "_coalescer", "_cursor", "watermark")

    def __init__(self, ordinal: int, priority: int, queues: list[SPSCQueue]):
        self.ordinal = ordinal
        self.priority = priority
        self.queues = queues
        for i, q in enumerate(queues):
            q.index = i
        self._live = list(queues)
        self._coalescer = WatermarkCoalescer(len(queues))
        self._cursor = 0
        self.watermark: Watermark | None = None

    @property
    def done(self) -> bool:
        return not self._live

    @property
    def size(self) -> int:
        return sum(q.size for q in self.queues)

    @property
    def capacity(self) -> int:
        return sum(q.capacity for q in self.queues)

    def drain(self, limit: int) -> Chunk | None:
        """Take up to about ``limit`` items (whole chunks) from the live queues; None if nothing."""
        live = self._live
        n = len(live)
        if n == 0:
            return None
        coalescer = self._coalescer
        if coalescer.idle_pending:
            idle = coalescer.take_idle()
            if idle is not None:
                self.watermark = idle
                return None
        result: Chunk | None = None
        retired = None
        start = self._cursor
        self._cursor = start + 1
        for k in range(n):
            q = live[(start + k) % n] if n > 1 else live[0]
            chunks = q.chunks
            if not chunks or self._held(q):
                continue
            popleft = q.popleft
            while chunks:
                chunk = popleft()
                cls = type(chunk)
                if cls is list or cls is Stamped:
                    if result is None:
                        result = chunk
                    elif type(result) is not cls:
                        chunks.appendleft(chunk)  # the other kind of chunk: the next drain's
                        break
                    else:
                        join_chunk(result, chunk)
                    q.polled += chunk_len(chunk)
                    if coalescer.any_idle:
                        coalescer.mark_active(q.index)
                    if chunk_len(result) >= limit:
                        break
                    continue
                q.polled += 1
                if chunk is DONE:
                    retired = [q] if retired is None else [*retired, q]
                    wm = coalescer.done(q.index)
                else:
                    wm = self._control(q, chunk)
                if wm is not None:
                    self.watermark = wm
                    if retired is not None:
                        self._retire(retired)
                    self._drained()
                    return result
                break
            if result is not None and chunk_len(result) >= limit:
                break
        if retired is not None:
            self._retire(retired)
        self._drained()
        return result

    # -- hooks (a subclass's control items) -------------------------------------------------------

    def _held(self, q: SPSCQueue) -> bool:
        """Whether ``q`` is not to be drained now."""
        return False

    def _control(self, q: SPSCQueue, item: Any) -> Watermark | None:
        """Take control item ``item`` (not DONE) from ``q``; a newly coalesced watermark or None."""
        return self._coalescer.observe(q.index, item)

    def _drained(self) -> None:
        """Called at the end of every drain that visited the queues."""

    def _retire(self, queues: list[SPSCQueue]) -> None:
        self._live = [q for q in self._live if q not in queues]


def join_chunk(into: Any, chunk: Any) -> None:
    """Append data chunk ``chunk`` to ``into``, a chunk of the same kind (a drain's result)."""
    if into.__class__ is list:
        into += chunk
    else:
        into.extend(chunk)
