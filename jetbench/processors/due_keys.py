"""Keys filed under times, taken in order of time: the timers of `flat_map_stateful` and the
session deadlines of `SessionWindowP`.

A heap of distinct times (plain numbers) and, per time, the keys filed under it in order of
filing. A heap of ``(time, seq, key)`` tuples would give the same order, but each step of a
heap operation then compares tuples, element by element, where this compares two numbers: on
Nexmark Q11 (about 10,000 deadlines over 300,000 events) the tuple heap's pops took half of its
closing time. What a filing means (and whether it went stale meanwhile) is the owner's to judge.
The owners' loops take the earliest time's keys inline, ``due.pop(heapq.heappop(times))``: a
method call per time cost Q6 and Q9 1-2 % of their estimated cycles.

>>> import heapq
>>> d = DueKeys()
>>> d.file(20, "b"); d.file(10, "a"); d.file(20, "c")
>>> [d.due.pop(heapq.heappop(d.times)) for _ in range(2)], bool(d)
([['a'], ['b', 'c']], False)
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterator
from typing import Any


class DueKeys:
    """``times``: the heap of distinct times (``times[0]`` is the earliest); ``due``: time ->
    the keys filed under it, in order of filing."""

    __slots__ = ("due", "times")

    def __init__(self) -> None:
        self.times: list[Any] = []
        self.due: dict[Any, list[Hashable]] = {}

    def __bool__(self) -> bool:
        return bool(self.times)

    def file(self, time: Any, key: Hashable) -> None:
        """File ``key`` under ``time`` (after the keys already filed there)."""
        keys = self.due.get(time)
        if keys is None:
            self.due[time] = [key]
            heapq.heappush(self.times, time)
        else:
            keys.append(key)

    def keys(self) -> Iterator[Hashable]:
        """Every filing's key, in no particular order (a key filed twice comes twice)."""
        for keys in self.due.values():
            yield from keys
