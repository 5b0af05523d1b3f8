"""How a vertex kind enters the Pipeline API: the typed form of its stage and its planning rule.

A kind's module declares a frozen `StageSpec` subclass that holds what the user's call gave
(``StatelessStage("map", fn)``, ``HashJoinStage(key_fn, other_key_fn, "inner")``) and a
``plan(planner, node)`` that expands it into vertices and edges. The rule talks to the planner
through the `Planner` protocol, which the pipeline layer's planner implements, so the kind's
module stays below the pipeline layer (it imports only the engine and other processors).

The planner's intermediate form is here too: a `PlannedVertex` (a vertex to be, whose supplier
may still be a fusable `Transform`), an `Output` (where a node's items come from) and the key
wrappers the rules put on partitioned edges.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from ..core.dag import Routing
from .supplier import set_builder_code
from .transform_chain import Transform


@dataclass(eq=False)
class PlannedVertex:
    """A vertex to be: ``supplier``, or a fusable ``transform`` whose supplier is made at the
    end; ``names`` are the stages fused into it."""

    name: str
    supplier: Callable[[], Any] | None
    local_parallelism: int | None
    transform: Transform | None = None
    names: list[str] = field(default_factory=list)


@dataclass(eq=False)
class Output:
    """Where a node's items come from: a vertex, whether they are timestamped ``(ts, item)``
    pairs, and any rebalance request for the next edge."""

    vertex: PlannedVertex
    timestamped: bool
    rebalance: bool = False
    rebalance_key: Callable[[Any], Any] | None = None


class PlanNode(Protocol):
    """A pipeline node as a planning rule sees it."""

    name: str
    local_parallelism: int | None
    timestamped: bool

    @property
    def upstream(self) -> Sequence[PlanNode]: ...


class Planner(Protocol):
    """What a stage's planning rule may ask of the planner."""

    #: fuse stateless stages into the vertex before them when they can
    fuse: bool
    #: the frame (ms) inserted watermarks are throttled to
    watermark_frame: int
    #: some stage of the pipeline needs watermarks (`StageSpec.uses_watermarks`)
    watermarks_needed: bool

    def vertex(self, name: str, supplier: Callable[[], Any] | None, local_parallelism: int | None,
               transform: Transform | None = None) -> PlannedVertex:
        """A new vertex."""
        ...

    def connect(self, up: PlanNode, target: PlannedVertex, ordinal: int = 0, routing: Routing = Routing.UNICAST,
                key_fn: Callable[[Any], Any] | None = None, priority: int = 0, plain: bool = False) -> None:
        """An edge from where ``up``'s items come from into ``target``'s input ``ordinal``;
        ``plain`` drops timestamps on the way if the items have them."""
        ...

    def link(self, source: PlannedVertex, target: PlannedVertex, routing: Routing = Routing.UNICAST,
             key_fn: Callable[[Any], Any] | None = None) -> None:
        """An edge between two vertices of the same rule (e.g. accumulate -> combine)."""
        ...

    def output(self, node: PlanNode) -> Output:
        """Where ``node``'s items come from (a node planned before)."""
        ...

    def produce(self, node: PlanNode, output: Output) -> None:
        """Record where ``node``'s own items come from."""
        ...

    def consumers(self, node: PlanNode) -> int:
        """How many nodes read ``node``'s items."""
        ...


class StageSpec:
    """The typed form of a pipeline stage: a frozen dataclass per kind, with its planning rule.

    ``kind`` names the stage in reprs and errors; ``frame_size`` (ms), when not None, is a
    window's frame that inserted watermarks must align with; ``uses_watermarks`` says the stage
    works on event time.
    """

    kind: ClassVar[str] = "stage"
    #: the stage needs watermarks (windows, event-time timers): the planner inserts them after
    #: timestamped sources only when some stage of the pipeline does
    uses_watermarks: ClassVar[bool] = False

    @property
    def frame_size(self) -> int | None:
        return None

    def output_timestamped(self, inputs: bool) -> bool:
        """Whether the stage's items are ``(ts, item)`` pairs, given whether its inputs' are
        (used by ``Stage.apply``; the built-in methods say it themselves)."""
        return inputs

    def plan(self, planner: Planner, node: PlanNode) -> None:
        raise NotImplementedError(f"{type(self).__name__} has no planning rule")


def plan_unary(planner: Planner, node: PlanNode, make: Callable[[bool], Callable[[], Any]]) -> None:
    """The rule of a one-input stage whose supplier depends only on whether its items are
    timestamped: ``make(timestamped)`` gives the supplier; items keep their timestamps."""
    (up,) = node.upstream
    timestamped = planner.output(up).timestamped
    vertex = planner.vertex(node.name, make(timestamped), node.local_parallelism)
    planner.connect(up, vertex)
    planner.produce(node, Output(vertex, timestamped))


def plan_by_key(planner: Planner, node: PlanNode, key_fn: Callable[[Any], Any] | None,
                make: Callable[[bool], Callable[[], Any]]) -> None:
    """The rule of a one-input stage that keeps state per key: one vertex behind an edge
    partitioned by ``key_fn`` of the item (its ``(ts, item)`` pair's item when timestamped), or,
    for ``key_fn`` None (one state over all items), one vertex of parallelism 1 behind an
    all-to-one edge. ``make(timestamped)`` gives the supplier; items keep their timestamps."""
    (up,) = node.upstream
    timestamped = planner.output(up).timestamped
    supplier = make(timestamped)
    if key_fn is None:
        vertex = planner.vertex(node.name, supplier, 1)
        planner.connect(up, vertex, routing=Routing.ALL_TO_ONE)
    else:
        vertex = planner.vertex(node.name, supplier, node.local_parallelism)
        planner.connect(up, vertex, routing=Routing.PARTITIONED, key_fn=EventKey(key_fn) if timestamped else key_fn)
    planner.produce(node, Output(vertex, timestamped))


def pair_key(pair: tuple[Any, Any]) -> Any:
    """The key of a ``(key, value)`` pair: what stage 2 of an aggregation is partitioned by."""
    return pair[0]


set_builder_code(pair_key, "x[0]")


class EventKey:
    """The key of a ``(ts, item)`` event: ``key_fn(item)`` (``key_fn`` is public for tools)."""

    __slots__ = ("key_fn",)

    def __init__(self, key_fn: Callable[[Any], Any]):
        self.key_fn = key_fn

    def __call__(self, event: tuple[Any, Any]) -> Any:
        return self.key_fn(event[1])

    @property
    def item_key(self) -> Callable[[Any], Any]:
        """The key as a function of the item alone: a partitioned edge routes a stamped chunk
        (`jetbench.core.items.Stamped`) by it without building the ``(ts, item)`` pairs."""
        return self.key_fn

    def __getstate__(self) -> Any:
        return self.key_fn

    def __setstate__(self, state: Any) -> None:
        self.key_fn = state

    def __repr__(self) -> str:
        return f"EventKey({getattr(self.key_fn, '__name__', self.key_fn)})"
