"""An aggregate operation keeping every item whose key is the largest (all ties), used by Q5
and Q7. The accumulator is ``(max key, [items])``, ``(None, [])`` when empty; ``finish`` gives
the list of items.

>>> op = max_all_by(len)
>>> acc = op.create()
>>> for w in ["ab", "c", "de", "f"]:
...     acc = op.accumulate(acc, w)
>>> op.finish(acc)
['ab', 'de']
>>> op.finish(op.combine(acc, op.accumulate(op.create(), "xyz")))
['xyz']
>>> op.finish(op.accumulate_all(op.create(), ["ab", "c", "de", "f"]))  # a batch at once: the same
['ab', 'de']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...processors.aggregate_operation import AggregateOperation


def max_all_by(key: Callable[[Any], Any]) -> AggregateOperation:
    """Every item with the maximal ``key(item)``, in the order accumulated (then combined)."""

    def create() -> tuple[Any, list[Any]]:
        return (None, [])

    def accumulate(acc: tuple[Any, list[Any]], item: Any) -> tuple[Any, list[Any]]:
        k = key(item)
        best, items = acc
        if best is None or k > best:
            return (k, [item])
        if k == best:
            items.append(item)
        return acc

    def combine(a: tuple[Any, list[Any]], b: tuple[Any, list[Any]]) -> tuple[Any, list[Any]]:
        if b[0] is None or (a[0] is not None and a[0] > b[0]):
            return (a[0], list(a[1]))
        if a[0] is None or b[0] > a[0]:
            return (b[0], list(b[1]))
        return (a[0], a[1] + b[1])

    def accumulate_all(acc: tuple[Any, list[Any]], items: list[Any]) -> tuple[Any, list[Any]]:
        """A whole batch at once (the windows' batch path): the same list ``accumulate`` makes."""
        if not items:
            return acc
        keys = list(map(key, items))
        top = max(keys)
        best, kept = acc
        if best is None or top > best:
            return (top, [item for item, k in zip(items, keys, strict=True) if k == top])
        if top == best:
            kept += [item for item, k in zip(items, keys, strict=True) if k == top]
        return acc

    def finish(acc: tuple[Any, list[Any]]) -> list[Any]:
        return list(acc[1])

    return AggregateOperation(create=create, accumulate=accumulate, combine=combine, finish=finish,
                              accumulate_all=accumulate_all)
