"""Keyed aggregation: an `AggregateOperation` and the processors that run it in one or two stages.

Two-stage (Jet's accumulate -> partitioned edge -> combine) needs ``combine``; single-stage
`aggregate_by_key` accumulates and finishes in one vertex.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import JetbenchError
from ._emit import EmittingProcessor
from .supplier import ProcessorSupplier

_MISSING = object()


@dataclass(frozen=True)
class AggregateOperation:
    """How to fold items into an accumulator: ``create() -> acc``, ``accumulate(acc, item) -> acc``,
    ``combine(acc, acc) -> acc`` (for two-stage), ``finish(acc) -> result``, and ``deduct(acc, acc)
    -> acc`` (the inverse of combine, for sliding windows). Functions return the new accumulator,
    so immutable accumulators (ints, tuples) work. ``recipe`` says how a library operation was
    made, ``(name in jetbench.aggregate, arguments)`` (None for hand-made ones), so tools can
    show it as ``summing(fn)`` rather than five functions. ``accumulate_all(acc, items) -> acc``,
    optional, folds a whole batch at once (a fast path that must equal accumulating the items one
    by one; counting has one).

    >>> op = AggregateOperation(create=lambda: 0, accumulate=lambda a, x: a + x, combine=operator.add)
    >>> op.finish_fn(op.accumulate(op.accumulate(op.create(), 2), 3))
    5
    """

    create: Callable[[], Any]
    accumulate: Callable[[Any, Any], Any]
    combine: Callable[[Any, Any], Any] | None = None
    finish: Callable[[Any], Any] | None = None
    deduct: Callable[[Any, Any], Any] | None = None
    recipe: tuple[str, tuple[Any, ...]] | None = field(default=None, compare=False, repr=False)
    accumulate_all: Callable[[Any, list], Any] | None = field(default=None, compare=False, repr=False)

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


_identity.__jetbench_code__ = "x"  # what the DAG builder shows for it


def _count_one(acc: int, _item: Any) -> int:
    return acc + 1


def _count_all(acc: int, items: list) -> int:
    return acc + len(items)


def _zero() -> int:
    return 0


#: Counts items.
counting = AggregateOperation(create=_zero, accumulate=_count_one, combine=operator.add, deduct=operator.sub,
                              recipe=("counting", ()), accumulate_all=_count_all)


class _KeyedEmitterP(EmittingProcessor):
    """Holds key -> accumulator and emits ``(key, finish(acc))`` pairs from ``complete()``.

    ``values_only`` emits just the values (a global aggregate, all under one key), and
    ``emit_empty`` then emits ``finish(create())`` when no item arrived at all.
    """

    def __init__(self, op: AggregateOperation, finish: bool, values_only: bool = False, emit_empty: bool = False):
        self.op = op
        self.groups: dict[Hashable, Any] = {}
        self._finish = op.finish_fn if finish else None
        self._values_only = values_only
        self._emit_empty = emit_empty
        self._results = None

    def complete(self) -> bool:
        if self._results is None:
            if self._emit_empty and not self.groups:
                self.groups[None] = self.op.create()
            finish, pairs = self._finish, self.groups.items()
            if self._values_only:
                self._results = (a for _, a in pairs) if finish is None else (finish(a) for _, a in pairs)
            else:
                self._results = iter(pairs) if finish is None else ((k, finish(a)) for k, a in pairs)
        if self._emitter.emit_from(self._results):
            self.groups = {}
            return True
        return False


class AccumulateByKeyP(_KeyedEmitterP):
    """Stage 1 (or single stage with ``finish=True``): fold items into per-key accumulators."""

    def __init__(self, key_fn: Callable[[Any], Hashable], op: AggregateOperation, finish: bool = False,
                 values_only: bool = False, emit_empty: bool = False):
        super().__init__(op, finish, values_only, emit_empty)
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

    def __init__(self, op: AggregateOperation, values_only: bool = False, emit_empty: bool = False):
        if op.combine is None:
            raise JetbenchError("combine_by_key needs an AggregateOperation with combine")
        super().__init__(op, True, values_only, emit_empty)

    def process(self, ordinal: int, inbox) -> None:
        groups = self.groups
        combine = self.op.combine
        get = groups.get
        for key, acc in inbox.take():
            current = get(key, _MISSING)
            groups[key] = acc if current is _MISSING else combine(current, acc)


class AggregateSupplier(ProcessorSupplier):
    """Supplier of the aggregation processors; ``label`` names the function that made it
    (``accumulate_by_key``, ``combine``, ...) and ``params`` hold ``op`` (and ``key_fn``)."""


#: the old name, kept for importers
_Supplier = AggregateSupplier


def accumulate_by_key(key_fn: Callable[[Any], Hashable], op: AggregateOperation) -> AggregateSupplier:
    """Stage-1 supplier: emits ``(key, accumulator)`` when its input completes."""
    return AggregateSupplier(AccumulateByKeyP, key_fn, op, label="accumulate_by_key")


def combine_by_key(op: AggregateOperation) -> AggregateSupplier:
    """Stage-2 supplier: combines ``(key, accumulator)`` pairs, emits ``(key, result)``."""
    if op.combine is None:
        raise JetbenchError("combine_by_key needs an AggregateOperation with combine")
    return AggregateSupplier(CombineByKeyP, op, label="combine_by_key")


def aggregate_by_key(key_fn: Callable[[Any], Hashable], op: AggregateOperation) -> AggregateSupplier:
    """Single-stage supplier: emits ``(key, result)`` when its input completes."""
    return AggregateSupplier(AccumulateByKeyP, key_fn, op, finish=True, label="aggregate_by_key")


def _no_key(item: Any) -> None:
    return None


_no_key.__jetbench_code__ = "None"


def accumulate(op: AggregateOperation) -> AggregateSupplier:
    """Global stage 1: emits ``(None, accumulator)`` when its input completes."""
    return AggregateSupplier(AccumulateByKeyP, _no_key, op, label="accumulate")


def combine(op: AggregateOperation) -> AggregateSupplier:
    """Global stage 2 (parallelism 1): combines stage-1 accumulators, emits the one result."""
    if op.combine is None:
        raise JetbenchError("combine needs an AggregateOperation with combine")
    return AggregateSupplier(CombineByKeyP, op, values_only=True, emit_empty=True, label="combine")


def aggregate(op: AggregateOperation) -> AggregateSupplier:
    """Global single stage (parallelism 1): emits the one result, ``finish(create())`` if empty."""
    return AggregateSupplier(AccumulateByKeyP, _no_key, op, finish=True, values_only=True, emit_empty=True,
                             label="aggregate")


#: the global (non-keyed) suppliers under names that do not clash with ``jetbench.aggregate``
global_accumulate, global_combine, global_aggregate = accumulate, combine, aggregate


# -- the operation library (re-exported as jetbench.aggregate) ----------------------------------

_EMPTY = None


def summing(fn: Callable[[Any], Any] = _identity) -> AggregateOperation:
    """Sum of ``fn(item)``.

    >>> op = summing(len)
    >>> op.accumulate(op.accumulate(op.create(), "ab"), "c")
    3
    """
    return AggregateOperation(
        create=_zero,
        accumulate=lambda acc, item: acc + fn(item),
        combine=operator.add,
        deduct=operator.sub,
        recipe=("summing", (fn,)),
    )


def averaging(fn: Callable[[Any], Any] = _identity) -> AggregateOperation:
    """Mean of ``fn(item)``; None for an empty group. The accumulator is ``(sum, count)``."""

    def accumulate(acc: tuple, item: Any) -> tuple:
        return acc[0] + fn(item), acc[1] + 1

    return AggregateOperation(
        create=lambda: (0, 0),
        accumulate=accumulate,
        combine=lambda a, b: (a[0] + b[0], a[1] + b[1]),
        finish=lambda acc: acc[0] / acc[1] if acc[1] else None,
        deduct=lambda a, b: (a[0] - b[0], a[1] - b[1]),
        recipe=("averaging", (fn,)),
    )


def _extreme(fn: Callable[[Any], Any], better: Callable[[Any, Any], bool], name: str) -> AggregateOperation:
    def accumulate(acc: Any, item: Any) -> Any:
        return item if acc is _EMPTY or better(fn(item), fn(acc)) else acc

    def combine(a: Any, b: Any) -> Any:
        if a is _EMPTY:
            return b
        if b is _EMPTY:
            return a
        return b if better(fn(b), fn(a)) else a

    return AggregateOperation(create=lambda: _EMPTY, accumulate=accumulate, combine=combine, recipe=(name, (fn,)))


def min_by(fn: Callable[[Any], Any] = _identity) -> AggregateOperation:
    """The item with the smallest ``fn(item)`` (the first one on ties); None if empty."""
    return _extreme(fn, operator.lt, "min_by")


def max_by(fn: Callable[[Any], Any] = _identity) -> AggregateOperation:
    """The item with the largest ``fn(item)`` (the first one on ties); None if empty."""
    return _extreme(fn, operator.gt, "max_by")


def _append(acc: list, item: Any) -> list:
    acc.append(item)
    return acc


def _extend(a: list, b: list) -> list:
    a.extend(b)
    return a


def _add(acc: set, item: Any) -> set:
    acc.add(item)
    return acc


def _union(a: set, b: set) -> set:
    a |= b
    return a


#: All items in a list (in arrival order within one instance).
to_list = AggregateOperation(create=list, accumulate=_append, combine=_extend, recipe=("to_list", ()))
#: All distinct items in a set.
to_set = AggregateOperation(create=set, accumulate=_add, combine=_union, recipe=("to_set", ()))


def top_n(n: int, key: Callable[[Any], Any] = _identity) -> AggregateOperation:
    """The ``n`` items with the largest ``key(item)``, largest first.

    >>> op = top_n(2)
    >>> acc = op.create()
    >>> for x in [5, 1, 9, 7]:
    ...     acc = op.accumulate(acc, x)
    >>> op.finish(acc)
    [9, 7]
    """
    import heapq

    if n < 1:
        raise JetbenchError(f"top_n needs n >= 1, got {n}")
    counter = iter(range(1 << 62))

    def accumulate(acc: list, item: Any) -> list:
        entry = (key(item), -next(counter), item)
        if len(acc) < n:
            heapq.heappush(acc, entry)
        elif entry > acc[0]:
            heapq.heapreplace(acc, entry)
        return acc

    def combine(a: list, b: list) -> list:
        for entry in b:
            if len(a) < n:
                heapq.heappush(a, entry)
            elif entry > a[0]:
                heapq.heapreplace(a, entry)
        return a

    return AggregateOperation(
        create=list,
        accumulate=accumulate,
        combine=combine,
        finish=lambda acc: [item for _, _, item in sorted(acc, reverse=True)],
        recipe=("top_n", (n, key)),
    )


def all_of(*ops: AggregateOperation) -> AggregateOperation:
    """Several operations at once; the result is a tuple of their results.

    >>> op = all_of(counting, summing())
    >>> acc = op.create()
    >>> for x in [1, 2, 3]:
    ...     acc = op.accumulate(acc, x)
    >>> op.finish(acc)
    (3, 6)
    """
    if not ops:
        raise JetbenchError("all_of() needs at least one AggregateOperation")
    combine = deduct = None
    if all(op.combine is not None for op in ops):

        def combine(a: tuple, b: tuple) -> tuple:
            return tuple(op.combine(x, y) for op, x, y in zip(ops, a, b, strict=True))

    if all(op.deduct is not None for op in ops):

        def deduct(a: tuple, b: tuple) -> tuple:
            return tuple(op.deduct(x, y) for op, x, y in zip(ops, a, b, strict=True))

    finishes = [op.finish_fn for op in ops]
    return AggregateOperation(
        create=lambda: tuple(op.create() for op in ops),
        accumulate=lambda acc, item: tuple(op.accumulate(a, item) for op, a in zip(ops, acc, strict=True)),
        combine=combine,
        finish=lambda acc: tuple(f(a) for f, a in zip(finishes, acc, strict=True)),
        deduct=deduct,
        recipe=("all_of", ops),
    )
