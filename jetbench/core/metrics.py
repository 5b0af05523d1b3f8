"""Metrics: the frozen records of a job's counters (Jet's metric names in snake_case).

Counters are plain ints written only by the thread running a tasklet, once per batch or call;
readers take a snapshot without locks (a value may be one batch stale, never torn). Each
record is made by what it describes (`ProcessorTasklet.statistics`, a worker's
``statistics()``, `Job.metrics`); `jetbench.core.sampler` turns them into series.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TaskletStatistics:
    """One processor instance's counters (Jet's metric names in snake_case)."""

    vertex: str
    index: int
    worker: int  # cooperative worker index; negative for a dedicated (blocking) thread
    cooperative: bool
    state: str
    received_count: int
    received_batches: int
    emitted_count: int
    queues_size: int
    queues_capacity: int
    calls: int
    progress_calls: int
    busy_ms: float
    slow_calls: int
    max_call_ms: float
    backpressure: bool  # the last flush could not move everything: a downstream queue is full
    processor_metrics: dict[str, Any] = field(default_factory=dict)  # the processor's own, e.g. late events
    #: ``(ordinal, size, capacity)`` per inbound ordinal (one DAG edge each), finished edges too;
    #: ``queues_size``/``queues_capacity`` above cover only the streams being drained now
    inbound_queues: tuple[tuple[int, int, int], ...] = ()


@dataclass(frozen=True)
class WorkerStatistics:
    index: int
    kind: str  # "cooperative" or "blocking"
    tasklet_count: int
    iteration_count: int
    idle_count: int
    parked_ms: float
    cpu_time_s: float
    alive: bool


def edge_label(source: str, destination: str, ordinal: int) -> str:
    """How an edge is named in metrics and views: ``"tokenize → count #0"``."""
    return f"{source} → {destination} #{ordinal}"


@dataclass(frozen=True)
class QueueStatistics:
    """The queues of one DAG edge (all producer → consumer instance pairs), summed."""

    edge: str  # edge_label(source, destination, ordinal)
    source: str  # "" when the snapshot does not know the edge's source
    destination: str
    ordinal: int  # the destination's inbound ordinal
    size: int
    capacity: int
    fill: float  # size / capacity, 0.0 without a queue


@dataclass(frozen=True)
class SnapshotStatistics:
    """The snapshots of a job with a processing guarantee (``JobMetrics.snapshots``).

    ``snapshots_taken`` counts the snapshots stored, ``snapshots_failed`` those the store
    refused; ``last_snapshot_id`` (0: none yet), ``last_duration_ms`` (from its start until it
    was stored), ``last_sizes`` (bytes per vertex in the store) and ``last_age_s`` (seconds since
    it started, on the job clock) describe the newest stored one; ``restarts`` the executions
    started again after a failure; ``restored_from`` the snapshot the current execution started
    from (0: from the start)."""

    guarantee: str
    snapshots_taken: int
    snapshots_failed: int
    last_snapshot_id: int
    last_duration_ms: float
    last_sizes: dict[str, int]
    last_age_s: float | None
    restarts: int
    restored_from: int

    @property
    def last_size_bytes(self) -> int:
        """The newest stored snapshot's size, all vertices together."""
        return sum(self.last_sizes.values())


@dataclass(frozen=True)
class JobMetrics:
    """A snapshot of a job's counters at ``elapsed_s`` after submission."""

    job: str
    status: str
    elapsed_s: float
    tasklets: tuple[TaskletStatistics, ...]
    workers: tuple[WorkerStatistics, ...]
    #: ``(source, destination, destination ordinal)`` of each DAG edge, in the DAG's order
    edges: tuple[tuple[str, str, int], ...] = ()
    #: the job's snapshots, when it has a processing guarantee (else None)
    snapshots: SnapshotStatistics | None = None

    def tasklet(self, vertex: str, index: int = 0) -> TaskletStatistics:
        for t in self.tasklets:
            if t.vertex == vertex and t.index == index:
                return t
        raise KeyError(f"no tasklet {vertex!r}#{index} in job {self.job!r}")

    def by_vertex(self) -> dict[str, dict[str, int]]:
        """Counters summed over each vertex's instances."""
        totals: dict[str, dict[str, int]] = {}
        for t in self.tasklets:
            row = totals.setdefault(t.vertex, {"received_count": 0, "emitted_count": 0, "queues_size": 0})
            row["received_count"] += t.received_count
            row["emitted_count"] += t.emitted_count
            row["queues_size"] += t.queues_size
        return totals

    def by_edge(self) -> tuple[QueueStatistics, ...]:
        """Queue size and capacity per DAG edge (in the DAG's order), summed over the instances.

        Inbound ordinals missing from ``edges`` (a snapshot built by hand) come last, with
        an empty ``source``.
        """
        sums: dict[tuple[str, int], list[int]] = {}
        for t in self.tasklets:
            for ordinal, size, capacity in t.inbound_queues:
                acc = sums.setdefault((t.vertex, ordinal), [0, 0])
                acc[0] += size
                acc[1] += capacity
        keys = [(src, dst, ordinal) for src, dst, ordinal in self.edges]
        known = {(dst, ordinal) for _, dst, ordinal in keys}
        keys += [("", dst, ordinal) for dst, ordinal in sums if (dst, ordinal) not in known]
        out: list[QueueStatistics] = []
        for src, dst, ordinal in keys:
            size, capacity = sums.get((dst, ordinal), (0, 0))
            out.append(QueueStatistics(edge_label(src, dst, ordinal) if src else f"→ {dst} #{ordinal}",
                                       src, dst, ordinal, size, capacity, size / capacity if capacity else 0.0))
        return tuple(out)

    def table(self) -> str:
        """A plain-text table of the tasklets, for terminals."""
        names = [f"{t.vertex}#{t.index}" for t in self.tasklets]
        width = max([24, *(len(n) + 1 for n in names)])
        head = f"{'tasklet':<{width}}{'worker':>7}{'state':>14}{'in':>11}{'out':>11}{'batches':>9}{'busy ms':>10}{'slow':>6}"
        lines = [head, "-" * len(head)]
        for name, t in zip(names, self.tasklets, strict=True):
            lines.append(
                f"{name:<{width}}{t.worker:>7}{t.state:>14}{t.received_count:>11}"
                f"{t.emitted_count:>11}{t.received_batches:>9}{t.busy_ms:>10.1f}{t.slow_calls:>6}"
            )
        for w in self.workers:
            lines.append(
                f"worker {w.kind} {w.index}: {w.iteration_count} iterations, {w.idle_count} idle, "
                f"cpu {w.cpu_time_s * 1000:.1f} ms"
            )
        return "\n".join(lines)
