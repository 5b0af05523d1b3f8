"""What the live dashboard shows, computed from successive metric snapshots (no widget code here).

`DashboardModel.update()` takes one `JobMetrics` snapshot plus the process CPU time and
returns the dashboard's whole state as one JSON-ready dict whose size is bounded whatever the
number of tasklets: above ``max_rows`` tasklets the table has one row per vertex (and above
``max_rows`` vertices the tail is folded into one row), the queue view has one sparkline per DAG
edge (at most ``max_rows``, the rest counted in ``queues_hidden``), queue and CPU histories have
a fixed number of points, and worker series are capped. Rates come from deltas between snapshots.
For a job with a processing guarantee, while a snapshot is in flight (``barrier_in_flight``) each
queue row says where its barrier is (`barrier_state`: in the queue, held for alignment, passed)
and each tasklet row where the instance is in that snapshot (``snap``: "aligning", "saving", ...).
A job reading partitions (Kafka) has a row per partition in ``partitions`` (offset read, high
watermark, lag, event-time watermark, records/s; `jetbench.notebook.source_partitions`) and the
total lag in ``totals``.

>>> from jetbench import ExecutionService
>>> from jetbench.wordcount import wordcount_dag
>>> job = ExecutionService().submit(wordcount_dag(["a b", "b"]))
>>> _ = job.join()
>>> state = DashboardModel(job).update(final=True)
>>> state["status"], state["final"], [r["vertex"] for r in state["rows"]][:2]
('completed', True, ['source', 'tokenize'])
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .job_counts import job_ends
from .source_partitions import partition_rows, total_lag

if TYPE_CHECKING:
    from ..core import Job, JobMetrics
    from ..core.metrics import QueueStatistics, SnapshotStatistics

#: What each tasklet state reads as in the table (`jetbench.core.tasklet.TaskletState`).
STATE_WORDS = {
    "INIT": "starting", "PROCESS": "processing", "COMPLETE_EDGE": "input ended", "COMPLETE": "completing",
    "EMIT_DONE": "finishing", "CLOSE": "closing", "END": "done", "RESTORE_SNAPSHOT": "restoring",
    "FINISH_RESTORE": "restoring", "SAVE_SNAPSHOT": "snapshot", "SNAPSHOT_COMMIT_PREPARE": "snapshot",
    "EMIT_BARRIER": "snapshot", "WAIT_FOR_SNAPSHOT_COMPLETED": "snapshot", "SNAPSHOT_COMMIT_FINISH": "snapshot",
}


def state_word(state: str, source: bool) -> str:
    """The word the dashboard shows for a tasklet ``state``: a source's ``COMPLETE`` is where it
    emits its items, so it reads "emitting".

    >>> state_word("COMPLETE", source=True), state_word("COMPLETE", source=False), state_word("END", False)
    ('emitting', 'completing', 'done')
    """
    if state == "COMPLETE" and source:
        return "emitting"
    return STATE_WORDS.get(state, state.lower())


#: Points kept in each queue-fill sparkline (a sliding window of the latest ticks).
QUEUE_HISTORY = 60
#: Points kept in the CPU plot; older points are merged pairwise so the plot spans the whole job.
CPU_HISTORY = 120
#: Worker CPU series drawn individually; further workers are summed into one "other" series.
MAX_WORKER_SERIES = 8


def worker_label(index: int) -> str:
    """``w0, w1, ...`` for cooperative workers, ``b0, b1, ...`` for dedicated (blocking) threads."""
    return f"w{index}" if index >= 0 else f"b{-1 - index}"


def no_timeline_note(elapsed_s: float, made_after_end: bool) -> str:
    """Why a finished job's dashboard has no CPU timeline, and how to get one.

    >>> no_timeline_note(0.004, True).split(". ")[0]
    'No CPU timeline: the job ran 4 ms and had ended before this dashboard was made'
    >>> no_timeline_note(1.5, False).split(". ")[0]
    'No CPU timeline: the job ran 1.50 s and ended before a second sample'
    """
    when = "had ended before this dashboard was made" if made_after_end else "ended before a second sample"
    ran = f"{elapsed_s * 1000:.0f} ms" if elapsed_s < 1 else f"{elapsed_s:.2f} s"
    return (f"No CPU timeline: the job ran {ran} and {when}. Make the dashboard while the job runs "
            "(job = service.submit(dag); job.dashboard()), or record any job's metrics with "
            "ExecutionService(metrics_interval_s=0.1) and draw them with job.plot_metrics().")


def process_cpu_seconds() -> float:
    """User + system CPU seconds of this whole process (all threads).

    ``CLOCK_PROCESS_CPUTIME_ID`` (``time.process_time``) has nanosecond resolution; psutil's
    ``Process().cpu_times()`` reads the same counters from /proc in 10 ms clock ticks, which
    at 10 Hz would quantise the plot to steps of 10 % of a core.
    """
    return time.process_time()


def system_cpu_percent() -> float | None:
    """The whole machine's CPU % since the previous call (psutil), for context on a noisy box."""
    try:
        import psutil

        return psutil.cpu_percent(interval=None)
    except Exception:  # pragma: no cover - psutil is a dependency
        return None


