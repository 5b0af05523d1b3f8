"""The co-group: two keyed batch inputs grouped together when both complete (the co-aggregation
of `jetbench.processors.co_aggregate` with `to_list` on both sides).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

from ..core.dag import Routing
from .aggregate_operation import to_list
from .co_aggregate import CoAggregateP, Tag, co_aggregate_operation, partitioned_inputs, tag_key
from .kind_params import KindParams, code
from .planning import Output, Planner, PlanNode, StageSpec


class CoGroupP(CoAggregateP):
    """Batch co-group of ordinal 0 (left) and ordinal 1 (right), both partitioned by key: the
    co-aggregation (`CoAggregateP`) of both inputs with `to_list`.

    When both inputs are exhausted it emits ``(key, [left items], [right items])`` for every key
    seen on either side, in the order keys were first seen, each list in arrival order.

    Snapshots: one ``(key, (left items, right items))`` entry per group (restored into the
    instance owning the key; the lists of one key from two instances are joined); once
    ``complete()`` has begun, only the groups not yet emitted.
    """

    def __init__(self, left_key: Callable[[Any], Hashable], right_key: Callable[[Any], Hashable]):
        super().__init__((left_key, right_key), (to_list(), to_list()))

    def result(self, key: Hashable, accs: list[Any]) -> tuple[Hashable, list[Any], list[Any]]:
        return key, accs[0], accs[1]


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


#: Tagged items (`Tag`) of both sides into ``([left items], [right items])`` per window and key.
CO_GROUP = co_aggregate_operation(to_list(), to_list())


# -- in the DAG builder ---------------------------------------------------------------------------


def _edge_defaults(p: dict[str, Any], ordinal: int) -> dict[str, Any]:
    key = p.get("left_key" if ordinal == 0 else "right_key")
    return {"routing": "partitioned", "key": key} if ordinal in (0, 1) and key else {}


BUILDER_KINDS = (
    CoGroup.builder_kind(id="co_group", label="co-group", category="join", inputs=True, outputs=True,
                         description="emits (key, [left items], [right items]) when both inputs complete",
                         in_ports=("left", "right"), edge_defaults=_edge_defaults, check=partitioned_inputs),
)

__all__ = ["CO_GROUP", "CoGroup", "CoGroupP", "CoGroupSpec", "Tag", "co_group", "tag_key"]
