"""Expand a DAG into a `JobPlan`: processor instances as tasklets, SPSC queues per edge,
collectors per producer, and how to read the job's result. The plan is returned, not written
anywhere: `ExecutionService.submit` hands it to the job and its workers."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .clock import SYSTEM_CLOCK, Clock
from .dag import DAG, Edge, Routing, Vertex
from .errors import DagError, JobError
from .processor import Processor, ProcessorContext
from .queues import InboundStream, SPSCQueue
from .routing import Collector, make_collector
from .tasklet import ProcessorTasklet

if TYPE_CHECKING:
    from .snapshot_tasklet import SnapshotSetup

_log = logging.getLogger("jetbench")


def connected(edge: Edge, producer: int, consumer: int, producers: int) -> bool:
    """Whether producer instance ``producer`` has a queue to consumer instance ``consumer``."""
    if edge.routing is Routing.ISOLATED:
        return consumer % producers == producer
    if edge.routing is Routing.ALL_TO_ONE:
        return consumer == 0
    return True


@dataclass(frozen=True)
class JobPlan:
    """What `build_plan` makes of a DAG."""

    #: one per processor instance, in the DAG's vertex order
    tasklets: tuple[ProcessorTasklet, ...]
    #: ``(source vertex, destination vertex, destination ordinal)`` per DAG edge, in its order
    edges: tuple[tuple[str, str, int], ...]
    #: gives the job's result once every tasklet has ended (see `collect_result`)
    result: Callable[[], Any]


def build_plan(
    dag: DAG,
    default_parallelism: int,
    outbox_capacity: int,
    wait_for_room: Callable[[ProcessorTasklet], None] | None = None,
    clock: Clock = SYSTEM_CLOCK,
    snapshots: SnapshotSetup | None = None,
) -> JobPlan:
    """Validate ``dag`` and plan it: one tasklet per processor instance, wired by queues, each
    processor's context carrying ``clock``. ``wait_for_room`` is how a non-cooperative tasklet's
    outbox waits when full (without it, that outbox refuses like a cooperative one). With
    ``snapshots`` (a job with a processing guarantee) the streams and tasklets are the
    barrier-aware ones of `jetbench.core.snapshot_tasklet`, restored as it says."""
    dag.validate(default_parallelism)
    tasklets = _build_tasklets(dag, default_parallelism, outbox_capacity, wait_for_room, clock, snapshots)
    edges = tuple((e.source.name, e.target.name, e.destination_ordinal) for e in dag.edges)
    return JobPlan(tuple(tasklets), edges, collect_result(dag, tasklets))


def _build_tasklets(
    dag: DAG,
    default_parallelism: int,
    outbox_capacity: int,
    wait_for_room: Callable[[ProcessorTasklet], None] | None = None,
    clock: Clock = SYSTEM_CLOCK,
    snapshots: SnapshotSetup | None = None,
) -> list[ProcessorTasklet]:
    """Create one tasklet per processor instance of a valid ``dag``, wired by queues."""
    parallelism = {v.name: v.local_parallelism or default_parallelism for v in dag.vertices}
    inbound: dict[tuple[str, int], list[InboundStream]] = {}
    outbound: dict[tuple[str, int], list[tuple[int, Collector]]] = {}
    for edge in dag.edges:
        src, dst = edge.source.name, edge.target.name
        n_up, n_down = parallelism[src], parallelism[dst]
        queues = [
            [SPSCQueue(edge.edge_queue_size) if connected(edge, i, j, n_up) else None for j in range(n_down)]
            for i in range(n_up)
        ]
        for j in range(n_down):
            conveyor = [q for q in (queues[i][j] for i in range(n_up)) if q is not None]
            if snapshots is None:
                stream = InboundStream(edge.destination_ordinal, edge.edge_priority, conveyor)
            else:
                stream = snapshots.stream(edge.destination_ordinal, edge.edge_priority, conveyor)
            inbound.setdefault((dst, j), []).append(stream)
        for i in range(n_up):
            targets = [q for q in queues[i] if q is not None]
            collector = make_collector(edge.routing, targets, edge.key_fn, start=i)
            outbound.setdefault((src, i), []).append((edge.source_ordinal, collector))

    tasklets: list[ProcessorTasklet] = []
    try:
        for vertex in dag.vertices:
            lp = parallelism[vertex.name]
            for k in range(lp):
                context = _context_of(vertex, ProcessorContext(vertex.name, k, k, lp, lp, clock=clock,
                                      processing_guarantee="none" if snapshots is None else snapshots.guarantee))
                collectors = [c for _, c in sorted(outbound.get((vertex.name, k), []), key=lambda oc: oc[0])]
                streams = sorted(inbound.get((vertex.name, k), []), key=lambda s: s.ordinal)
                if snapshots is None:
                    tasklet = ProcessorTasklet(
                        _new_processor(vertex, k),
                        context,
                        streams,
                        collectors,
                        outbox_capacity=outbox_capacity,
                        inbox_limit=max(outbox_capacity, 1),
                        wait_for_room=wait_for_room,
                    )
                else:
                    tasklet = snapshots.tasklet(_new_processor(vertex, k), context, streams, collectors,
                                                outbox_capacity, max(outbox_capacity, 1), wait_for_room)
                tasklets.append(tasklet)
    except BaseException:
        # close() is always called, even without init: close what was created before the failure
        for t in tasklets:
            try:
                t.close_processor()
            except Exception:
                _log.exception("closing %s after a failed job setup", t.name)
        raise
    return tasklets


def _context_of(vertex: Vertex, context: ProcessorContext) -> ProcessorContext:
    """The context an instance of ``vertex`` is given: ``context``, or what the vertex's supplier
    makes of it when it has a ``processor_context(context)`` method (Spark's stage tasks give their
    processors cluster-wide indices so: a compiled processor's methods cannot be replaced)."""
    adjust = getattr(vertex.supplier, "processor_context", None)
    if adjust is None:
        return context
    adjusted = adjust(context)
    if not isinstance(adjusted, ProcessorContext):
        raise DagError(f"vertex {vertex.name!r}: its supplier's processor_context() returned {adjusted!r}, "
                       "not a ProcessorContext")
    return adjusted


def _new_processor(vertex: Vertex, index: int) -> Processor:
    try:
        processor = vertex.supplier()
    except Exception as exc:
        raise JobError(
            f"vertex {vertex.name!r} instance {index}: its supplier raised {type(exc).__name__}: {exc}",
            vertex.name,
            index,
        ) from exc
    if not isinstance(processor, Processor):
        raise DagError(
            f"vertex {vertex.name!r}: supplier returned {processor!r}, not a jetbench.Processor"
        )
    return processor


def collect_result(dag: DAG, tasklets: list[ProcessorTasklet]) -> Callable[[], Any]:
    """A function giving the job's result: the first collecting vertex's merged result parts."""
    by_vertex: dict[str, list[ProcessorTasklet]] = {}
    for t in tasklets:
        if getattr(t.processor, "collects", False):
            by_vertex.setdefault(t.vertex_name, []).append(t)
    if not by_vertex:
        return lambda: None
    first = next(v for v in dag.vertices if v.name in by_vertex)

    def result() -> Any:
        parts = [t.processor.result_part() for t in by_vertex[first.name]]
        merge = getattr(first.supplier, "merge_results", None)
        if merge is not None:
            return merge(parts)
        return merge_parts(parts)

    return result


def merge_parts(parts: list[Any]) -> Any:
    """Lists concatenate in instance order, dicts merge; anything else stays a list of parts."""
    if len(parts) == 1:
        return parts[0]
    if all(isinstance(p, list) for p in parts):
        return [x for p in parts for x in p]
    if all(isinstance(p, dict) for p in parts):
        merged: dict[Any, Any] = {}
        for p in parts:
            merged.update(p)
        return merged
    return parts
