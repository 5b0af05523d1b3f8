"""The idle-CPU job of Hazelcast Jet's blog post "Idle Green Threads in Hazelcast Jet" (2019): a
rate-limited source -> 6 identity maps (not fused) -> count per tumbling window of 1 s (event
time = creation time) -> a latency-recording sink. `idle_job` builds it as a DAG (what the
experiments run), `idle_cpu_pipeline` writes it in the Pipeline API.

The sixth map is a probe (`LatencyProbeP`, compiled with the engine: `jetbench.experiments.
latency_probe`): still an identity map, it also samples, once per batch, the end-to-end latency
of the batch's oldest item (due time -> now), which gives thousands of latency samples per second
where the windowed sink sees one result per second.
"""

from __future__ import annotations

from typing import Any

from .. import sinks
from ..core import DAG, Edge
from ..pipeline import Pipeline, Source
from ..processors import Transform, counting, transform_processor
from ..processors.insert_watermarks import insert_watermarks
from ..processors.window_aggregate import window_aggregate
from ..window import tumbling
from .job_functions import identity
from .latency_probe import MAX_SAMPLES, LatencyProbeP

__all__ = ["MAPS", "MAX_SAMPLES", "LatencyProbeP", "identity", "idle_cpu_pipeline", "idle_job"]

MAPS = 6


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
