"""Aggregate operations: how items fold into an accumulator, and the library of them that
``jetbench.aggregate`` re-exports.

Every library operation is a *factory*, as in Jet's ``AggregateOperations``: call it to get the
operation, ``counting()``, ``summing(fn)``, ``to_list()``. `require_operation` turns the bare
factory (``counting`` without the call) into an error that says so.
"""

from __future__ import annotations

import inspect
import operator
import types
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import JetbenchError
from .supplier import set_builder_code

#: ``accumulate_groups(groups, key_fn, items)``: a keyed batch kernel (see `AggregateOperation`)
GroupsFn = Callable[[dict[Any, Any], Callable[[Any], Hashable], list[Any]], None]

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

    ``accumulate_groups(groups, key_fn, items) -> None``, optional, is the batch path of *keyed*
    aggregation (`AccumulateByKeyP` uses it when the operation has it): it folds a whole batch
    into ``groups`` (a dict key -> accumulator) in place. It must call ``key_fn`` once per item, in
    order (the library's identity excepted: see `is_identity`), and leave ``groups`` exactly as
    `accumulate_groups_per_item` would (same accumulators, new keys in the order first seen), so
    that its loop may run in C: counting's is ``Counter.update(groups, map(key_fn, items))``. Built-ins with one: `counting`, `summing`,
    `averaging`, `min_by`, `max_by`, `to_list`, `to_set`. A user operation may give one; without
    it aggregation goes item by item through ``create`` and ``accumulate``.

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
    accumulate_all: Callable[[Any, list[Any]], Any] | None = field(default=None, compare=False, repr=False)
    accumulate_groups: GroupsFn | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("create", "accumulate"):
            if not callable(getattr(self, name)):
                raise JetbenchError(f"AggregateOperation: {name} must be callable, got {getattr(self, name)!r}")
        for name in ("combine", "finish", "deduct", "accumulate_all", "accumulate_groups"):
            fn = getattr(self, name)
            if fn is not None and not callable(fn):
                raise JetbenchError(f"AggregateOperation: {name} must be callable or None, got {fn!r}")

    @property
    def finish_fn(self) -> Callable[[Any], Any]:
        return self.finish if self.finish is not None else _identity


def accumulate_groups_per_item(op: AggregateOperation, groups: dict[Any, Any], key_fn: Callable[[Any], Hashable],
                               items: Iterable[Any]) -> None:
    """The per-item meaning of ``op.accumulate_groups``: each item folded into its key's
    accumulator (``create()`` for a new key) through ``accumulate``.

    >>> groups = {}
    >>> accumulate_groups_per_item(counting(), groups, len, ["a", "bc", "d"])
    >>> groups
    {1: 2, 2: 1}
    """
    create, accumulate = op.create, op.accumulate
    get = groups.get
    for item in items:
        key = key_fn(item)
        acc = get(key, _MISSING)
        groups[key] = accumulate(create() if acc is _MISSING else acc, item)


def _identity(x: Any) -> Any:
    return x


set_builder_code(_identity, "x")


def is_identity(fn: Any) -> bool:
    """True for a plain function that returns its one argument as it is (``lambda w: w``, or a
    ``def`` with a docstring): same bytecode as the library's identity. `AccumulateByKeyP` hands
    the batch kernels the library's identity for such a key function, and the kernels then skip
    the key calls (counting by an identity key is ``Counter.update(groups, items)``).

    >>> is_identity(lambda w: w), is_identity(str.lower), is_identity(lambda w, n=1: w)
    (True, False, False)
    """
    if fn is _identity:
        return True
    if not isinstance(fn, types.FunctionType):
        return False
    code = fn.__code__
    return (code.co_code == _identity.__code__.co_code and code.co_argcount == 1 and code.co_kwonlyargcount == 0
            and not code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS))


def _keys(key_fn: Callable[[Any], Hashable], items: list[Any]) -> Iterable[Any]:
    """The keys of ``items``: the items themselves for the library's identity, no calls."""
    return items if key_fn is _identity else map(key_fn, items)


def _count_one(acc: int, _item: Any) -> int:
    return acc + 1


def adds_one(op: AggregateOperation) -> bool:
    """True when ``op.accumulate(acc, item)`` is ``acc + 1`` whatever the item (the library's
    `counting`): a per-item path may then add the one itself, without a call per item.

    >>> adds_one(counting()), adds_one(summing())
    (True, False)
    """
    return op.accumulate is _count_one


