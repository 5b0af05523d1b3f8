"""The inbox: one batch of items from a single inbound ordinal, consumed from the front."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any


class Inbox:
    """A batch of items; remove an item only once it is fully handled.

    Item API: `peek`, `poll`, `remove`; batch API: `take` (hands a list over to the caller).

    >>> inbox = Inbox([1, 2, 3])
    >>> inbox.peek(), inbox.poll(), len(inbox)
    (1, 1, 2)
    >>> inbox.take()
    [2, 3]
    >>> bool(inbox)
    False
    """

    __slots__ = ("_items", "_head")

    def __init__(self, items: list[Any] | None = None):
        self._items: list[Any] = items if items is not None else []
        self._head = 0

    def __len__(self) -> int:
        return len(self._items) - self._head

    def __bool__(self) -> bool:
        return self._head < len(self._items)

    def __iter__(self) -> Iterator[Any]:
        """Iterate the remaining items without removing them."""
        items, head = self._items, self._head
        return iter(items[head:]) if head else iter(items)

    def peek(self) -> Any:
        """The first item, or None if the inbox is empty."""
        if self._head < len(self._items):
            return self._items[self._head]
        return None

    def poll(self) -> Any:
        """Remove and return the first item, or None if the inbox is empty."""
        head = self._head
        if head < len(self._items):
            item = self._items[head]
            self._head = head + 1
            return item
        return None

    def remove(self) -> Any:
        """Remove and return the first item; raises IndexError if the inbox is empty."""
        head = self._head
        if head >= len(self._items):
            raise IndexError("remove() from an empty inbox")
        self._head = head + 1
        return self._items[head]

    def take(self, max_items: int | None = None) -> list[Any]:
        """Remove and return up to ``max_items`` items (all if None) as a list the caller owns."""
        items, head = self._items, self._head
        available = len(items) - head
        if max_items is None or max_items >= available:
            if head == 0:
                self._items = []
                return items
            self._items, self._head = [], 0
            return items[head:]
        if max_items <= 0:
            return []
        end = head + max_items
        self._head = end
        return items[head:end]

    def drain(self, fn: Callable[[Any], Any]) -> int:
        """Call ``fn`` on each item, removing it after the call returns; returns the count."""
        n = 0
        while self._head < len(self._items):
            fn(self._items[self._head])
            self._head += 1
            n += 1
        return n

    def clear(self) -> None:
        self._items, self._head = [], 0

    # -- engine side --------------------------------------------------------------------------

    def _fill(self, items: list[Any]) -> None:
        """Hand ``items`` (owned by the inbox from now on) to an empty inbox."""
        self._items, self._head = items, 0

    def __repr__(self) -> str:
        return f"Inbox({len(self)} items)"
