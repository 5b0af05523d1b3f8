"""Distinct items: Jet's ``distinct``, the first item of each key (the item itself, or
``key_fn(item)`` after ``group_by``) of a batch; per window, `pick_first` (see
``WindowedStage.distinct``).

>>> from jetbench import Pipeline, run, sinks, sources
>>> p = Pipeline()
>>> _ = p.read_from(sources.items([3, 1, 3, 2, 1])).distinct().write_to(sinks.collect())
>>> run(p)
[3, 1, 2]
>>> p = Pipeline()
>>> words = p.read_from(sources.items(["apple", "avocado", "banana", "blueberry", "cherry"]))
>>> _ = words.group_by(lambda w: w[0]).distinct().write_to(sinks.collect())
>>> run(p)
['apple', 'banana', 'cherry']
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from ..core.inbox import Inbox
from .aggregate_operation import AggregateOperation
from .emitter import EmittingProcessor
from .kind_params import KindParams, code, flag
from .planning import Planner, PlanNode, StageSpec, plan_by_key
from .snapshotting import EntrySaver


class DistinctP(EmittingProcessor):
    """Emits each item whose key (``key_fn(item)``; the item itself when None) it has not seen
    before, at once; ``(ts, item)`` pairs keyed by the item when ``timestamped``. Items of one
    key must reach one instance (a partitioned edge), or each instance gives its own first.

    Snapshots: the results of items taken before the barrier go out first; then one
    ``(key, None)`` entry per key seen, restored into the instance owning the key.
    """

    snapshot_support: ClassVar[str] = "supported"

    def __init__(self, key_fn: Callable[[Any], Hashable] | None = None, timestamped: bool = False):
        self.key_fn = key_fn
        self.timestamped = timestamped
        self.seen: set[Hashable] = set()
        self._saver = EntrySaver()

    def process(self, ordinal: int, inbox: Inbox) -> None:
        emitter = self._emitter
        room = emitter.free_room()
        if room <= 0:
            return
        seen, key_fn, timestamped = self.seen, self.key_fn, self.timestamped
        out = []
        for entry in inbox.take(room):
            item = entry[1] if timestamped else entry
            key = item if key_fn is None else key_fn(item)
            if key not in seen:
                seen.add(key)
                out.append(entry)
        if out:
            emitter.emit(out)

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():
            return False
        return self._saver.save(self.outbox, lambda: [(key, None) for key in self.seen])

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        self.seen.update(key for key, _ in inbox.take())


def itself(item: Any) -> Any:
    """The key of an item distinct by itself."""
    return item


@dataclass(frozen=True, eq=False, repr=False)
class Distinct(KindParams, StageSpec):
    """The parameters of distinct, its vertex supplier (``distinct``) and its pipeline stage
    (``stage.distinct()``, ``stage.group_by(key_fn).distinct()`` of a batch stage).

    Planning: one vertex behind an edge partitioned by the key (the item itself without
    ``key_fn``), so each key is seen by one instance; items keep their timestamps (the plan sets
    ``timestamped``).
    """

    key_fn: Callable[[Any], Hashable] | None = code("", optional=True,
                                                    help="the key items are distinct by (empty: the item itself)")
    timestamped: bool = flag(help="items are (ts, item) pairs: keyed by the item, ts kept")
    processor = DistinctP
    function = "distinct"
    kind: ClassVar[str] = "distinct"

    def describe(self) -> str:
        return f"distinct({'by key' if self.key_fn is not None else ''})"

    def plan(self, planner: Planner, node: PlanNode) -> None:
        plan_by_key(planner, node, self.key_fn or itself, lambda ts: replace(self, timestamped=ts))


def _keep_first(acc: tuple[Any, ...], item: Any) -> tuple[Any, ...]:
    return acc or (item,)


def _first_of(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
    return a or b


def _the_item(acc: tuple[Any, ...]) -> Any:
    return acc[0] if acc else None


#: one item of a group, the first its accumulator holds (``()`` or ``(item,)``); it combines,
#: so sliding and session windows take it. Jet's ``pickAny``, the operation of its windowed
#: ``distinct``: which item of a key is kept is unspecified there; here it is the first to
#: arrive in the earliest frame (sliding), or of the session merged first (session windows).
PICK_FIRST = AggregateOperation(create=tuple, accumulate=_keep_first, combine=_first_of, finish=_the_item)


#: the vertex supplier of distinct (its declaration, `Distinct`)
distinct = Distinct


def _edge_defaults(p: dict[str, Any], ordinal: int) -> dict[str, Any]:
    return {"routing": "partitioned", "key": p.get("key_fn") or "x"}


BUILDER_KINDS = (
    Distinct.builder_kind(id="distinct", label="distinct", category="aggregate", inputs=True, outputs=True,
                          edge_defaults=_edge_defaults,
                          description="the first item of each key (or each distinct item)"),
)
