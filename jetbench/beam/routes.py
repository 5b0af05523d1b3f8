"""Where a vertex sends the chunks of each PCollection it produces: one outbound ordinal per
consumer, as plain chunks or, towards a grouping or keyed consumer, split into keyed pairs.

>>> routes = PCollectionRoutes()
>>> routes.add("pc1", 0)
>>> routes.add("pc1", 1)
>>> routes.items("pc1", b"chunk")
[(0, b'chunk'), (1, b'chunk')]
>>> routes.items("unused", b"chunk")
[]
"""

from __future__ import annotations

from collections import deque
from typing import Any

from .coding import ElementSplitter, KeyedSplitter

__all__ = ["PCollectionRoutes", "PendingOutput"]


class PCollectionRoutes:
    """PCollection id -> the outbound ordinals fed with it (and the splitter, for keyed ones)."""

    def __init__(self) -> None:
        self._routes: dict[str, list[tuple[int, KeyedSplitter | ElementSplitter | None]]] = {}

    def add(self, pcoll_id: str, ordinal: int, splitter: KeyedSplitter | ElementSplitter | None = None) -> None:
        self._routes.setdefault(pcoll_id, []).append((ordinal, splitter))

    @property
    def pcollections(self) -> list[str]:
        return list(self._routes)

    def items(self, pcoll_id: str, chunk: bytes) -> list[tuple[int, Any]]:
        """``(ordinal, item)`` for every consumer of ``pcoll_id`` of one encoded chunk."""
        out: list[tuple[int, Any]] = []
        for ordinal, splitter in self._routes.get(pcoll_id, ()):
            if splitter is None:
                out.append((ordinal, chunk))
            else:
                out.extend((ordinal, piece) for piece in splitter.split(chunk))
        return out


class PendingOutput:
    """Items a cooperative processor still has to hand to its outbox, kept across calls when the
    outbox refuses one."""

    def __init__(self) -> None:
        self._items: deque[tuple[int, Any]] = deque()

    def extend(self, items: list[tuple[int, Any]]) -> None:
        self._items.extend(items)

    def left(self) -> list[tuple[int, Any]]:
        """What is still pending, in order (a copy)."""
        return list(self._items)

    def flush(self, outbox: Any) -> bool:
        """Offer what is pending in order; True once nothing is left."""
        items = self._items
        while items:
            ordinal, item = items[0]
            if not outbox.offer(item, ordinal):
                return False
            items.popleft()
        return True