def _known_strategies() -> list[str]:
    try:
        from ..core.idle import IDLE_STRATEGIES
    except ImportError:  # an engine without named strategies
        return ["backoff"]
    return sorted(IDLE_STRATEGIES)


def _counted(words: dict[str, int]) -> str:
    """``{"saving": 2, "saved": 1}`` as ``"saving×2 saved"``."""
    return " ".join(f"{w}×{c}" if c > 1 else w for w, c in words.items())


def _r(x: float, nd: int = 1) -> float:
    return round(float(x), nd)


def snapshot_state(s: SnapshotStatistics | None) -> dict[str, Any] | None:
    """The fault-tolerance figures the dashboard shows (None for a job without a guarantee):
    the last stored snapshot's id, age, duration and size, the snapshots taken and failed,
    the restarts and the snapshot the current execution was restored from."""
    if s is None:
        return None
    return {
        "guarantee": s.guarantee,
        "taken": s.snapshots_taken,
        "failed": s.snapshots_failed,
        "last_id": s.last_snapshot_id,
        "last_age_s": None if s.last_age_s is None else _r(s.last_age_s, 2),
        "last_duration_ms": _r(s.last_duration_ms, 1),
        "last_size_bytes": s.last_size_bytes,
        "restarts": s.restarts,
        "restored_from": s.restored_from,
    }


def barrier_state(q: QueueStatistics) -> dict[str, Any] | None:
    """Where the barrier of the snapshot in flight is on one edge (None: not on it, or none in
    flight): "in queue", "held" (exactly-once alignment; "received" at-least-once) or "passed",
    with how many of the edge's queues are in each case."""
    if not q.barrier:
        return None
    return {"id": q.barrier_id, "state": q.barrier, "in_queue": q.barrier_in_queue, "held": q.barrier_held,
            "passed": q.barrier_passed}


class Timeline:
    """A bounded time series of several named values, compacted by merging neighbours.

    At most ``2 * size`` points are kept: when full, pairs are averaged and later ticks are
    averaged ``stride`` at a time, so the series spans the whole run with bounded length.
    """

    def __init__(self, names: list[str], size: int = CPU_HISTORY):
        self.names = names
        self.size = size
        self.stride = 1
        self.t: list[float] = []
        self.values: dict[str, list[float]] = {n: [] for n in names}
        self._acc: list[tuple[float, dict[str, float]]] = []

    def add(self, t: float, values: dict[str, float]) -> None:
        self._acc.append((t, values))
        if len(self._acc) < self.stride:
            return
        acc, self._acc = self._acc, []
        self.t.append(round(acc[-1][0], 2))
        for n in self.names:
            self.values[n].append(round(sum(v.get(n, 0.0) for _, v in acc) / len(acc), 1))
        if len(self.t) >= 2 * self.size:
            self.t = self.t[1::2]
            for n in self.names:
                vs = self.values[n]
                self.values[n] = [round((vs[i] + vs[i + 1]) / 2, 1) for i in range(0, len(vs) - 1, 2)]
            self.stride *= 2

    def as_state(self) -> dict[str, Any]:
        return {"t": list(self.t), "series": [{"name": n, "values": list(self.values[n])} for n in self.names]}