def _count_all(acc: int, items: list[Any]) -> int:
    return acc + len(items)


def _zero() -> int:
    return 0


#: ``Counter.update`` on a plain dict: ``groups[k] = groups.get(k, 0) + 1`` per key, the loop in C
_count_into: Callable[[dict[Any, Any], Iterable[Any]], None] = Counter.update  # type: ignore[assignment]


def _count_groups(groups: dict[Any, Any], key_fn: Callable[[Any], Hashable], items: list[Any]) -> None:
    _count_into(groups, _keys(key_fn, items))


_COUNTING = AggregateOperation(create=_zero, accumulate=_count_one, combine=operator.add, deduct=operator.sub,
                               recipe=("counting", ()), accumulate_all=_count_all,
                               accumulate_groups=_count_groups)


def counting() -> AggregateOperation:
    """The number of items.

    >>> op = counting()
    >>> op.accumulate(op.accumulate(op.create(), "a"), "b")
    2
    """
    return _COUNTING



# -- the operation library (re-exported as jetbench.aggregate) ----------------------------------

_EMPTY = None


def summing(fn: Callable[[Any], Any] = _identity) -> AggregateOperation:
    """Sum of ``fn(item)``.

    >>> op = summing(len)
    >>> op.accumulate(op.accumulate(op.create(), "ab"), "c")
    3
    """
    def accumulate_groups(groups: dict[Any, Any], key_fn: Callable[[Any], Hashable], items: list[Any]) -> None:
        get = groups.get
        for key, value in zip(_keys(key_fn, items), items if fn is _identity else map(fn, items), strict=True):
            groups[key] = get(key, 0) + value

    return AggregateOperation(
        create=_zero,
        accumulate=lambda acc, item: acc + fn(item),
        combine=operator.add,
        deduct=operator.sub,
        recipe=("summing", (fn,)),
        accumulate_groups=accumulate_groups,
    )


