"""Outbound collectors: route chunks from an outbox bucket into the queues of one edge.

A collector takes a whole bucket, moves what fits into its target queues, and keeps the rest
as ``pending`` until a later flush; while anything is pending it takes no new bucket, so at
most one bucket per edge is ever in flight. Control items (watermarks, DONE) go to every target
queue after the pending data, remembering which targets already took them.

A bucket is a data chunk: a list, or a `Stamped` chunk (a timestamped stream's columns), routed
item by item exactly as its ``(ts, item)`` pairs would be: a partitioned edge's key function
sees the pair, unless it says (an ``item_key`` attribute) that it reads the item alone.

A chunk a queue took whole belongs to the consumer from that instant: a collector reads nothing
of it afterwards, not even its length. The consumer's thread may already have drained it and
joined another queue's chunk into it (`InboundStream.drain` grows the first chunk it pops), so a
length read after the offer counted the joined items as a refused remainder and sent them a
second time (issue 36: duplicated lines under exactly-once, most often behind a dedicated
thread, which the producer's offer wakes).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable
from typing import Any

from .errors import DagError
from .items import Chunk, Stamped, chunk_copy, chunk_len, chunk_tail
from .queues import SPSCQueue


class Routing(enum.Enum):
    """How an edge spreads items over the consumer's parallel instances."""

    UNICAST = "unicast"  # each batch to one instance, round-robin, skipping full queues
    PARTITIONED = "partitioned"  # same key -> same instance
    BROADCAST = "broadcast"  # every item to every instance
    ISOLATED = "isolated"  # producer i feeds a fixed, disjoint subset of consumers
    ALL_TO_ONE = "all-to-one"  # everything to a single consumer instance


class Collector:
    """Base: pending-data bookkeeping and control-item broadcast over ``targets``."""

    __slots__ = ("targets", "pending", "_control_accepted")

    def __init__(self, targets: list[SPSCQueue]):
        self.targets = targets
        self.pending = False
        self._control_accepted: set[int] = set()

    def route(self, chunk: Chunk) -> int:
        """Take ownership of ``chunk``; move what fits; return the number of items moved."""
        raise NotImplementedError

    def push(self) -> int:
        """Retry the pending remainder; return the number of items moved."""
        raise NotImplementedError

    def offer_control(self, item: object) -> bool:
        """Offer a control item to every target once pending data has gone; True when all took it."""
        if self.pending:
            self.push()
            if self.pending:
                return False
        accepted = self._control_accepted
        for i, q in enumerate(self.targets):
            if i not in accepted and q.offer_control(item):
                accepted.add(i)
        if len(accepted) == len(self.targets):
            accepted.clear()
            return True
        return False


class RoundRobinCollector(Collector):
    """Unicast: each chunk goes to one target, the next chunk to the next; full targets are skipped."""

    __slots__ = ("_cursor", "_rest")

    def __init__(self, targets: list[SPSCQueue], start: int = 0):
        super().__init__(targets)
        self._cursor = start % len(targets) if targets else 0  # producers start apart, spreading load
        self._rest: Chunk = []

    def route(self, chunk: Chunk) -> int:
        targets = self.targets
        n = len(targets)
        size = chunk_len(chunk)  # read before the offer: see the module's docstring
        if n == 1:
            moved = targets[0].offer_chunk(chunk)
            if moved < size:
                self._rest = chunk_tail(chunk, moved)
                self.pending = True
            return moved
        cursor = self._cursor
        total = 0
        for _ in range(n):
            moved = targets[cursor].offer_chunk(chunk)
            cursor = cursor + 1 if cursor + 1 < n else 0
            if moved:
                total += moved
                if moved == size:
                    self._cursor = cursor
                    return total
                chunk = chunk_tail(chunk, moved)  # the queue took a copy of the head: still ours
                size -= moved
        self._cursor = cursor
        self._rest = chunk
        self.pending = True
        return total

    def push(self) -> int:
        rest, self._rest = self._rest, []
        self.pending = False
        return self.route(rest)


