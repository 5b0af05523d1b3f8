"""Metrics: the frozen records of a job's counters (Jet's metric names in snake_case).

Counters are plain ints written only by the thread running a tasklet, once per batch or call;
readers take a snapshot without locks (a value may be one batch stale, never torn). Each
record is made by what it describes (`ProcessorTasklet.statistics`, a worker's
``statistics()``, `Job.metrics`); `jetbench.core.sampler` turns them into series.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: A tasklet's ``snapshot_state`` while the snapshot it names is in phase 1 (its barrier travels)
BARRIER_STATES = ("awaiting barrier", "aligning", "saving", "emitting barrier")


@dataclass(frozen=True)
class InboundBarrier:
    """Where the barrier of snapshot ``snapshot_id`` is on one inbound ordinal of one instance,
    counted in queues (one per upstream instance): ``in_queue`` emitted upstream, not yet taken
    here; ``held`` taken here, waiting for the other inputs (exactly-once: the queue is not
    drained meanwhile); ``passed`` taken and forwarded with this instance's state saved."""

    ordinal: int
    snapshot_id: int
    in_queue: int
    held: int
    passed: int


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
    #: a job with a processing guarantee: where this instance is in snapshot ``snapshot_id``
    #: ("awaiting barrier", "aligning", "saving", "emitting barrier", "saved", "phase 2", "final
    #: save", "restoring"; "" with nothing in flight or without a guarantee) and, per inbound
    #: ordinal, its barrier
    snapshot_state: str = ""
    snapshot_id: int = 0
    inbound_barriers: tuple[InboundBarrier, ...] = ()


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
    #: the barrier of the snapshot in flight on this edge (`JobMetrics.barrier_in_flight`; 0 and
    #: "" when none): "in queue", "held" (exactly-once; "received" at-least-once) or "passed",
    #: the most telling of its queues, and how many of them are in each case (`InboundBarrier`)
    barrier_id: int = 0
    barrier: str = ""
    barrier_in_queue: int = 0
    barrier_held: int = 0
    barrier_passed: int = 0


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

    def barrier_in_flight(self) -> int:
        """The snapshot whose barriers travel now (0: none), the newest one some instance has
        not yet saved: its tasklets' ``snapshot_state`` is one of `BARRIER_STATES`."""
        return max((t.snapshot_id for t in self.tasklets if t.snapshot_state in BARRIER_STATES), default=0)

    def by_edge(self) -> tuple[QueueStatistics, ...]:
        """Queue size and capacity per DAG edge (in the DAG's order), summed over the instances,
        with where the barrier of the snapshot in flight is on it (`QueueStatistics`).

        Inbound ordinals missing from ``edges`` (a snapshot built by hand) come last, with
        an empty ``source``.
        """
        sums: dict[tuple[str, int], list[int]] = {}
        for t in self.tasklets:
            for ordinal, size, capacity in t.inbound_queues:
                acc = sums.setdefault((t.vertex, ordinal), [0, 0])
                acc[0] += size
                acc[1] += capacity
        barriers = self._barriers_by_edge()
        keys = [(src, dst, ordinal) for src, dst, ordinal in self.edges]
        known = {(dst, ordinal) for _, dst, ordinal in keys}
        keys += [("", dst, ordinal) for dst, ordinal in sums if (dst, ordinal) not in known]
        out: list[QueueStatistics] = []
        for src, dst, ordinal in keys:
            size, capacity = sums.get((dst, ordinal), (0, 0))
            out.append(QueueStatistics(edge_label(src, dst, ordinal) if src else f"→ {dst} #{ordinal}",
                                       src, dst, ordinal, size, capacity, size / capacity if capacity else 0.0,
                                       *barriers.get((dst, ordinal), (0, "", 0, 0, 0))))
        return tuple(out)

    def _barriers_by_edge(self) -> dict[tuple[str, int], tuple[int, str, int, int, int]]:
        """``(destination, ordinal) -> (id, word, in queue, held, passed)`` for the snapshot in flight."""
        n = self.barrier_in_flight()
        if n == 0:
            return {}
        counts: dict[tuple[str, int], list[int]] = {}
        for t in self.tasklets:
            for b in t.inbound_barriers:
                if b.snapshot_id == n:
                    acc = counts.setdefault((t.vertex, b.ordinal), [0, 0, 0])
                    acc[0] += b.in_queue
                    acc[1] += b.held
                    acc[2] += b.passed
        held = "received" if self.snapshots is not None and self.snapshots.guarantee == "at_least_once" else "held"
        out: dict[tuple[str, int], tuple[int, str, int, int, int]] = {}
        for key, (in_queue, n_held, passed) in counts.items():
            word = held if n_held else "in queue" if in_queue else "passed" if passed else ""
            if word:
                out[key] = (n, word, in_queue, n_held, passed)
        return out

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
