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
"jetbench · job '...' completed in ... s · sources emitted 3 · sinks received 3 · ... items/s on average"
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
        return cls(
            m.job, m.status, m.elapsed_s,
            sum(t.emitted_count for t in m.tasklets if t.vertex in sources),
            sum(t.received_count for t in m.tasklets if t.vertex in sinks),
            sources, sinks, error, vertex,
        )

    @property
    def done(self) -> bool:
        """Whether the job has ended: a suspended job has not (``join`` waits on through a
        suspension until it is resumed and ends, or is cancelled)."""
        return self.status not in ("running", "suspended")


def thousands(x: float) -> str:
    """``x`` rounded, with thousands separators: ``thousands(1234.5)`` is ``'1,234'``."""
    return f"{x:,.0f}"


def summary(c: JobCounts, rate: float | None = None) -> str:
    """One line: the job, its status and time, what its sources emitted and its sinks received,
    and items/s (``rate``, else the whole run's average into the sinks, or out of the sources
    when it has no sink input)."""
    moved = c.sinks_in or c.sources_out
    avg = moved / c.elapsed_s if c.elapsed_s > 0 else 0.0
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
    speed = f"{thousands(avg)} items/s on average" if c.done else f"{thousands(avg if rate is None else rate)} items/s"
    return f"{head} · sources emitted {thousands(c.sources_out)} · sinks received {thousands(c.sinks_in)} · {speed}"


def run_job(p: Any) -> Any:
    """Submit ``p`` (a Pipeline or DAG) to a new one-thread service and return the ended job
    (for this module's examples)."""
    from ..core.execution import ExecutionService

    dag = p.to_dag() if hasattr(p, "to_dag") else p
    job = ExecutionService(cooperative_threads=1).submit(dag)
    job.join(progress=False)
    return job
