"""The inbox: one batch of items from a single inbound ordinal, consumed from the front.

A batch of a timestamped stream may be held as two columns (a `Stamped` chunk: timestamps and
items) for a processor that opted in (``Processor.accepts_stamped``): it reads them with
`Inbox.take_stamped`. The item API still sees ``(ts, item)`` pairs then, built one at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

from .errors import JetbenchError
from .items import Stamped, unzip_pairs

#: the items of an empty inbox: one list shared by every inbox, never handed out nor appended to
#: (an inbox only replaces its list), so that emptying an inbox allocates nothing
_NO_ITEMS: Final[list[Any]] = []


class Inbox:
    """A batch of items; remove an item only once it is fully handled.

    Item API: `peek`, `poll`, `remove`; batch API: `take` (hands a list over to the caller),
    `take_stamped` (a timestamped batch as ``(ts, items)`` columns).

    >>> inbox = Inbox([1, 2, 3])
    >>> inbox.peek(), inbox.poll(), len(inbox)
    (1, 1, 2)
    >>> inbox.take()
    [2, 3]
    >>> bool(inbox)
    False
    >>> inbox = Inbox(Stamped([5, 7, 9], ["a", "b", "c"]))
    >>> inbox.poll(), inbox.take_stamped(1), inbox.take()
    ((5, 'a'), ([7], ['b']), [(9, 'c')])
    """

    __slots__ = ("_items", "_head", "_ts")

    def __init__(self, items: list[Any] | Stamped | None = None):
        self._items: list[Any] = _NO_ITEMS
        self._head = 0
        #: the timestamps column of a stamped batch (``_items`` is then its items column), else None
        self._ts: list[Any] | None = None
        if isinstance(items, Stamped):
            self._fill_stamped(items)
        elif items is not None:
            self._items = items

    def __len__(self) -> int:
        return len(self._items) - self._head

    def __bool__(self) -> bool:
        return self._head < len(self._items)

    @property
    def stamped(self) -> bool:
        """Whether the batch is held as columns (`take_stamped` takes them without a copy)."""
        return self._ts is not None

    def __iter__(self) -> Iterator[Any]:
        """Iterate the remaining items without removing them."""
        items, head, ts = self._items, self._head, self._ts
        if ts is not None:
            return zip(ts[head:], items[head:], strict=True)
        return iter(items[head:]) if head else iter(items)

    def peek(self) -> Any:
        """The first item, or None if the inbox is empty."""
        head = self._head
        if head < len(self._items):
            ts = self._ts
            return self._items[head] if ts is None else (ts[head], self._items[head])
        return None

    def poll(self) -> Any:
        """Remove and return the first item, or None if the inbox is empty."""
        head = self._head
        if head < len(self._items):
            ts = self._ts
            item = self._items[head] if ts is None else (ts[head], self._items[head])
            self._head = head + 1
            return item
        return None

    def remove(self) -> Any:
        """Remove and return the first item; raises IndexError if the inbox is empty."""
        head = self._head
        if head >= len(self._items):
            raise IndexError("remove() from an empty inbox")
        self._head = head + 1
        ts = self._ts
        return self._items[head] if ts is None else (ts[head], self._items[head])

    def take(self, max_items: int | None = None) -> list[Any]:
        """Remove and return up to ``max_items`` items (all if None) as a list the caller owns."""
        if self._ts is not None:
            ts, items = self.take_stamped(max_items)
            return list(zip(ts, items, strict=True))
        items, head = self._items, self._head
        available = len(items) - head
        if max_items is None or max_items >= available:
            if head == 0:
                if items is _NO_ITEMS:
                    return []
                self._items = _NO_ITEMS
                return items
            self._items, self._head = _NO_ITEMS, 0
            return items[head:]
        if max_items <= 0:
            return []
        end = head + max_items
        self._head = end
        return items[head:end]

    def take_stamped(self, max_items: int | None = None) -> tuple[list[Any], list[Any]]:
        """Remove up to ``max_items`` items (all if None) of a timestamped batch and return them
        as columns ``(ts, items)``, lists the caller owns; a batch of ``(ts, item)`` pairs (from a
        producer that emits pairs) is unzipped. A JetbenchError names an item that is not a pair.

        >>> Inbox([(5, "a"), (7, "b")]).take_stamped()
        ([5, 7], ['a', 'b'])
        """
        ts = self._ts
        if ts is None:
            return unzip_pairs(self.take(max_items))
        items, head = self._items, self._head
        available = len(items) - head
        if max_items is None or max_items >= available:
            self._items, self._head, self._ts = _NO_ITEMS, 0, None
            if head == 0:
                return ts, items
            return ts[head:], items[head:]
        if max_items <= 0:
            return [], []
        end = head + max_items
        self._head = end
        return ts[head:end], items[head:end]

    def drain(self, fn: Callable[[Any], Any]) -> int:
        """Call ``fn`` on each item, removing it after the call returns; returns the count."""
        n = 0
        ts = self._ts
        while self._head < len(self._items):
            head = self._head
            fn(self._items[head] if ts is None else (ts[head], self._items[head]))
            self._head = head + 1
            n += 1
        return n

    def clear(self) -> None:
        self._items, self._head, self._ts = _NO_ITEMS, 0, None

    # -- engine side --------------------------------------------------------------------------

    def _fill(self, items: list[Any]) -> None:
        """Hand ``items`` (owned by the inbox from now on) to an empty inbox."""
        self._items, self._head, self._ts = items, 0, None

    def _fill_stamped(self, chunk: Stamped) -> None:
        """Hand ``chunk``'s columns (owned by the inbox from now on) to an empty inbox."""
        if len(chunk.ts) != len(chunk.items):
            raise JetbenchError(f"a stamped chunk has {len(chunk.ts)} timestamps for {len(chunk.items)} items")
        self._items, self._head, self._ts = chunk.items, 0, chunk.ts

    def __repr__(self) -> str:
        return f"Inbox({len(self)} items)"
