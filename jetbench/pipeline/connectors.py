"""Source and Sink descriptors: what `Pipeline.read_from` and `Stage.write_to` take.

A descriptor names a processor supplier plus what the planner must know about it: whether
the source emits timestamped ``(ts, item)`` tuples and whether it is unbounded, and whether a
sink wants the timestamps of a timestamped stage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from ..core.dag import Routing
from ..core.processor import Processor
from ..processors.insert_watermarks import insert_watermarks
from ..processors.planning import Output, Planner, PlanNode, StageSpec


@dataclass(frozen=True)
class Source:
    """A pipeline source.

    ``timestamped``: the processor emits ``(ts, item)`` tuples (event time in ms) and the
    planner adds watermarks after it. ``streaming``: unbounded; batch-only stages refuse it.
    ``ordered``: each instance's timestamps never decrease, so the watermarks after it read a
    batch's last timestamp instead of scanning it for the largest (`insert_watermarks`).
    ``own_watermarks``: the source makes its watermarks itself (per partition, as Jet's Kafka
    source): the planner adds no vertex after it but gives its supplier the watermark frame
    (``supplier.for_watermark_frame(frame)``).
    """

    name: str
    supplier: Callable[[], Processor]
    local_parallelism: int | None = None
    timestamped: bool = False
    streaming: bool = False
    allowed_lag: float = 0
    ordered: bool = False
    own_watermarks: bool = False

    def __repr__(self) -> str:
        return f"Source({self.name!r})"


@dataclass(frozen=True)
class Sink:
    """A pipeline sink. ``accepts_timestamped``: it receives ``(ts, item)`` tuples from a
    timestamped stage (e.g. the latency sink); otherwise the planner drops the timestamps.
    ``requires_timestamped``: building refuses to attach it to a stage without timestamps."""

    name: str
    supplier: Callable[[], Any]
    local_parallelism: int | None = None
    accepts_timestamped: bool = False
    requires_timestamped: bool = False

    def __repr__(self) -> str:
        return f"Sink({self.name!r})"


@dataclass(frozen=True)
class SourceSpec(StageSpec):
    """``pipeline.read_from(source)``: the source's vertex, and for a timestamped source in a
    pipeline with an event-time stage (a window, a timer) a watermark-inserting vertex after it
    (isolated, so each instance keeps its own order)."""

    source: Source
    kind: ClassVar[str] = "source"

    def plan(self, planner: Planner, node: PlanNode) -> None:
        source = self.source
        supplier = source.supplier
        if source.own_watermarks and source.timestamped and planner.watermarks_needed:
            supplier = supplier.for_watermark_frame(planner.watermark_frame)  # type: ignore[attr-defined]
        vertex = planner.vertex(node.name, supplier, node.local_parallelism)
        if source.timestamped and planner.watermarks_needed and not source.own_watermarks:
            watermarks = planner.vertex(f"{node.name}-watermarks",
                                        insert_watermarks(None, source.allowed_lag, planner.watermark_frame,
                                                          ordered=source.ordered),
                                        node.local_parallelism)
            planner.link(vertex, watermarks, Routing.ISOLATED)
            vertex = watermarks
        planner.produce(node, Output(vertex, source.timestamped))


@dataclass(frozen=True)
class SinkSpec(StageSpec):
    """``stage.write_to(sink)``: the sink's vertex; timestamps are dropped on the way unless the
    sink accepts them."""

    sink: Sink
    kind: ClassVar[str] = "sink"

    def plan(self, planner: Planner, node: PlanNode) -> None:
        sink = self.sink
        vertex = planner.vertex(node.name, sink.supplier, sink.local_parallelism or node.local_parallelism)
        planner.connect(node.upstream[0], vertex, plain=not sink.accepts_timestamped)