def averaging(fn: Callable[[Any], Any] = _identity) -> AggregateOperation:
    """Mean of ``fn(item)``; None for an empty group. The accumulator is ``(sum, count)``."""

    def accumulate(acc: tuple[Any, int], item: Any) -> tuple[Any, int]:
        return acc[0] + fn(item), acc[1] + 1

    def accumulate_groups(groups: dict[Any, Any], key_fn: Callable[[Any], Hashable], items: list[Any]) -> None:
        get = groups.get
        for key, value in zip(_keys(key_fn, items), map(fn, items), strict=True):
            acc = get(key)
            groups[key] = (0 + value, 1) if acc is None else (acc[0] + value, acc[1] + 1)

    return AggregateOperation(
        create=lambda: (0, 0),
        accumulate=accumulate,
        combine=lambda a, b: (a[0] + b[0], a[1] + b[1]),
        finish=lambda acc: acc[0] / acc[1] if acc[1] else None,
        deduct=lambda a, b: (a[0] - b[0], a[1] - b[1]),
        recipe=("averaging", (fn,)),
        accumulate_groups=accumulate_groups,
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

    def accumulate_groups(groups: dict[Any, Any], key_fn: Callable[[Any], Hashable], items: list[Any]) -> None:
        get = groups.get
        if fn is _identity:
            for key, item in zip(_keys(key_fn, items), items, strict=True):
                acc = get(key)  # _EMPTY (None) for a new key, as create() gives
                if acc is _EMPTY or better(item, acc):
                    groups[key] = item
        else:
            for key, item in zip(_keys(key_fn, items), items, strict=True):
                acc = get(key)
                if acc is _EMPTY or better(fn(item), fn(acc)):
                    groups[key] = item

    return AggregateOperation(create=lambda: _EMPTY, accumulate=accumulate, combine=combine, recipe=(name, (fn,)),
                              accumulate_groups=accumulate_groups)


def min_by(fn: Callable[[Any], Any] = _identity) -> AggregateOperation:
    """The item with the smallest ``fn(item)`` (the first one on ties); None if empty."""
    return _extreme(fn, operator.lt, "min_by")


def max_by(fn: Callable[[Any], Any] = _identity) -> AggregateOperation:
    """The item with the largest ``fn(item)`` (the first one on ties); None if empty."""
    return _extreme(fn, operator.gt, "max_by")


def _append(acc: list[Any], item: Any) -> list[Any]:
    acc.append(item)
    return acc


def _extend(a: list[Any], b: list[Any]) -> list[Any]:
    a.extend(b)
    return a


def _add(acc: set[Any], item: Any) -> set[Any]:
    acc.add(item)
    return acc


def _union(a: set[Any], b: set[Any]) -> set[Any]:
    a |= b
    return a


def _list_groups(groups: dict[Any, Any], key_fn: Callable[[Any], Hashable], items: list[Any]) -> None:
    get = groups.get
    for key, item in zip(_keys(key_fn, items), items, strict=True):
        acc = get(key)
        if acc is None:
            groups[key] = [item]
        else:
            acc.append(item)


def _set_groups(groups: dict[Any, Any], key_fn: Callable[[Any], Hashable], items: list[Any]) -> None:
    get = groups.get
    for key, item in zip(_keys(key_fn, items), items, strict=True):
        acc = get(key)
        if acc is None:
            groups[key] = {item}
        else:
            acc.add(item)


_TO_LIST = AggregateOperation(create=list, accumulate=_append, combine=_extend, recipe=("to_list", ()),
                              accumulate_groups=_list_groups)
_TO_SET = AggregateOperation(create=set, accumulate=_add, combine=_union, recipe=("to_set", ()),
                             accumulate_groups=_set_groups)


def to_list() -> AggregateOperation:
    """All items in a list (in arrival order within one instance)."""
    return _TO_LIST


def to_set() -> AggregateOperation:
    """All distinct items in a set."""
    return _TO_SET


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

    def accumulate(acc: list[tuple[Any, int, Any]], item: Any) -> list[tuple[Any, int, Any]]:
        entry = (key(item), -next(counter), item)
        if len(acc) < n:
            heapq.heappush(acc, entry)
        elif entry > acc[0]:
            heapq.heapreplace(acc, entry)
        return acc

    def combine(a: list[tuple[Any, int, Any]], b: list[tuple[Any, int, Any]]) -> list[tuple[Any, int, Any]]:
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

    >>> op = all_of(counting(), summing())
    >>> acc = op.create()
    >>> for x in [1, 2, 3]:
    ...     acc = op.accumulate(acc, x)
    >>> op.finish(acc)
    (3, 6)
    """
    if not ops:
        raise JetbenchError("all_of() needs at least one AggregateOperation")
    ops = tuple(require_operation(op, f"all_of() argument {i + 1}") for i, op in enumerate(ops))
    combine = deduct = None
    combines = [op.combine for op in ops if op.combine is not None]
    if len(combines) == len(ops):

        def combine(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
            return tuple(c(x, y) for c, x, y in zip(combines, a, b, strict=True))

    deducts = [op.deduct for op in ops if op.deduct is not None]
    if len(deducts) == len(ops):

        def deduct(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
            return tuple(d(x, y) for d, x, y in zip(deducts, a, b, strict=True))

    finishes = [op.finish_fn for op in ops]
    return AggregateOperation(
        create=lambda: tuple(op.create() for op in ops),
        accumulate=lambda acc, item: tuple(op.accumulate(a, item) for op, a in zip(ops, acc, strict=True)),
        combine=combine,
        finish=lambda acc: tuple(f(a) for f, a in zip(finishes, acc, strict=True)),
        deduct=deduct,
        recipe=("all_of", ops),
    )


#: The library's factories by name (what ``jetbench.aggregate`` offers).
FACTORIES: dict[str, Callable[..., AggregateOperation]] = {
    f.__name__: f for f in (counting, summing, averaging, min_by, max_by, to_list, to_set, top_n, all_of)
}


def require_operation(op: Any, where: str, error: type[JetbenchError] = JetbenchError) -> AggregateOperation:
    """``op`` if it is an `AggregateOperation`; else an ``error`` naming ``where`` (and, for a
    library factory passed without its call, saying to call it).

    >>> require_operation(counting, "stage 'count'")
    Traceback (most recent call last):
    ...
    jetbench.core.errors.JetbenchError: stage 'count': aggregate.counting is a factory of aggregate operations: call it, aggregate.counting()
    """
    if isinstance(op, AggregateOperation):
        return op
    name = getattr(op, "__name__", None)
    if name is not None and FACTORIES.get(name) is op:
        args = "n" if name == "top_n" else ("op1, op2" if name == "all_of" else "")
        raise error(f"{where}: aggregate.{name} is a factory of aggregate operations: call it, "
                            f"aggregate.{name}({args})")
    raise error(f"{where}: expected an AggregateOperation (e.g. aggregate.counting()), got {op!r}")
