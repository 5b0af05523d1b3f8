"""The co-group: two keyed batch inputs grouped together when both complete.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from .emitter import EmittingProcessor
from .hash_join import _check_keys
from .supplier import ProcessorSupplier


class CoGroupP(EmittingProcessor):
    """Batch co-group of ordinal 0 (left) and ordinal 1 (right), both partitioned by key.

    When both inputs are exhausted it emits ``(key, [left items], [right items])`` for every key
    seen on either side, in the order keys were first seen, each list in arrival order.
    """

    def __init__(self, left_key: Callable[[Any], Hashable], right_key: Callable[[Any], Hashable]):
        self.key_fns = (left_key, right_key)
        self.groups: dict[Hashable, tuple[list, list]] = {}
        self._results = None

    def process(self, ordinal: int, inbox) -> None:
        groups, key = self.groups, self.key_fns[ordinal]
        for item in inbox.take():
            k = key(item)
            group = groups.get(k)
            if group is None:
                group = groups[k] = ([], [])
            group[ordinal].append(item)

    def complete(self) -> bool:
        if self._results is None:
            self._results = ((k, lefts, rights) for k, (lefts, rights) in self.groups.items())
        if self._emitter.emit_from(self._results):
            self.groups = {}
            return True
        return False


class CoGroup(ProcessorSupplier):
    """Supplier of `CoGroupP`; ``left_key`` and ``right_key`` are its params."""

    def __init__(self, left_key: Callable[[Any], Hashable], right_key: Callable[[Any], Hashable]):
        _check_keys("co_group", left_key, right_key)
        super().__init__(CoGroupP, left_key, right_key, label="co_group")

    def __repr__(self) -> str:
        return "co_group()"


def co_group(left_key: Callable[[Any], Hashable], right_key: Callable[[Any], Hashable]) -> CoGroup:
    """A vertex supplier grouping two keyed inputs (ordinals 0 and 1) by key, at the end of input."""
    return CoGroup(left_key, right_key)
