"""The co-group: two keyed batch inputs grouped together when both complete.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any, ClassVar

from ..core.dag import Routing
from ..core.inbox import Inbox
from .aggregate_operation import AggregateOperation
from .emitter import EmittingProcessor
from .kind_params import KindParams, code
from .planning import Output, Planner, PlanNode, StageSpec
from .snapshotting import EntrySaver
from .supplier import set_builder_code


class CoGroupP(EmittingProcessor):
    """Batch co-group of ordinal 0 (left) and ordinal 1 (right), both partitioned by key.

    When both inputs are exhausted it emits ``(key, [left items], [right items])`` for every key
    seen on either side, in the order keys were first seen, each list in arrival order.

    Snapshots: one ``(key, (left items, right items))`` entry per group (restored into the
    instance owning the key; the lists of one key from two instances are joined); once
    ``complete()`` has begun, only the groups not yet emitted.
    """

    snapshot_support: ClassVar[str] = "supported"

    def __init__(self, left_key: Callable[[Any], Hashable], right_key: Callable[[Any], Hashable]):
        self.key_fns = (left_key, right_key)
        self.groups: dict[Hashable, tuple[list[Any], list[Any]]] = {}
        self._results: Iterator[tuple[Hashable, list[Any], list[Any]]] | None = None
        self._emitted = 0  # groups complete() has handed to the emitter
        self._saver = EntrySaver()

    def process(self, ordinal: int, inbox: Inbox) -> None:
        groups, key = self.groups, self.key_fns[ordinal]
        for item in inbox.take():
            k = key(item)
            group = groups.get(k)
            if group is None:
                group = groups[k] = ([], [])
            group[ordinal].append(item)

    def complete(self) -> bool:
        if self._results is None:
            self._results = self._groups_from(0)
        if self._emitter.emit_from(self._results):
            self.groups = {}
            return True
        return False

    def _groups_from(self, start: int) -> Iterator[tuple[Hashable, list[Any], list[Any]]]:
        for k, (lefts, rights) in islice(self.groups.items(), start, None):
            self._emitted += 1
            yield k, lefts, rights

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():  # groups taken before the barrier go first
            return False
        skip = self._emitted if self._results is not None else 0
        return self._saver.save(self.outbox, lambda: islice(self.groups.items(), skip, None))

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        groups = self.groups
        for key, (lefts, rights) in inbox.take():
            group = groups.get(key)
            if group is None:
                groups[key] = (lefts, rights)
            else:
                group[0].extend(lefts)
                group[1].extend(rights)


@dataclass(frozen=True, eq=False, repr=False)
class CoGroup(KindParams, StageSpec):
    """The co-group's parameters, its vertex supplier (``co_group``) and its pipeline stage
    (``stage.co_group(other, left_key, right_key)`` of two batch stages): two keyed inputs
    (ordinals 0 and 1) grouped by key at the end of input.

    Planning: both inputs partitioned by their key, so a key's items of both sides meet in
    one instance. (With a window, the Pipeline API writes co_group as tagged items merged and
    window-aggregated with `CO_GROUP`, see `Tag`.)

    >>> co_group(len, abs)
    co_group()
    """

    left_key: Callable[[Any], Hashable] = code("x", help="key of an item of input 0")
    right_key: Callable[[Any], Hashable] = code("x", help="key of an item of input 1")
    processor = CoGroupP
    function = "co_group"
    kind: ClassVar[str] = "co_group"

    def describe(self) -> str:
        return "co_group()"

    def plan(self, planner: Planner, node: PlanNode) -> None:
        left, right = node.upstream
        vertex = planner.vertex(node.name, self, node.local_parallelism)
        planner.connect(left, vertex, ordinal=0, routing=Routing.PARTITIONED, key_fn=self.left_key, plain=True)
        planner.connect(right, vertex, ordinal=1, routing=Routing.PARTITIONED, key_fn=self.right_key, plain=True)
        planner.produce(node, Output(vertex, False))


#: the co-group's vertex supplier (its declaration, see `CoGroup`)
co_group = CoGroup
#: the co-group as a pipeline stage
CoGroupSpec = CoGroup


class Tag:
    """Marks an item with its side of a windowed co_group and its key: ``(side, key, item)``
    (``side`` and ``key_fn`` are public for tools)."""

    def __init__(self, side: int, key_fn: Callable[[Any], Hashable]):
        self.side, self.key_fn = side, key_fn
        self.__name__ = f"tag-{side}"

    def __call__(self, item: Any) -> tuple[int, Hashable, Any]:
        return self.side, self.key_fn(item), item


def tag_key(tagged: tuple[int, Hashable, Any]) -> Hashable:
    """The key of a tagged item."""
    return tagged[1]


set_builder_code(tag_key, "x[1]")


def _co_group_create() -> tuple[list[Any], list[Any]]:
    return [], []


def _co_group_accumulate(acc: tuple[list[Any], list[Any]], tagged: tuple[int, Hashable, Any]) -> tuple[list[Any], list[Any]]:
    acc[tagged[0]].append(tagged[2])
    return acc


def _co_group_combine(a: tuple[list[Any], list[Any]], b: tuple[list[Any], list[Any]]) -> tuple[list[Any], list[Any]]:
    a[0].extend(b[0])
    a[1].extend(b[1])
    return a


#: Tagged items of both sides into ``([left items], [right items])`` per window and key.
CO_GROUP = AggregateOperation(create=_co_group_create, accumulate=_co_group_accumulate, combine=_co_group_combine)


# -- in the DAG builder ---------------------------------------------------------------------------


def _check(v: dict[str, Any], inbound: list[dict[str, Any]], outbound: list[dict[str, Any]]) -> list[tuple[str, str]]:
    if v["parallelism"] == 1:
        return []
    return [(f"input {e['target_ordinal']} should be partitioned by its key: equal keys must meet in one instance",
             "warning") for e in inbound if e["routing"] != "partitioned"]


def _edge_defaults(p: dict[str, Any], ordinal: int) -> dict[str, Any]:
    key = p.get("left_key" if ordinal == 0 else "right_key")
    return {"routing": "partitioned", "key": key} if ordinal in (0, 1) and key else {}


BUILDER_KINDS = (
    CoGroup.builder_kind(id="co_group", label="co-group", category="join", inputs=True, outputs=True,
                         description="emits (key, [left items], [right items]) when both inputs complete",
                         in_ports=("left", "right"), edge_defaults=_edge_defaults, check=_check),
)
