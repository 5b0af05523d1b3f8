"""Seed 004's job: a rate-limited source -> 6 identity maps (not fused) -> count per tumbling
window of 1 s (event time = creation time) -> a latency-recording sink.

The sixth map is a probe: still an identity map, it also samples, once per batch, the
end-to-end latency of the batch's oldest item (due time -> now), which gives thousands of
latency samples per second where the windowed sink sees one result per second.
"""

from __future__ import annotations

import time
from typing import Any

from .. import sinks
from ..core import DAG, Edge
from ..pipeline import Source
from ..processors.aggregate import counting
from ..processors.transforms import Transform, TransformP, transform_processor
from ..processors.watermarks import insert_watermarks
from ..processors.windowing import tumbling
from ..processors.windows import window_aggregate

MAPS = 6
MAX_SAMPLES = 1_000_000


def identity(x: Any) -> Any:
    return x


class LatencyProbeP(TransformP):
    """An identity map that records, per batch, how long ago its oldest item was due (ms)."""

    def __init__(self) -> None:
        super().__init__(Transform(timestamped=True).map(identity))
        self.samples: list[float] = []
        self.items = 0

    def process(self, ordinal: int, inbox) -> None:
        before = len(inbox)
        if before and not self._emitter.pending:
            samples = self.samples
            if len(samples) < MAX_SAMPLES:
                samples.append(time.time_ns() / 1e6 - inbox.peek()[0])
        super().process(ordinal, inbox)
        self.items += before - len(inbox)


def idle_job(source: Source, maps: int = MAPS, window_ms: int = 1000) -> DAG:
    """The job as a DAG; ``source`` must be timestamped (``sources.generator`` or a replay).

    The maps are separate vertices (seed 004 ran them unfused); the last one is the probe.
    """
    dag = DAG()
    src = dag.new_vertex("source", source.supplier, source.local_parallelism or 1)
    prev = dag.new_vertex("watermarks", insert_watermarks(None, source.allowed_lag, window_ms), 1)
    dag.edge(Edge.between(src, prev).isolated())
    identity_map = transform_processor(Transform(timestamped=True).map(identity))
    for i in range(maps):
        v = dag.new_vertex(f"map-{i + 1}", LatencyProbeP if i == maps - 1 else identity_map, 1)
        dag.edge(Edge.between(prev, v))
        prev = v
    window = dag.new_vertex("count-per-window", window_aggregate(None, counting, tumbling(window_ms)), 1)
    sink = dag.new_vertex("latency-sink", sinks.latency().supplier, 1)
    dag.edge(Edge.between(prev, window)).edge(Edge.between(window, sink))
    return dag
