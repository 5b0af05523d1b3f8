"""The idle-CPU job of Hazelcast Jet's blog post "Idle Green Threads in Hazelcast Jet" (2019): a
rate-limited source -> 6 identity maps (not fused) -> count per tumbling window of 1 s (event
time = creation time) -> a latency-recording sink. `idle_job` builds it as a DAG (what the
experiments run), `idle_cpu_pipeline` writes it in the Pipeline API.

The sixth map is a probe: still an identity map, it also samples, once per batch, the
end-to-end latency of the batch's oldest item (due time -> now), which gives thousands of
latency samples per second where the windowed sink sees one result per second.
"""

from __future__ import annotations

import time
from array import array
from typing import Any

from .. import sinks
from ..core import DAG, Edge
from ..core.inbox import Inbox
from ..pipeline import Pipeline, Source
from ..processors import Transform, counting, transform_processor
from ..processors.insert_watermarks import insert_watermarks
from ..processors.snapshotting import instance_key, own_values
from ..processors.transform import TransformP
from ..processors.window_aggregate import window_aggregate
from ..window import tumbling

MAPS = 6
MAX_SAMPLES = 1_000_000


def identity(x: Any) -> Any:
    return x


class LatencyProbeP(TransformP):
    """An identity map that records, per batch, how long ago its oldest item was due (ms).

    Its counters (``items`` passed, latency ``samples``) are part of its snapshot, saved under
    this instance's own key: a job with a processing guarantee that restarts goes on counting
    from the snapshot, so an item is counted once however often the job restarts.

    >>> from jetbench.testing import verify_processor
    >>> report = verify_processor(LatencyProbeP, input=[(0, "a"), (1, "b"), (2, "c")],
    ...                           expected=[(0, "a"), (1, "b"), (2, "c")])
    >>> [run.processor.items for run in report.runs]
    [3, 3, 3, 3, 3]
    """

    def __init__(self) -> None:
        super().__init__(Transform(timestamped=True).map(identity))
        self.samples: list[float] = []
        self.items = 0

    def save_to_snapshot(self) -> bool:
        return self.outbox.offer_to_snapshot(instance_key("LatencyProbeP", self.context),
                                             (self.items, array("d", self.samples)))

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        mine, _, _ = own_values(inbox, "LatencyProbeP", self.context)
        for items, samples in mine:  # several when restored at a lower parallelism
            self.items += items
            self.samples += samples[:MAX_SAMPLES - len(self.samples)]

    def process(self, ordinal: int, inbox: Inbox) -> None:
        before = len(inbox)
        if before and not self._emitter.pending:
            samples = self.samples
            if len(samples) < MAX_SAMPLES:
                samples.append(time.time_ns() / 1e6 - inbox.peek()[0])
        super().process(ordinal, inbox)
        self.items += before - len(inbox)


def idle_job(source: Source, maps: int = MAPS, window_ms: int = 1000) -> DAG:
    """The job as a DAG; ``source`` must be timestamped (``sources.generator`` or a replay).

    The maps are separate vertices (the blog post's job ran them unfused); the last one is the probe.

    >>> from jetbench import sources
    >>> [v.name for v in idle_job(sources.generator(1000)).vertices]  # doctest: +NORMALIZE_WHITESPACE
    ['source', 'watermarks', 'map-1', 'map-2', 'map-3', 'map-4', 'map-5', 'map-6',
     'count-per-window', 'latency-sink']
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
    window = dag.new_vertex("count-per-window", window_aggregate(None, counting(), tumbling(window_ms)), 1)
    sink = dag.new_vertex("latency-sink", sinks.latency().supplier, 1)
    dag.edge(Edge.between(prev, window)).edge(Edge.between(window, sink))
    return dag


def idle_cpu_pipeline(source: Source, maps: int = MAPS, window_ms: int = 1000, sink: Any = None) -> Pipeline:
    """The same job in the Pipeline API: ``source`` -> ``maps`` identity maps (not fused) -> count
    per tumbling window of ``window_ms`` (event time = creation time) -> ``sink`` (by default
    ``sinks.latency()``). It has no latency probe; `idle_job` is what the experiments run.

    >>> from jetbench import sources
    >>> [v.name for v in idle_cpu_pipeline(sources.generator(1000)).to_dag().vertices]
    ... # doctest: +NORMALIZE_WHITESPACE
    ['generator', 'generator-watermarks', 'map-1', 'map-2', 'map-3', 'map-4', 'map-5', 'map-6',
     'window-tumbling(1000)', 'latency']
    """
    p = Pipeline(fuse=False)
    stage = p.read_from(source)
    for i in range(maps):
        stage = stage.map(identity, name=f"map-{i + 1}")
    stage.window(tumbling(window_ms)).aggregate(counting()).write_to(sink or sinks.latency())
    return p
