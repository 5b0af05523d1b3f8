"""Keyed aggregation: an `AggregateOperation` and the processors that run it in one or two stages.

Two-stage (Jet's accumulate -> partitioned edge -> combine) needs ``combine``; single-stage
`aggregate_by_key` accumulates and finishes in one vertex.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from itertools import islice
from typing import Any

from ..core.errors import JetbenchError
from ..core.processor import Processor
from ._emit import Emitter

_MISSING = object()


@dataclass(frozen=True)
class AggregateOperation:
    """How to fold items into an accumulator: ``create() -> acc``, ``accumulate(acc, item) -> acc``,
    ``combine(acc, acc) -> acc`` (for two-stage), ``finish(acc) -> result``, and ``deduct(acc, acc)
    -> acc`` (the inverse of combine, for sliding windows). Functions return the new accumulator,
    so immutable accumulators (ints, tuples) work.

    >>> op = AggregateOperation(create=lambda: 0, accumulate=lambda a, x: a + x, combine=operator.add)
    >>> op.finish_fn(op.accumulate(op.accumulate(op.create(), 2), 3))
    5
    """

    create: Callable[[], Any]
    accumulate: Callable[[Any, Any], Any]
    combine: Callable[[Any, Any], Any] | None = None
    finish: Callable[[Any], Any] | None = None
    deduct: Callable[[Any, Any], Any] | None = None

    def __post_init__(self) -> None:
        for name in ("create", "accumulate"):
            if not callable(getattr(self, name)):
                raise JetbenchError(f"AggregateOperation: {name} must be callable, got {getattr(self, name)!r}")
        for name in ("combine", "finish", "deduct"):
            fn = getattr(self, name)
            if fn is not None and not callable(fn):
                raise JetbenchError(f"AggregateOperation: {name} must be callable or None, got {fn!r}")

    @property
    def finish_fn(self) -> Callable[[Any], Any]:
        return self.finish if self.finish is not None else _identity


def _identity(x: Any) -> Any:
    return x


def _count_one(acc: int, _item: Any) -> int:
    return acc + 1


def _zero() -> int:
    return 0


#: Counts items.
counting = AggregateOperation(create=_zero, accumulate=_count_one, combine=operator.add, deduct=operator.sub)


class _KeyedEmitterP(Processor):
    """Holds key -> accumulator and emits ``(key, finish(acc))`` pairs from ``complete()``."""

    def __init__(self, op: AggregateOperation, finish: bool):
        self.op = op
        self.groups: dict[Hashable, Any] = {}
        self._finish = op.finish_fn if finish else None
        self._results = None

    def init(self, outbox, context) -> None:
        super().init(outbox, context)
        self._emitter = Emitter(outbox)

    def complete(self) -> bool:
        emitter = self._emitter
        if not emitter.flush():
            return False
        if self._results is None:
            self._results = iter(self.groups.items())
        room = emitter.room()
        if room <= 0:
            return False
        finish = self._finish
        pairs = islice(self._results, room)
        chunk = list(pairs) if finish is None else [(k, finish(a)) for k, a in pairs]
        if chunk:
            emitter.emit(chunk)
        if len(chunk) < room and not emitter.pending:
            self.groups = {}
            return True
        return False


class AccumulateByKeyP(_KeyedEmitterP):
    """Stage 1 (or single stage with ``finish=True``): fold items into per-key accumulators."""

    def __init__(self, key_fn: Callable[[Any], Hashable], op: AggregateOperation, finish: bool = False):
        super().__init__(op, finish)
        self.key_fn = key_fn

    def process(self, ordinal: int, inbox) -> None:
        groups = self.groups
        key_fn = self.key_fn
        create = self.op.create
        accumulate = self.op.accumulate
        get = groups.get
        for item in inbox.take():
            key = key_fn(item)
            acc = get(key, _MISSING)
            groups[key] = accumulate(create() if acc is _MISSING else acc, item)


class CombineByKeyP(_KeyedEmitterP):
    """Stage 2: combine ``(key, accumulator)`` pairs from stage 1 and emit finished results."""

    def __init__(self, op: AggregateOperation):
        if op.combine is None:
            raise JetbenchError("combine_by_key needs an AggregateOperation with combine")
        super().__init__(op, finish=True)

    def process(self, ordinal: int, inbox) -> None:
        groups = self.groups
        combine = self.op.combine
        get = groups.get
        for key, acc in inbox.take():
            current = get(key, _MISSING)
            groups[key] = acc if current is _MISSING else combine(current, acc)


class _Supplier:
    def __init__(self, factory: Callable[[], Processor], label: str):
        self._factory = factory
        self.label = label

    def __call__(self) -> Processor:
        return self._factory()

    def __repr__(self) -> str:
        return self.label


def accumulate_by_key(key_fn: Callable[[Any], Hashable], op: AggregateOperation) -> _Supplier:
    """Stage-1 supplier: emits ``(key, accumulator)`` when its input completes."""
    return _Supplier(lambda: AccumulateByKeyP(key_fn, op), "accumulate_by_key")


def combine_by_key(op: AggregateOperation) -> _Supplier:
    """Stage-2 supplier: combines ``(key, accumulator)`` pairs, emits ``(key, result)``."""
    if op.combine is None:
        raise JetbenchError("combine_by_key needs an AggregateOperation with combine")
    return _Supplier(lambda: CombineByKeyP(op), "combine_by_key")


def aggregate_by_key(key_fn: Callable[[Any], Hashable], op: AggregateOperation) -> _Supplier:
    """Single-stage supplier: emits ``(key, result)`` when its input completes."""
    return _Supplier(lambda: AccumulateByKeyP(key_fn, op, finish=True), "aggregate_by_key")
