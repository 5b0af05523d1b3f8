"""The outbox: one bounded bucket per outbound ordinal, emptied by the tasklet into the queues.

A cooperative processor sees `offer` return False when a bucket is full and must return and
re-offer the same item on its next call. `offer_batch` is the fast path: it accepts a prefix
of a list and says how many items it took; `offer_stamped` does the same for a timestamped
stream's ``(ts, items)`` columns, which travel on as a `Stamped` chunk (a consumer that did not
opt in to columns gets the ``(ts, item)`` pairs, as if they had been offered one by one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import Any

from .errors import JetbenchError
from .items import Chunk, Stamped, Watermark, chunk_len
from .native import mypyc_attr

DEFAULT_OUTBOX_CAPACITY = 1024


@mypyc_attr(allow_interpreted_subclasses=True)  # jetbench.testing's checking outbox subclasses it
class Outbox:
    """Bounded buckets per outbound ordinal; watermarks go to every ordinal, after pending data.

    >>> box = Outbox(ordinal_count=1, capacity=2)
    >>> box.offer("a"), box.offer_batch(["b", "c"]), box.offer("d")
    (True, 1, False)
    >>> box.room()
    0
    """

    __slots__ = ("_buckets", "capacity", "accepted", "_control", "_ordinal_count", "_owner", "_snapshot")

    def __init__(self, ordinal_count: int, capacity: int = DEFAULT_OUTBOX_CAPACITY, owner: str = "processor"):
        if capacity < 1:
            raise JetbenchError(f"outbox capacity must be >= 1, got {capacity}")
        #: one data chunk per ordinal: a list of items, or a `Stamped` chunk from `offer_stamped`
        self._buckets: list[Chunk] = [[] for _ in range(ordinal_count)]
        self._ordinal_count = ordinal_count
        self.capacity = capacity
        self.accepted = 0  # items accepted so far; the tasklet compares it to detect progress
        self._control: Watermark | None = None
        self._owner = owner
        self._snapshot: list[tuple[Any, Any]] = []  # the snapshot bucket: (key, value) entries

    @property
    def ordinal_count(self) -> int:
        return self._ordinal_count

    def room(self, ordinal: int = 0) -> int:
        """How many more items bucket ``ordinal`` accepts now (0 while a watermark is pending)."""
        if self._control is not None:
            return 0
        return self.capacity - chunk_len(self._bucket(ordinal))

    def offer(self, item: Any, ordinal: int | Sequence[int] | None = None) -> bool:
        """Offer one item to ``ordinal`` (None: every ordinal; or a sequence of ordinals).

        Returns False, accepting nothing, if any target bucket is full. A `Watermark` always goes
        to every ordinal, once the data offered before it has left.
        """
        if type(item) is Watermark:
            return self._offer_watermark(item)
        if self._control is not None:
            return False
        if ordinal is None:
            if self._ordinal_count == 1:
                ordinal = 0
            else:
                return self._offer_many(item, range(self._ordinal_count))
        elif not isinstance(ordinal, int):
            return self._offer_many(item, ordinal)
        bucket = self._list_bucket(ordinal)
        if len(bucket) >= self.capacity:
            return False
        bucket.append(item)
        self.accepted += 1
        return True

    def offer_batch(self, items: Iterable[Any], ordinal: int = 0) -> int:
        """Accept the longest prefix of ``items`` that fits in bucket ``ordinal``; return its length.

        When the outbox takes a whole list it may keep that very list: don't reuse it afterwards.
        """
        if self._control is not None:
            return 0
        if type(items) is not list:
            items = list(items)
        bucket = self._list_bucket(ordinal)
        free = self.capacity - len(bucket)
        n = len(items)
        if n > free:
            if free <= 0:
                return 0
            bucket.extend(items[:free])
            n = free
        elif bucket:
            bucket.extend(items)
        else:
            self._buckets[ordinal] = items
        self.accepted += n
        return n

    def offer_stamped(self, ts: list[Any], items: list[Any], ordinal: int = 0) -> int:
        """Accept the longest prefix of the items ``items`` with their timestamps ``ts`` (a list
        as long) that fits in bucket ``ordinal``; return its length. They mean the ``(ts, item)``
        pairs ``zip(ts, items)``, offered with `offer_batch`, without a tuple per item.

        When the outbox takes whole lists it may keep them: don't reuse them afterwards.

        >>> box = Outbox(ordinal_count=1, capacity=3)
        >>> box.offer_stamped([5, 7], ["a", "b"]), box.offer_stamped([9, 11], ["c", "d"])
        (2, 1)
        >>> box.take_bucket()
        [(5, 'a'), (7, 'b'), (9, 'c')]
        """
        n = len(items)
        if len(ts) != n:
            raise JetbenchError(f"{self._owner}: offer_stamped() got {len(ts)} timestamps for {n} items")
        if self._control is not None or n == 0:
            return 0
        bucket = self._bucket(ordinal)
        used = chunk_len(bucket)
        free = self.capacity - used
        if n > free:
            if free <= 0:
                return 0
            ts, items, n = ts[:free], items[:free], free
        if not used:
            self._buckets[ordinal] = Stamped(ts, items)
        elif isinstance(bucket, Stamped):
            bucket.ts += ts
            bucket.items += items
        else:  # items offered one by one before: the bucket stays one list, of pairs
            bucket.extend(zip(ts, items, strict=True))
        self.accepted += n
        return n

    def offer_to_snapshot(self, key: Any, value: Any) -> bool:
        """Offer one ``(key, value)`` entry of the processor's state to the snapshot bucket (from
        ``save_to_snapshot``); False, taking nothing, when the bucket is full.

        >>> box = Outbox(ordinal_count=0, capacity=1)
        >>> box.offer_to_snapshot("k", 1), box.offer_to_snapshot("k2", 2), box.take_snapshot()
        (True, False, [('k', 1)])
        """
        bucket = self._snapshot
        if len(bucket) >= self.capacity:
            return False
        bucket.append((key, value))
        self.accepted += 1  # saving state is progress: the worker does not idle between saves
        return True

    def offer_entries_to_snapshot(self, entries: Iterator[tuple[Any, Any]]) -> bool:
        """Move ``(key, value)`` entries from ``entries`` into the snapshot bucket until it is
        full, in one call rather than one `offer_to_snapshot` per entry; True once ``entries``
        is exhausted, False when the bucket filled first (call again with the same iterator).

        >>> box = Outbox(ordinal_count=0, capacity=2)
        >>> it = iter([("a", 1), ("b", 2), ("c", 3)])
        >>> box.offer_entries_to_snapshot(it), box.take_snapshot()
        (False, [('a', 1), ('b', 2)])
        >>> box.offer_entries_to_snapshot(it), box.take_snapshot()
        (True, [('c', 3)])
        """
        bucket = self._snapshot
        room = self.capacity - len(bucket)
        if room <= 0:
            return False
        before = len(bucket)
        bucket.extend(islice(entries, room))
        added = len(bucket) - before
        self.accepted += added
        return added < room

    def take_snapshot(self) -> list[tuple[Any, Any]]:
        """Remove and return the entries in the snapshot bucket (oldest first)."""
        bucket = self._snapshot
        if bucket:
            self._snapshot = []
        return bucket

    def _offer_many(self, item: Any, ordinals: Iterable[int]) -> bool:
        ordinals = list(ordinals)
        buckets = [self._list_bucket(o) for o in ordinals]
        if any(len(b) >= self.capacity for b in buckets):
            return False
        for b in buckets:
            b.append(item)
        self.accepted += 1
        return True

    def _offer_watermark(self, watermark: Watermark) -> bool:
        if self._control is not None or any(self._buckets):
            return False
        self._control = watermark
        self.accepted += 1
        return True

    def _bucket(self, ordinal: int) -> Chunk:
        try:
            return self._buckets[ordinal]
        except (IndexError, TypeError):
            raise JetbenchError(
                f"{self._owner}: no outbound ordinal {ordinal!r} (it has {self._ordinal_count})"
            ) from None

    def _list_bucket(self, ordinal: int) -> list[Any]:
        """Bucket ``ordinal`` as a list to append items to: a `Stamped` bucket becomes its pairs."""
        bucket = self._bucket(ordinal)
        if isinstance(bucket, Stamped):
            pairs = bucket.pairs()
            self._buckets[ordinal] = pairs
            return pairs
        return bucket

    # -- the other side: what the engine (or a test standing in for it) takes out ---------------

    def take_bucket(self, ordinal: int = 0) -> list[Any]:
        """Remove and return the contents of bucket ``ordinal`` (oldest first); stamped items
        (`offer_stamped`) as ``(ts, item)`` pairs.

        >>> box = Outbox(ordinal_count=1, capacity=2)
        >>> box.offer("a"), box.take_bucket(), box.take_bucket()
        (True, ['a'], [])
        """
        bucket = self.take_chunk(ordinal)
        return bucket.pairs() if isinstance(bucket, Stamped) else bucket

    def take_chunk(self, ordinal: int = 0) -> Chunk:
        """Remove and return the contents of bucket ``ordinal`` as the chunk it is (a list, or
        a `Stamped` chunk of what came through `offer_stamped`)."""
        bucket = self._buckets[ordinal]
        if bucket:
            self._buckets[ordinal] = []
        return bucket

    @property
    def pending_watermark(self) -> Watermark | None:
        """The watermark accepted but not yet sent on (it blocks further offers), if any."""
        return self._control

    def take_watermark(self) -> Watermark | None:
        """Remove and return the pending watermark, if any, so that offers are accepted again.

        >>> box = Outbox(ordinal_count=1, capacity=2)
        >>> box.offer(Watermark(5)), box.offer("a"), box.take_watermark(), box.offer("a")
        (True, False, Watermark(5), True)
        """
        watermark, self._control = self._control, None
        return watermark

    def has_data(self) -> bool:
        """Whether any bucket holds items."""
        return any(self._buckets)

    def __repr__(self) -> str:
        sizes = [len(b) for b in self._buckets]
        return f"Outbox(capacity={self.capacity}, buckets={sizes}, watermark={self._control})"


class BlockingOutbox(Outbox):
    """The outbox of a non-cooperative processor: never refuses; waits for room instead.

    ``wait_for_room`` is called when a bucket is full; it flushes to the queues and, if nothing
    moved, sleeps through the idler (and raises if the job is being torn down).
    """

    __slots__ = ("wait_for_room",)

    def __init__(self, ordinal_count: int, capacity: int, owner: str, wait_for_room: Callable[[], None]):
        super().__init__(ordinal_count, capacity, owner)
        self.wait_for_room = wait_for_room

    def offer(self, item: Any, ordinal: int | Sequence[int] | None = None) -> bool:
        while not Outbox.offer(self, item, ordinal):
            self.wait_for_room()
        return True

    def offer_batch(self, items: Iterable[Any], ordinal: int = 0) -> int:
        if type(items) is not list:
            items = list(items)
        done = Outbox.offer_batch(self, items, ordinal)
        while done < len(items):
            self.wait_for_room()
            done += Outbox.offer_batch(self, items[done:], ordinal)
        return done

    def offer_stamped(self, ts: list[Any], items: list[Any], ordinal: int = 0) -> int:
        done = Outbox.offer_stamped(self, ts, items, ordinal)
        while done < len(items):
            self.wait_for_room()
            done += Outbox.offer_stamped(self, ts[done:], items[done:], ordinal)
        return done
