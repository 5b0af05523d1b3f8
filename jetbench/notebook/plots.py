"""matplotlib figures of a job's recorded metrics, for when no live front end exists.

``plot_metrics(job)`` (``job.plot_metrics()``) draws four panels over time: CPU % (the process
and each worker), items/s per vertex, queue fill per edge (``"source → dest #ordinal"``), worker
iterations/s. The series
come from, in order: ``job.sampler`` (``ExecutionService(metrics_interval_s=...)``), else the
history of a `Dashboard` attached to the job, else a single snapshot (then the figure says so).
Nothing here imports a widget library; the figure is a plain ``matplotlib.figure.Figure``
(no pyplot state), which Jupyter displays inline.
"""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass, field
from typing import Any

#: Dashboards (weak references) by job, so that ``job.plot_metrics()`` can use a dashboard's recorded history.
_DASHBOARDS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

#: At most this many vertices get their own line; the rest are left out (named in the legend title).
MAX_LINES = 10


@dataclass
class Series:
    """Time series of one job, whatever they were recorded by."""

    t: list[float] = field(default_factory=list)
    process_cpu: list[float] | None = None
    process_label: str = "process"
    worker_cpu: dict[str, list[float]] = field(default_factory=dict)
    worker_iter_rate: dict[str, list[float]] = field(default_factory=dict)
    rate: dict[str, list[float]] = field(default_factory=dict)
    fill: dict[str, list[float]] = field(default_factory=dict)  # per edge label
    source: str = ""


def register_dashboard(job: Any, dashboard: Any) -> None:
    """Remember ``dashboard`` as ``job``'s (weakly both ways: neither keeps the other alive here)."""
    with contextlib.suppress(TypeError):  # not weak-referenceable (a test double): nothing to remember
        _DASHBOARDS[job] = weakref.ref(dashboard)


def _label(kind: str, index: int) -> str:
    return f"w{index}" if kind == "cooperative" else f"b{index}"


def series_from_records(records: list[dict[str, Any]]) -> Series:
    """Rates and percentages from a `MetricsSampler`'s cumulative records (deltas between samples)."""
    times = sorted({r["t"] for r in records})
    index = {t: i for i, t in enumerate(times)}
    n = len(times)
    counts: dict[str, list[float]] = {}
    fill: dict[str, list[float]] = {}
    wcpu: dict[str, list[float]] = {}
    witer: dict[str, list[float]] = {}
    pcpu: list[float] | None = None
    for r in records:
        i = index[r["t"]]
        if r.get("kind") == "tasklet":
            counts.setdefault(r["vertex"], [0.0] * n)[i] += max(r["received_count"], r["emitted_count"])
        elif r.get("kind") == "queue" and r["capacity"] > 0:  # one per edge, summed over instances
            fill.setdefault(r["edge"], [0.0] * n)[i] = r["fill"]
        elif r.get("kind") == "worker":
            name = _label(r.get("worker_kind", "cooperative"), r["index"])
            wcpu.setdefault(name, [0.0] * n)[i] = r["cpu_time_s"]
            witer.setdefault(name, [0.0] * n)[i] = r["iteration_count"]
        elif r.get("kind") == "process":  # recorded by samplers that also read the process CPU
            if pcpu is None:
                pcpu = [0.0] * n
            pcpu[i] = r["cpu_s"]

    def rates(cum: list[float], scale: float = 1.0) -> list[float]:
        out, prev_t, prev = [], 0.0, 0.0
        for t, c in zip(times, cum, strict=True):
            dt = t - prev_t
            out.append(max(c - prev, 0.0) / dt * scale if dt > 0 else 0.0)
            prev_t, prev = t, c
        return out

    s = Series(t=times, source="job.sampler records")
    s.worker_cpu = {k: rates(v, 100.0) for k, v in wcpu.items()}
    s.worker_iter_rate = {k: rates(v) for k, v in witer.items()}
    s.rate = {k: rates(v) for k, v in counts.items()}
    s.fill = fill
    if pcpu is not None:
        s.process_cpu = rates(pcpu, 100.0)
    elif s.worker_cpu:
        s.process_cpu = [sum(vals) for vals in zip(*s.worker_cpu.values(), strict=True)]
        s.process_label = "job workers (sum)"
    return s


def series_from_history(history: list[dict[str, Any]]) -> Series:
    """Series from a `Dashboard`'s per-tick history (already rates and percentages)."""

    def column(key: str) -> dict[str, list[float]]:
        names: list[str] = []
        for h in history:
            names.extend(k for k in h[key] if k not in names)
        return {k: [h[key].get(k, 0.0) for h in history] for k in names}

    return Series(
        t=[h["t"] for h in history],
        process_cpu=[h["process_cpu"] for h in history],
        worker_cpu=column("workers"),
        worker_iter_rate=column("worker_iter_rate"),
        rate=column("rate"),
        fill=column("fill"),
        source="dashboard history",
    )


