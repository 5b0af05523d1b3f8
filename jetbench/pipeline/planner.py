"""The planner: pipeline stages -> DAG vertices and edges (Jet's Planner, in Python).

- Chains of map/filter/flat_map/peek with one consumer and the same parallelism fuse into one
  vertex named ``fused(a, b, ...)``; ``rebalance()`` and differing parallelism stop fusion.
- Aggregations with ``combine`` run in two stages (accumulate -> combine); without, in one.
- Timestamped sources and ``add_timestamps`` get a watermark-inserting vertex, throttled to
  frames: the gcd of the pipeline's window slides (and session gaps) and 1000 ms.
- Consumers that want plain items (aggregations, most sinks) get the timestamps dropped, inside
  the upstream fused vertex when possible.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ..core.dag import DAG, Edge, Routing
from ..processors.planning import EventKey, Output, PlannedVertex, PlanNode
from ..processors.transform import transform_processor
from ..processors.transform_chain import Transform
from .errors import PipelineError
from .graph import Node

MAXIMUM_WATERMARK_GAP = 1000


class _PlannedEdge:
    __slots__ = ("source", "destination", "ordinal", "routing", "key_fn", "priority")

    def __init__(self, source: PlannedVertex, destination: PlannedVertex, ordinal: int = 0,
                 routing: Routing = Routing.UNICAST, key_fn: Callable[[Any], Any] | None = None,
                 priority: int = 0):
        self.source, self.destination, self.ordinal = source, destination, ordinal
        self.routing, self.key_fn, self.priority = routing, key_fn, priority


class Planner:
    """Plans the nodes of a `Pipeline` into a `DAG`: each node's spec expands itself through this object (the
    `jetbench.processors.planning.Planner` protocol), then the vertices are made, fused
    transforms last."""

    def __init__(self, nodes: Sequence[Node], fuse: bool = True):
        self.nodes = nodes
        self.fuse = fuse
        self.vertices: list[PlannedVertex] = []
        self.edges: list[_PlannedEdge] = []
        self.out: dict[PlanNode, Output] = {}
        self._consumers: dict[PlanNode, int] = {n: 0 for n in nodes}
        for n in nodes:
            for u in n.upstream:
                self._consumers[u] += 1
        self.watermark_frame = _watermark_frame(nodes)
        self.watermarks_needed = any(n.spec.uses_watermarks for n in nodes)
        #: id of a vertex -> the vertex dropping its timestamps, shared by its plain consumers
        self._droppers: dict[int, PlannedVertex] = {}

    def plan(self) -> DAG:
        nodes = self.nodes
        if not nodes:
            raise PipelineError("the pipeline is empty: start it with read_from(source)")
        for node in nodes:
            if node.kind != "sink" and self._consumers[node] == 0:
                raise PipelineError(f"stage {node.name!r} leads nowhere: end it with write_to(sink)")
            node.spec.plan(self, node)
        return self._materialize()

    # -- the protocol the specs plan through ------------------------------------------------------

    def vertex(self, name: str, supplier: Callable[[], Any] | None, local_parallelism: int | None,
               transform: Transform | None = None) -> PlannedVertex:
        pv = PlannedVertex(name, supplier, local_parallelism, transform, [name])
        self.vertices.append(pv)
        return pv

    def output(self, node: PlanNode) -> Output:
        return self.out[node]

    def produce(self, node: PlanNode, output: Output) -> None:
        self.out[node] = output

    def consumers(self, node: PlanNode) -> int:
        return self._consumers[node]

    def link(self, source: PlannedVertex, target: PlannedVertex, routing: Routing = Routing.UNICAST,
             key_fn: Callable[[Any], Any] | None = None) -> None:
        self.edges.append(_PlannedEdge(source, target, routing=routing, key_fn=key_fn))

    def connect(self, up: PlanNode, target: PlannedVertex, ordinal: int = 0, routing: Routing = Routing.UNICAST,
                key_fn: Callable[[Any], Any] | None = None, priority: int = 0, plain: bool = False) -> None:
        source = self.out[up]
        pv = source.vertex
        if plain and source.timestamped:
            if pv.transform is not None and self._consumers[up] == 1 and not source.rebalance:
                pv.transform = pv.transform.dropping_timestamps()
            else:  # one dropper per vertex, however many of its consumers want plain items
                dropper = self._droppers.get(id(pv))
                if dropper is None:
                    dropper = self._droppers[id(pv)] = self.vertex(
                        f"{pv.name}-drop-timestamps", None, pv.local_parallelism,
                        Transform(timestamped=True, keep_timestamps=False))
                    self.link(pv, dropper, Routing.ISOLATED)
                pv = dropper
        if source.rebalance and routing is Routing.UNICAST and source.rebalance_key is not None:
            routing, key_fn = Routing.PARTITIONED, source.rebalance_key
            if source.timestamped and not plain:
                key_fn = EventKey(key_fn)
        self.edges.append(_PlannedEdge(pv, target, ordinal, routing, key_fn, priority))

    # -- the DAG ----------------------------------------------------------------------------------

    def _materialize(self) -> DAG:
        dag = DAG()
        vertices = {}
        for pv in self.vertices:
            supplier = pv.supplier if pv.transform is None else transform_processor(pv.transform)
            assert supplier is not None  # a planned vertex has a supplier or a transform (Planner.vertex)
            name = pv.name if len(pv.names) == 1 else f"fused({', '.join(pv.names)})"
            vertices[pv] = dag.new_vertex(name, supplier, pv.local_parallelism)
        for e in self.edges:
            edge = Edge.from_(vertices[e.source], len(dag.outbound_edges(vertices[e.source]))).to(
                vertices[e.destination], e.ordinal
            )
            if e.routing is Routing.PARTITIONED:
                assert e.key_fn is not None  # the rules give every partitioned edge its key
                edge.partitioned(e.key_fn)
            elif e.routing is Routing.BROADCAST:
                edge.broadcast()
            elif e.routing is Routing.ISOLATED:
                edge.isolated()
            elif e.routing is Routing.ALL_TO_ONE:
                edge.all_to_one()
            if e.priority:
                edge.priority(e.priority)
            dag.edge(edge)
        return dag


def plan_dag(nodes: Sequence[Node], fuse: bool = True) -> DAG:
    """The DAG the pipeline graph ``nodes`` plans into (see `Planner`)."""
    return Planner(nodes, fuse).plan()


def _watermark_frame(nodes: Sequence[Node]) -> int:
    frames = [f for n in nodes if (f := n.spec.frame_size) is not None]
    return math.gcd(*frames, MAXIMUM_WATERMARK_GAP) if frames else MAXIMUM_WATERMARK_GAP


def explain(dag: DAG) -> str:
    """A readable listing of a planned DAG."""
    lines = ["vertices:"]
    for v in dag.vertices:
        lp = "default" if v.local_parallelism is None else v.local_parallelism
        lines.append(f"  {v.name}  [parallelism {lp}]  {v.supplier!r}")
    lines.append("edges:")
    for e in dag.edges:
        extra = f", priority {e.edge_priority}" if e.edge_priority else ""
        lines.append(
            f"  {e.source.name}[{e.source_ordinal}] -> {e.target.name}[{e.destination_ordinal}]"
            f"  {e.routing.value}{extra}"
        )
    return "\n".join(lines)
