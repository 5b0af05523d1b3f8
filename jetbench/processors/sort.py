"""Sorting a batch: Jet's ``sort``, a total order of all items when the input completes.

One instance sees every item (an all-to-one edge, parallelism 1), sorts them (stably, so equal
keys keep their arrival order from each input) and emits them in order: the simple plan, not a
sample-and-range sort over several instances; it holds the whole input in memory.

>>> from jetbench import Pipeline, run, sinks, sources
>>> p = Pipeline()
>>> _ = p.read_from(sources.items(["pear", "fig", "apple"])).sort().write_to(sinks.collect())
>>> run(p)
['apple', 'fig', 'pear']
>>> p = Pipeline()
>>> _ = p.read_from(sources.items(["pear", "fig", "apple"])).sort(key=len, reverse=True).write_to(sinks.collect())
>>> run(p)
['apple', 'pear', 'fig']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from typing import Any, ClassVar

from ..core.dag import Routing
from ..core.inbox import Inbox
from .builder_kind import single_instance
from .emitter import EmittingProcessor
from .kind_params import KindParams, code, flag
from .planning import Output, Planner, PlanNode, StageSpec
from .snapshotting import instance_key, own_values


class SortP(EmittingProcessor):
    """Holds every item; when its input completes, emits them sorted by ``key`` (the items
    themselves when None), descending with ``reverse``; stable.

    Snapshots: the items held, under a broadcast key naming the instance (a restored instance
    takes those of the old instances it stands for); once ``complete()`` has begun, only the
    items not yet emitted.
    """

    snapshot_support: ClassVar[str] = "supported"

    def __init__(self, key: Callable[[Any], Any] | None = None, reverse: bool = False):
        self.key = key
        self.reverse = reverse
        self.items: list[Any] = []
        self._sorted = False
        self._emitted = 0
        self._parts: list[bool] = []  # restored: whether each old instance's items were sorted

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self.items += inbox.take()

    def complete(self) -> bool:
        if not self._sorted:
            self.items.sort(key=self.key, reverse=self.reverse)
            self._sorted = True
        emitter = self._emitter
        room = emitter.free_room()
        if room <= 0:
            return False
        chunk = self.items[self._emitted:self._emitted + room]
        self._emitted += len(chunk)
        if chunk:
            emitter.emit(chunk)
        return self._emitted >= len(self.items) and not emitter.pending

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():
            return False
        held = list(islice(self.items, self._emitted, None))
        return self.outbox.offer_to_snapshot(instance_key("SortP", self.context), (self._sorted, held))

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        mine, _, _ = own_values(inbox, "SortP", self.context)
        for was_sorted, held in mine:
            self.items += held
            self._parts.append(was_sorted)

    def finish_snapshot_restore(self) -> bool:
        # the items of one old instance that had sorted them are in order; of several, not
        self._sorted, self._parts = self._parts == [True], []
        return True


@dataclass(frozen=True, eq=False, repr=False)
class Sort(KindParams, StageSpec):
    """The sort's parameters, its vertex supplier (``sort``) and its pipeline stage
    (``stage.sort(key=None, reverse=False)`` of a batch stage).

    Planning: one vertex of parallelism 1 behind an all-to-one edge; items lose their timestamps
    (a sorted batch has no event time).
    """

    key: Callable[[Any], Any] | None = code("", optional=True, help="sort key (empty: the items themselves)")
    reverse: bool = flag(help="descending")
    processor = SortP
    function = "sort"
    kind: ClassVar[str] = "sort"

    def describe(self) -> str:
        return f"sort({'key, ' if self.key is not None else ''}reverse={self.reverse})"

    def output_timestamped(self, inputs: bool) -> bool:
        return False

    def plan(self, planner: Planner, node: PlanNode) -> None:
        (up,) = node.upstream
        vertex = planner.vertex(node.name, self, 1)
        planner.connect(up, vertex, routing=Routing.ALL_TO_ONE, plain=True)
        planner.produce(node, Output(vertex, False))


#: the sort's vertex supplier (its declaration, `Sort`)
sort = Sort


BUILDER_KINDS = (
    Sort.builder_kind(id="sort", label="sort", category="aggregate", inputs=True, outputs=True, parallelism=1,
                      check=single_instance("a sort"),
                      description="all items in order, when the input completes (one instance)"),
)