class DashboardModel:
    """Turns snapshots of one job into the dashboard state; keeps the short histories.

    ``history`` (one dict per tick, for `jetbench.notebook.plots.plot_metrics`) keeps the process
    and worker CPU %, items/s per vertex and queue fill per edge of every tick, up to ``max_history``
    ticks (then every other tick is dropped).
    """

    def __init__(
        self,
        job: Job,
        max_rows: int = 40,
        cpu_seconds: Callable[[], float] = process_cpu_seconds,
        max_history: int = 20_000,
        clock: Callable[[], float] = time.monotonic,
    ):
        if max_rows < 2:
            raise ValueError(f"max_rows must be >= 2, got {max_rows!r}")
        self.job = job
        self.max_rows = max_rows
        self._cpu_seconds = cpu_seconds
        self.seq = 0
        # previous tick: elapsed, process CPU s, per-tasklet and per-worker counters
        self._prev_t = 0.0
        self._prev_cpu = cpu_seconds()
        self._clock = clock
        self._prev_wall = clock()
        self._prev_tasklets: dict[tuple[str, int], tuple[int, int, float]] = {}
        self._prev_workers: dict[str, tuple[float, int, int]] = {}
        self._queue_hist: dict[str, deque[float]] = {}
        self._prev_offsets: dict[tuple[str, int, str], int] = {}
        self._cpu: Timeline | None = None
        self.history: list[dict[str, Any]] = []
        self.max_history = max_history
        self.last_metrics: JobMetrics | None = None
        system_cpu_percent()  # psutil measures from its previous call: start the clock

    # ----------------------------------------------------------------------------------------

    def update(self, final: bool = False, metrics: JobMetrics | None = None) -> dict[str, Any]:
        """Take a snapshot (or use ``metrics``) and return the whole state for this tick."""
        m = metrics if metrics is not None else self.job.metrics()
        self.last_metrics = m
        sources, sinks = job_ends(self.job, m)
        self.seq += 1
        wall = self._clock()
        cpu = self._cpu_seconds()
        dt = max(m.elapsed_s - self._prev_t, 1e-9)
        dwall = max(wall - self._prev_wall, 1e-9)
        process_cpu = max(cpu - self._prev_cpu, 0.0) / dwall * 100.0
        self._prev_cpu, self._prev_wall = cpu, wall

        # -- tasklets: per-interval deltas (or whole-run averages once final) ----------------
        tasklet_rows: list[dict[str, Any]] = []
        suspended = m.status == "suspended"
        for t in m.tasklets:
            key = (t.vertex, t.index)
            prev_in, prev_out, prev_busy = self._prev_tasklets.get(key, (0, 0, 0.0))
            irate = max(t.received_count - prev_in, t.emitted_count - prev_out) / dt
            if final:
                span, d_in, d_out, d_busy = max(m.elapsed_s, 1e-9), t.received_count, t.emitted_count, t.busy_ms
            else:
                span = dt
                d_in, d_out, d_busy = t.received_count - prev_in, t.emitted_count - prev_out, t.busy_ms - prev_busy
            self._prev_tasklets[key] = (t.received_count, t.emitted_count, t.busy_ms)
            tasklet_rows.append(
                {
                    "vertex": t.vertex,
                    "instance": t.index,
                    "worker": worker_label(t.worker),
                    # a suspended job's tasklets ended with its execution: they wait for resume
                    "state": "suspended" if suspended else state_word(t.state, t.vertex in sources),
                    "in": t.received_count,
                    "out": t.emitted_count,
                    "rate": max(d_in, d_out) / span,
                    "irate": irate,
                    "busy": min(d_busy / (span * 1000.0) * 100.0, 100.0),
                    "slow": t.slow_calls,
                    "bp": bool(t.backpressure),
                    "qsize": t.queues_size,
                    "qcap": t.queues_capacity,
                    # where it is in the snapshot in flight ("aligning", "saving", ... "" none)
                    "snap": "" if suspended else t.snapshot_state,
                    "snap_id": t.snapshot_id,
                }
            )

        # -- workers ---------------------------------------------------------------------------
        workers: list[dict[str, Any]] = []
        interval_cpu: dict[str, float] = {}
        # the tasklets each worker runs or ran (by the worker each tasklet names): a worker lets go
        # of a tasklet once it is done, so its own count reads 0 after the job
        ran_on = Counter(r["worker"] for r in tasklet_rows)
        for w in m.workers:
            name = worker_label(w.index if w.kind == "cooperative" else -1 - w.index)
            prev_cpu_s, prev_it, prev_idle = self._prev_workers.get(name, (0.0, 0, 0))
            interval_cpu[name] = max(w.cpu_time_s - prev_cpu_s, 0.0) / dt * 100.0
            span = max(m.elapsed_s, 1e-9) if final else dt
            if final:
                d_cpu, d_it, d_idle = w.cpu_time_s, w.iteration_count, w.idle_count
            else:
                d_cpu, d_it, d_idle = w.cpu_time_s - prev_cpu_s, w.iteration_count - prev_it, w.idle_count - prev_idle
            self._prev_workers[name] = (w.cpu_time_s, w.iteration_count, w.idle_count)
            workers.append(
                {
                    "name": name,
                    "kind": w.kind,
                    "tasklets": ran_on[name],
                    "cpu": max(d_cpu, 0.0) / span * 100.0,
                    "iter_rate": d_it / span,
                    "idle_rate": d_idle / span,
                    "iterations": w.iteration_count,
                    "alive": w.alive,
                }
            )
        self._prev_t = m.elapsed_s

        # -- vertices: rates; edges: queue fill ------------------------------------------------
        vertices: dict[str, dict[str, Any]] = {}
        for r in tasklet_rows:
            v = vertices.setdefault(r["vertex"], {"rate": 0.0})
            v["rate"] += r["irate"]
        queues = []
        in_flight = m.barrier_in_flight()
        for q in m.by_edge():
            if q.capacity <= 0:
                continue
            hist = self._queue_hist.setdefault(q.edge, deque(maxlen=QUEUE_HISTORY))
            hist.append(round(q.fill, 3))
            queues.append(
                {"edge": q.edge, "source": q.source, "destination": q.destination, "ordinal": q.ordinal,
                 "fill": round(q.fill, 3), "size": q.size, "capacity": q.capacity, "hist": list(hist),
                 "barrier": barrier_state(q)}
            )

        # -- CPU timeline -----------------------------------------------------------------------
        if self._cpu is None:
            names = [w["name"] for w in workers]
            shown = names[:MAX_WORKER_SERIES]
            if len(names) > MAX_WORKER_SERIES:
                shown.append("other")
            self._cpu = Timeline(["process", *shown])
        cpu_point = {"process": process_cpu}
        for i, row in enumerate(workers):
            series = row["name"] if i < MAX_WORKER_SERIES else "other"
            cpu_point[series] = cpu_point.get(series, 0.0) + interval_cpu[row["name"]]
        # a tick right after the previous one (the first, or a final one) is too short to measure
        if dwall >= 0.02 and dt >= 0.02:
            self._cpu.add(m.elapsed_s, cpu_point)
            self._record(m.elapsed_s, process_cpu, interval_cpu, workers, vertices, queues)

        rows, aggregated = self._rows(tasklet_rows)
        partitions = self._partitions(m, dt, final)
        state: dict[str, Any] = {
            "seq": self.seq,
            "job": m.job,
            "status": m.status,
            "final": bool(final),
            "elapsed_s": _r(m.elapsed_s, 2),
            "error": self._error() if final else None,
            "tasklet_count": len(tasklet_rows),
            "vertex_count": len(vertices),
            "aggregated": aggregated,
            "rows": rows,
            "queues": queues[: self.max_rows],
            "queues_hidden": max(len(queues) - self.max_rows, 0),
            "partitions": partitions[: self.max_rows],
            "partitions_hidden": max(len(partitions) - self.max_rows, 0),
            "workers": self._workers(workers),
            "cpu": self._cpu.as_state(),
            "cpu_note": no_timeline_note(m.elapsed_s, self.seq == 1) if final and len(self._cpu.t) < 2 else None,
            "process_cpu": _r(process_cpu),
            "system_cpu": system_cpu_percent() if dwall >= 0.02 else None,
            "totals": {
                "sources_out": sum(r["out"] for r in tasklet_rows if r["vertex"] in sources),
                "sinks_in": sum(r["in"] for r in tasklet_rows if r["vertex"] in sinks),
                "lag": total_lag(m),
            },
            "idle": self._idle(),
            "snapshots": snapshot_state(m.snapshots),
            "barrier_in_flight": 0 if final else in_flight,
            "lifecycle": self._lifecycle(m, final),
        }
        return state

    # ----------------------------------------------------------------------------------------

    def _partitions(self, m: JobMetrics, dt: float, final: bool) -> list[dict[str, Any]]:
        """A row per partition a source reads (`source_partitions`): offset, high watermark,
        lag, event-time watermark and records/s over the tick (none once final)."""
        out = []
        for p in partition_rows(m):
            key = (p.vertex, p.instance, p.partition)
            prev = self._prev_offsets.get(key)
            rate = None
            if p.offset is not None:
                if prev is not None and not final:
                    rate = max(p.offset - prev, 0) / dt
                self._prev_offsets[key] = p.offset
            out.append({"vertex": p.vertex, "instance": p.instance, "partition": p.partition, "offset": p.offset,
                        "high": p.high, "lag": p.lag, "watermark": p.watermark, "rate": rate})
        return out

    def _rows(self, rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
        if len(rows) <= self.max_rows:
            return [self._finish_row(r) for r in rows], False
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            groups.setdefault(r["vertex"], []).append(r)
        names = list(groups)
        if len(names) > self.max_rows:  # fold the tail into one row
            keep, rest = names[: self.max_rows - 1], names[self.max_rows - 1 :]
            merged = [r for n in rest for r in groups[n]]
            out = [self._merge(n, groups[n]) for n in keep]
            out.append(self._merge(f"… {len(rest)} more vertices", merged))
            return out, True
        return [self._merge(n, groups[n]) for n in names], True

    @staticmethod
    def _finish_row(r: dict[str, Any]) -> dict[str, Any]:
        cap = r["qcap"]
        return {
            "vertex": r["vertex"],
            "instance": str(r["instance"]),
            "n": 1,
            "worker": r["worker"],
            "state": r["state"],
            "in": r["in"],
            "out": r["out"],
            "rate": _r(r["rate"]),
            "busy": _r(r["busy"]),
            "slow": r["slow"],
            "bp": r["bp"],
            "fill": _r(r["qsize"] / cap, 3) if cap else None,
            "snap": r["snap"],
            "snap_id": r["snap_id"],
        }

    @staticmethod
    def _merge(vertex: str, group: list[dict[str, Any]]) -> dict[str, Any]:
        states: dict[str, int] = {}
        snaps: dict[str, int] = {}
        for r in group:
            states[r["state"]] = states.get(r["state"], 0) + 1
            if r["snap"]:
                snaps[r["snap"]] = snaps.get(r["snap"], 0) + 1
        workers = sorted({r["worker"] for r in group})
        cap = sum(r["qcap"] for r in group)
        instances = sorted(r["instance"] for r in group)
        return {
            "vertex": vertex,
            "instance": f"×{len(group)}" if len(group) > 1 else str(instances[0]),
            "n": len(group),
            "worker": ",".join(workers) if len(workers) <= 4 else f"{len(workers)} workers",
            "state": _counted(states) if len(states) > 1 else next(iter(states)),
            "in": sum(r["in"] for r in group),
            "out": sum(r["out"] for r in group),
            "rate": _r(sum(r["rate"] for r in group)),
            "busy": _r(sum(r["busy"] for r in group) / len(group)),
            "slow": sum(r["slow"] for r in group),
            "bp": sum(1 for r in group if r["bp"]),
            "fill": _r(sum(r["qsize"] for r in group) / cap, 3) if cap else None,
            "snap": _counted(snaps),
            "snap_id": max(r["snap_id"] for r in group),
        }

    def _workers(self, workers: list[dict[str, Any]]) -> list[dict[str, Any]]:
        def fmt(w: dict[str, Any]) -> dict[str, Any]:
            return {**w, "cpu": _r(w["cpu"]), "iter_rate": _r(w["iter_rate"], 0), "idle_rate": _r(w["idle_rate"], 0)}

        if len(workers) <= self.max_rows:
            return [fmt(w) for w in workers]
        keep, rest = workers[: self.max_rows - 1], workers[self.max_rows - 1 :]
        folded = {
            "name": f"… {len(rest)} more",
            "kind": "mixed",
            "tasklets": sum(w["tasklets"] for w in rest),
            "cpu": sum(w["cpu"] for w in rest),
            "iter_rate": sum(w["iter_rate"] for w in rest),
            "idle_rate": sum(w["idle_rate"] for w in rest),
            "iterations": sum(w["iterations"] for w in rest),
            "alive": any(w["alive"] for w in rest),
        }
        return [fmt(w) for w in keep] + [fmt(folded)]

    def _idle(self) -> dict[str, Any]:
        service = getattr(self.job, "service", None)
        idle = getattr(service, "idle", None)
        if idle is None:
            return {"min_idle_us": None, "max_idle_us": None, "strategy": None}
        strategy = getattr(service, "idle_strategy", None)
        state = {
            "min_idle_us": idle.min_idle_us,
            "max_idle_us": idle.max_idle_us,
            "strategy": str(getattr(strategy, "name", strategy)) if strategy is not None else "backoff",
        }
        # a service that can switch strategy on running workers gets a selector in the view
        if callable(getattr(service, "set_idle_strategy", None)):
            state["strategies"] = list(getattr(service, "idle_strategies", None) or _known_strategies())
        return state

    def _lifecycle(self, m: JobMetrics, final: bool) -> dict[str, bool]:
        """Which of Suspend / Resume apply now: only a job with a processing guarantee (one
        whose handle has ``suspend``) suspends while running and resumes while suspended."""
        able = m.snapshots is not None and callable(getattr(self.job, "suspend", None)) and not final
        return {"can_suspend": able and m.status == "running", "can_resume": able and m.status == "suspended"}

    def _error(self) -> dict[str, Any] | None:
        failure = self.job.failure
        if failure is None:
            return None
        cause = failure.__cause__
        return {
            "type": type(failure).__name__,
            "message": str(failure),
            "vertex": getattr(failure, "vertex", None),
            "instance": getattr(failure, "instance", None),
            "cause": f"{type(cause).__name__}: {cause}" if cause is not None else None,
        }

    def _record(self, t: float, process_cpu: float, worker_cpu: dict[str, float], workers: list[dict[str, Any]],
                vertices: dict[str, dict[str, Any]], queues: list[dict[str, Any]]) -> None:
        self.history.append(
            {
                "t": t,
                "process_cpu": process_cpu,
                "workers": dict(worker_cpu),
                "worker_iter_rate": {w["name"]: w["iter_rate"] for w in workers},
                "rate": {name: v["rate"] for name, v in vertices.items()},
                "fill": {q["edge"]: q["fill"] for q in queues},
            }
        )
        if len(self.history) > self.max_history:
            self.history = self.history[::2]