class PerTargetCollector(Collector):
    """Base of collectors that split a chunk into one part per target, each retried on its own."""

    __slots__ = ("_rests",)

    def __init__(self, targets: list[SPSCQueue]):
        super().__init__(targets)
        self._rests: list[Chunk] = [[] for _ in targets]

    def push(self) -> int:
        moved = 0
        pending = False
        rests = self._rests
        for i, q in enumerate(self.targets):
            part = rests[i]
            if part:
                size = chunk_len(part)  # read before the offer: see the module's docstring
                k = q.offer_chunk(part)
                moved += k
                if k < size:
                    rests[i] = chunk_tail(part, k)
                    pending = True
                else:
                    rests[i] = []
        self.pending = pending
        return moved


class PartitionedCollector(PerTargetCollector):
    """Partitioned: item -> target ``hash(key_fn(item)) % len(targets)``, computed once per item.

    A `Stamped` chunk is split into one `Stamped` part per target, each item going where its
    ``(ts, item)`` pair would: ``key_fn`` is called on the pair, or, when it has an ``item_key``
    attribute (a function of the item alone, as `jetbench.processors.planning.EventKey`), that
    is called on the item.
    """

    __slots__ = ("_key_fn", "_item_key")

    def __init__(self, targets: list[SPSCQueue], key_fn: Callable[[Any], Hashable]):
        super().__init__(targets)
        self._key_fn = key_fn
        self._item_key: Callable[[Any], Hashable] | None = getattr(key_fn, "item_key", None)

    def route(self, chunk: Chunk) -> int:
        n = len(self.targets)
        parts: list[Chunk]
        if n == 1:
            parts = [chunk]
        elif isinstance(chunk, Stamped):
            parts = self._split_stamped(chunk, n)
        else:
            lists: list[list[Any]] = [[] for _ in range(n)]
            appends = [p.append for p in lists]
            key_fn = self._key_fn
            for item in chunk:
                appends[hash(key_fn(item)) % n](item)
            parts = list(lists)
        self._rests = parts
        return self.push()

    def _split_stamped(self, chunk: Stamped, n: int) -> list[Chunk]:
        ts_parts: list[list[Any]] = [[] for _ in range(n)]
        item_parts: list[list[Any]] = [[] for _ in range(n)]
        item_key = self._item_key
        if item_key is not None:
            targets = [hash(item_key(x)) % n for x in chunk.items]
        else:
            key_fn = self._key_fn
            targets = [hash(key_fn(pair)) % n for pair in zip(chunk.ts, chunk.items, strict=True)]
        for i, t, x in zip(targets, chunk.ts, chunk.items, strict=True):
            ts_parts[i].append(t)
            item_parts[i].append(x)
        return [Stamped(t, x) for t, x in zip(ts_parts, item_parts, strict=True)]


class BroadcastCollector(PerTargetCollector):
    """Broadcast: every target gets every item (each target its own copy of the chunk)."""

    __slots__ = ()

    def route(self, chunk: Chunk) -> int:
        self._rests = [chunk if i == 0 else chunk_copy(chunk) for i in range(len(self.targets))]
        return self.push()


def make_collector(
    routing: Routing, targets: list[SPSCQueue], key_fn: Callable[[Any], Hashable] | None, start: int = 0
) -> Collector:
    """The collector for producer instance ``start`` on one edge; ``targets`` are its queues."""
    if routing is Routing.PARTITIONED:
        if key_fn is None:
            raise DagError("a partitioned edge needs a key function (Edge.partitioned(key_fn))")
        return PartitionedCollector(targets, key_fn)
    if routing is Routing.BROADCAST:
        return BroadcastCollector(targets)
    return RoundRobinCollector(targets, start)  # unicast, isolated and all-to-one differ only in targets