def job_series(job: Any) -> Series | None:
    """The best recorded series of ``job``, or None if nothing was recorded."""
    sampler = getattr(job, "sampler", None)
    if sampler is not None and sampler.records:
        return series_from_records(sampler.records)
    ref = _DASHBOARDS.get(job) if _is_weakrefable(job) else None
    dashboard = ref() if ref is not None else None
    if dashboard is not None and dashboard.history:
        return series_from_history(dashboard.history)
    return None


def _is_weakrefable(obj: Any) -> bool:
    try:
        weakref.ref(obj)
    except TypeError:
        return False
    return True


def _top(lines: dict[str, list[float]]) -> tuple[dict[str, list[float]], int]:
    if len(lines) <= MAX_LINES:
        return lines, 0
    ranked = sorted(lines, key=lambda k: -sum(lines[k]))[:MAX_LINES]
    return {k: lines[k] for k in lines if k in ranked}, len(lines) - MAX_LINES


def plot_metrics(job: Any, figsize: tuple[float, float] = (11, 7), series: Series | None = None) -> Any:
    """A matplotlib ``Figure`` of ``job``'s recorded metrics (see the module docstring).

    ``job`` may also be a `Dashboard` (its history is used) or a `MetricsSampler`.
    """
    from ..figures import figure_class

    Figure = figure_class()
    if series is None:
        if hasattr(job, "history") and hasattr(job, "job"):  # a Dashboard
            series, job = series_from_history(job.history), job.job
        elif hasattr(job, "records") and hasattr(job, "job"):  # a MetricsSampler
            series, job = series_from_records(job.records), job.job
        else:
            series = job_series(job)
    fig = Figure(figsize=figsize, layout="constrained")
    name = getattr(job, "name", "job")
    status = getattr(getattr(job, "status", None), "value", "")
    if series is None or not series.t:
        return _snapshot_figure(fig, job, f"{name} ({status})")
    fig.suptitle(f"jetbench job {name!r} ({status}) — from {series.source}")
    ax_cpu, ax_rate, ax_fill, ax_iter = fig.subplots(2, 2).flat
    t = series.t

    if series.process_cpu is not None:
        ax_cpu.plot(t, series.process_cpu, "o-", ms=3, lw=2, color="black", label=series.process_label)
    for k, vals in _top(series.worker_cpu)[0].items():
        ax_cpu.plot(t, vals, ".-", ms=4, lw=1, label=k)
    ax_cpu.set(title="CPU % of one core", xlabel="s", ylabel="%")
    ax_cpu.set_ylim(bottom=0)

    def lines(ax: Any, data: dict[str, list[float]], title: str, ylabel: str) -> None:
        shown, hidden = _top(data)
        for k, vals in shown.items():
            ax.plot(t, vals, ".-", ms=3, lw=1, label=k)
        ax.set(title=title + (f" (top {MAX_LINES}, {hidden} more)" if hidden else ""), xlabel="s", ylabel=ylabel)
        ax.set_ylim(bottom=0)

    lines(ax_rate, series.rate, "items/s per vertex", "items/s")
    lines(ax_fill, series.fill, "queue fill per edge", "fill ratio")
    ax_fill.set_ylim(0, 1.05)
    lines(ax_iter, series.worker_iter_rate, "worker iterations/s", "iterations/s")
    for ax in (ax_cpu, ax_rate, ax_fill, ax_iter):
        if ax.get_legend_handles_labels()[0]:
            # beside the panel, not over its lines (the constrained layout makes room)
            ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
        ax.grid(alpha=0.3)
    return fig


def _snapshot_figure(fig: Any, job: Any, title: str) -> Any:
    """No series recorded: bars of one snapshot (items per vertex, CPU s per worker)."""
    m = job.metrics()
    fig.suptitle(f"jetbench job {title} — one snapshot (nothing recorded: use "
                 "ExecutionService(metrics_interval_s=...) or a dashboard)", fontsize="medium")
    ax_items, ax_cpu = fig.subplots(1, 2)
    totals = m.by_vertex()
    names = list(totals)
    ax_items.barh(names, [max(v["received_count"], v["emitted_count"]) for v in totals.values()])
    ax_items.invert_yaxis()
    ax_items.set(title="items per vertex", xlabel="items")
    ax_cpu.bar([_label(w.kind, w.index) for w in m.workers], [w.cpu_time_s for w in m.workers])
    ax_cpu.set(title="CPU seconds per worker", ylabel="s")
    return fig
