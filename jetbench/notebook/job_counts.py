"""What a job's progress counts: items out of its sources and into its sinks, and the one-line
summary of it (the progress line of `jetbench.notebook.progress`, its notebook widget
`jetbench.notebook.progress_widget`, and the dashboard's header all use these).

>>> from jetbench import Pipeline, sources, sinks, run
>>> p = Pipeline()
>>> _ = p.read_from(sources.items([1, 2, 3])).write_to(sinks.collect())
>>> counts = JobCounts.of(run_job(p))
>>> counts.sources_out, counts.sinks_in
(3, 3)
>>> summary(counts)  # doctest: +ELLIPSIS
"jetbench · job '...' completed in ... s · sources emitted 3 · sinks received 3 · ... items/s out of the sources on average"

The rate is the sources' (a job whose sinks receive few items, an aggregation's results, is as
fast as what it reads). A job that restarted from a snapshot counts from there (its new
tasklets start at the snapshot's offsets), and the line says so, so that fewer items than the
input do not read as items lost:

>>> from dataclasses import replace
>>> restart_note(replace(counts, restarts=1, restored_from=3))
'counted since restart 1 from snapshot #3 (the items before it are in the snapshot)'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .source_partitions import total_lag


def job_ends(job: Any, metrics: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The job's source vertices (no edge enters them) and sink vertices (no edge leaves them),
    in the order of ``metrics``' tasklets."""
    vertices = list(dict.fromkeys(t.vertex for t in metrics.tasklets))
    entered = {dst for _src, dst, _ordinal in job.edges}
    left = {src for src, _dst, _ordinal in job.edges}
    return tuple(v for v in vertices if v not in entered), tuple(v for v in vertices if v not in left)


@dataclass(frozen=True)
class JobCounts:
    """A job's progress at one moment: items out of its sources and into its sinks."""

    job: str
    status: str
    elapsed_s: float
    sources_out: int
    sinks_in: int
    sources: tuple[str, ...]
    sinks: tuple[str, ...]
    error: str | None = None
    error_vertex: str | None = None
    #: restarts after failures, and the snapshot the counted execution started from (0: none)
    restarts: int = 0
    restored_from: int = 0
    #: records the partitioned sources (Kafka) have yet to read; None: no such source
    lag: int | None = None

    @classmethod
    def of(cls, job: Any) -> JobCounts:
        """Counted from ``job.metrics()``: sources are the vertices no edge enters, sinks those
        no edge leaves."""
        m = job.metrics()
        sources, sinks = job_ends(job, m)
        error = vertex = None
        failure = job.failure if m.status not in ("running", "suspended") else None
        if failure is not None:
            error = str(failure).splitlines()[0] if str(failure) else type(failure).__name__
            vertex = getattr(failure, "vertex", None)
        snapshots = m.snapshots
        return cls(
            m.job, m.status, m.elapsed_s,
            sum(t.emitted_count for t in m.tasklets if t.vertex in sources),
            sum(t.received_count for t in m.tasklets if t.vertex in sinks),
            sources, sinks, error, vertex,
            snapshots.restarts if snapshots else 0, snapshots.restored_from if snapshots else 0,
            total_lag(m),
        )

    @property
    def average_rate(self) -> float:
        """Items out of the sources per second, over the whole run so far."""
        return self.sources_out / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def done(self) -> bool:
        """Whether the job has ended: a suspended job has not (``join`` waits on through a
        suspension until it is resumed and ends, or is cancelled)."""
        return self.status not in ("running", "suspended")


def thousands(x: float) -> str:
    """``x`` rounded, with thousands separators: ``thousands(1234.5)`` is ``'1,234'``."""
    return f"{x:,.0f}"


def rate_text(c: JobCounts, rate: float | None = None) -> str:
    """Items/s out of the sources: ``rate`` (the live one) while the job runs, else the whole
    run's average."""
    if c.done or rate is None:
        return f"{thousands(c.average_rate)} items/s out of the sources" + (" on average" if c.done else "")
    return f"{thousands(rate)} items/s out of the sources"


def restart_note(c: JobCounts) -> str:
    """Why the counts can be below the input: they start at the snapshot the job restarted (or
    started) from; empty for a job that ran from its start."""
    if c.restarts:
        since = f"restart {c.restarts} from snapshot #{c.restored_from}" if c.restored_from \
            else f"restart {c.restarts} (from the start: no snapshot yet)"
    elif c.restored_from:
        since = f"the start from snapshot #{c.restored_from}"
    else:
        return ""
    tail = " (the items before it are in the snapshot)" if c.restored_from else ""
    return f"counted since {since}{tail}"


def summary(c: JobCounts, rate: float | None = None) -> str:
    """One line: the job, its status and time, what its sources emitted and its sinks received
    (since a restart, if any: `restart_note`), items/s out of the sources (``rate``, else the
    whole run's average) and, for a job reading partitions (Kafka), the records its sources
    have yet to read (``lag``, `jetbench.notebook.source_partitions`)."""
    if c.done:
        verb = {"completed": "completed in", "failed": "failed after", "cancelled": "cancelled after"}.get(
            c.status, f"{c.status} after")
        head = f"jetbench · job {c.job!r} {verb} {c.elapsed_s:.1f} s"
        if c.error_vertex:
            head += f" in vertex {c.error_vertex!r}"
    elif c.status == "suspended":
        head = f"jetbench · job {c.job!r} suspended at {c.elapsed_s:.1f} s (waiting for resume)"
    else:
        head = f"jetbench · job {c.job!r} running {c.elapsed_s:.1f} s"
    note = restart_note(c)
    counted = f"sources emitted {thousands(c.sources_out)} · sinks received {thousands(c.sinks_in)}"
    lag = "" if c.lag is None else f" · lag {thousands(c.lag)} records"
    return f"{head} · {counted}{' ' + note if note else ''} · {rate_text(c, rate)}{lag}"


def run_job(p: Any) -> Any:
    """Submit ``p`` (a Pipeline or DAG) to a new one-thread service and return the ended job
    (for this module's examples)."""
    from ..core.execution import ExecutionService

    dag = p.to_dag() if hasattr(p, "to_dag") else p
    job = ExecutionService(cooperative_threads=1).submit(dag)
    job.join(progress=False)
    return job
