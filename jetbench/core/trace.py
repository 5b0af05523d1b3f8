"""Tracing: every tasklet call and every park of a job's workers, as recorded, exported, tabled.

A worker records only when asked: ``ExecutionService(trace=True)`` for every job from its start,
or ``job.trace(seconds=2)`` for a window of a running job. Each worker then appends to its own
ring (`jetbench.core.worker.Worker.trace_events`, a ``deque`` with a ``maxlen``: no lock, only
that worker's thread writes; when full the oldest event drops out and is counted). Off, the
default, a worker's round loop runs the very calls it ran before tracing existed: it picks its
traced or plain call once per round, not once per call.

What is recorded, per worker:

* each **call** of a tasklet: start and end (clock ns), whether it made progress or finished,
  the items it took in (from its queues) and put out (to its queues), and the state it moved to
  (snapshot phases among them: ``SAVE_SNAPSHOT``, ``EMIT_BARRIER``, ...);
* each **park** of the worker's idler: the strategy, the time it asked for and the time it took,
  and whether a wake (another thread handing it work) cut it short. Waits inside a call (a
  non-cooperative tasklet's blocking outbox) are part of that call's time.

**Memory.** A ring holds at most ``trace_capacity`` events (`DEFAULT_TRACE_CAPACITY`, 65,536, unless
``ExecutionService(trace_capacity=...)`` or ``job.trace(capacity=...)`` says otherwise) per
worker, about 150 bytes each (a 7-tuple, its two clock readings and the deque's slot: 147
measured on a full ring; tests/core/test_trace.py holds it under `BYTES_PER_EVENT`, 200): 65,536
events are about 10 MB per worker at most, about 6 s of a 10-tasklet worker calling 10,000 times
a second.

What comes next (issue 34): the notebook's timeline (``job.timeline()``, a lane per worker drawn
from these events, live over a sliding window) and the step mode (``job.step()`` on the mock clock,
one round per worker) read the same rings.

A `Trace` is a copy of the rings taken when it was asked for: `Trace.events` (one `TraceEvent`
per call or park, per worker in order), `Trace.export` (Chrome's trace-event JSON, which
Perfetto and ``chrome://tracing`` open), `Trace.frame` (a pandas DataFrame; pandas is imported
only then) and `Trace.dropped`.

>>> from jetbench import DAG, Edge, ExecutionService
>>> from jetbench.processors import items_source, map_processor, collect_sink
>>> dag = DAG()
>>> src = dag.new_vertex("src", items_source(range(5)))
>>> sq = dag.new_vertex("square", map_processor(lambda x: x * x))
>>> out = dag.new_vertex("out", collect_sink())
>>> _ = dag.edge(Edge.between(src, sq)).edge(Edge.between(sq, out))
>>> job = ExecutionService(trace=True).submit(dag)
>>> sorted(job.join())
[0, 1, 4, 9, 16]
>>> trace = job.trace()
>>> trace.dropped
0
>>> calls = [e for e in trace.events if e.kind == "call"]
>>> sorted({e.tasklet for e in calls})
['out#0', 'square#0', 'src#0']
>>> sum(e.items_out for e in calls if e.vertex == "square")
5
>>> all(e.end_ns >= e.start_ns for e in trace.events)
True
"""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .errors import JetbenchError

if TYPE_CHECKING:
    import threading

    import pandas

#: events per worker a trace ring keeps when nothing else is asked for
DEFAULT_TRACE_CAPACITY = 65_536
#: an upper bound of the memory one recorded event holds, in bytes (measured in tests/core/test_trace.py)
BYTES_PER_EVENT = 200


class TraceError(JetbenchError):
    """A trace cannot be had (the job recorded none) or written (the path); the message says why."""


class TracedWorker(Protocol):
    """What a trace reads of a worker (`jetbench.core.worker.Worker`)."""

    @property
    def index(self) -> int: ...

    @property
    def kind(self) -> str: ...

    @property
    def thread(self) -> threading.Thread: ...

    @property
    def trace_events(self) -> deque[Any] | None: ...

    @property
    def trace_written(self) -> int: ...

    def start_trace(self, capacity: int) -> None: ...

    def stop_trace(self) -> None: ...


def check_capacity(argument: str, capacity: object) -> int:
    """``capacity`` if it is an int >= 1, else a `JetbenchError` naming ``argument``."""
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        raise JetbenchError(f"{argument} must be an int >= 1 (events per worker), got {capacity!r}")
    return capacity


@dataclass(frozen=True)
class TraceEvent:
    """One recorded call or park of one worker; times in the job clock's nanoseconds.

    A call has ``tasklet`` (``"vertex#index"``), ``vertex``, ``progress``, ``done``,
    ``items_in``, ``items_out`` and ``state`` (the state it moved to); a park has ``strategy``,
    ``asked_ns`` (what the idler asked to sleep), ``idle_round`` (the consecutive idle round, 0
    for a paced park after a productive round) and ``woken`` (a wake cut it short). The other
    fields are None.
    """

    worker: str
    kind: str  # "call" or "park"
    start_ns: int
    end_ns: int
    tasklet: str | None = None
    vertex: str | None = None
    progress: bool | None = None
    done: bool | None = None
    items_in: int | None = None
    items_out: int | None = None
    state: str | None = None
    strategy: str | None = None
    asked_ns: int | None = None
    idle_round: int | None = None
    woken: bool | None = None

    @property
    def duration_ns(self) -> int:
        """How long the call ran or the park actually slept."""
        return self.end_ns - self.start_ns


#: `Trace.frame`'s columns, in order
FRAME_COLUMNS = ("worker", "kind", "start_ns", "end_ns", "duration_ns", "tasklet", "vertex", "progress",
                 "done", "items_in", "items_out", "state", "strategy", "asked_ns", "idle_round", "woken")


@dataclass(frozen=True)
class Lane:
    """One worker's recording: its thread's name, its kind, its events and what was dropped."""

    worker: str
    kind: str
    events: tuple[TraceEvent, ...]
    capacity: int
    dropped: int


def _state_names() -> dict[str, str]:
    from . import tasklet

    return {step: state.name for step, state in tasklet._STATE_OF_STEP.items()}


def _event(worker: str, entry: tuple[Any, ...], states: dict[str, str]) -> TraceEvent:
    start, end, t, a, b, c, d = entry
    if t is None:
        return TraceEvent(worker, "park", start, end, strategy=d, asked_ns=a, idle_round=b, woken=bool(c))
    step_name = getattr(d, "__name__", "")
    return TraceEvent(worker, "call", start, end, tasklet=f"{t.vertex_name}#{t.index}", vertex=t.vertex_name,
                      progress=bool(a & 1), done=bool(a & 2), items_in=b, items_out=c,
                      state=states.get(step_name, step_name))


def lane_of(worker: TracedWorker) -> Lane | None:
    """A copy of ``worker``'s ring as a `Lane`, or None if it records nothing."""
    ring = worker.trace_events
    if ring is None:
        return None
    written = worker.trace_written
    entries = list(ring)  # one C-level copy: the worker's thread cannot append in between
    states = _state_names()
    name = worker.thread.name
    events = tuple(_event(name, e, states) for e in entries)
    return Lane(name, worker.kind, events, ring.maxlen or len(entries), max(0, written - len(entries)))


class Trace:
    """What a job's workers recorded: one `Lane` per worker that recorded.

    ``job.trace()`` makes it (see `jetbench.core.job.Job.trace`); it is a copy, which a running
    job's workers go on recording past.
    """

    def __init__(self, job_name: str, lanes: Sequence[Lane]):
        self.job_name = job_name
        self.lanes = tuple(lanes)

    @classmethod
    def of(cls, job_name: str, workers: Iterable[TracedWorker]) -> Trace:
        """The trace of ``workers``' rings as they are now (workers that record nothing left out)."""
        return cls(job_name, [lane for lane in map(lane_of, workers) if lane is not None])

    @property
    def events(self) -> list[TraceEvent]:
        """Every event, worker by worker, each worker's in the order it recorded them."""
        return [e for lane in self.lanes for e in lane.events]

    @property
    def dropped(self) -> int:
        """Events the rings dropped (the oldest), all workers together."""
        return sum(lane.dropped for lane in self.lanes)

    def dropped_note(self) -> str | None:
        """What was dropped, worker by worker, and how to keep it; None if nothing was."""
        lost = [f"{lane.dropped:,} on {lane.worker} (ring of {lane.capacity:,})" for lane in self.lanes if lane.dropped]
        if not lost:
            return None
        return (f"the oldest events were dropped: {', '.join(lost)}; record a shorter window "
                "(job.trace(seconds=...)) or a larger ring (trace_capacity=...)")

    def to_chrome(self) -> dict[str, Any]:
        """The trace as Chrome's trace-event JSON object: one process (the job), one thread per
        worker (named by ``thread_name`` metadata), a complete event (``"ph": "X"``) per call and
        per park, times in microseconds from the first event."""
        starts = [lane.events[0].start_ns for lane in self.lanes if lane.events]
        origin = min(starts) if starts else 0
        out: list[dict[str, Any]] = [
            {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": f"jetbench job {self.job_name}"}}
        ]
        for tid, lane in enumerate(self.lanes, start=1):
            out.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": lane.worker}})
            out.append({"name": "thread_sort_index", "ph": "M", "pid": 1, "tid": tid, "args": {"sort_index": tid}})
            for e in lane.events:
                ts = (e.start_ns - origin) / 1000
                dur = e.duration_ns / 1000
                if e.kind == "call":
                    cat = "call" if e.progress else "call,no-progress"
                    args: dict[str, Any] = {"progress": e.progress, "done": e.done, "items_in": e.items_in,
                                            "items_out": e.items_out, "state": e.state}
                    out.append({"name": e.tasklet, "cat": cat, "ph": "X", "ts": ts, "dur": dur, "pid": 1,
                                "tid": tid, "args": args})
                else:
                    args = {"strategy": e.strategy, "asked_us": (e.asked_ns or 0) / 1000, "slept_us": dur,
                            "idle_round": e.idle_round, "woken": e.woken}
                    out.append({"name": f"park {(e.asked_ns or 0) / 1000:g} us", "cat": "park", "ph": "X",
                                "ts": ts, "dur": dur, "pid": 1, "tid": tid, "args": args})
        other = {"job": self.job_name, "dropped": {lane.worker: lane.dropped for lane in self.lanes}}
        return {"traceEvents": out, "displayTimeUnit": "ns", "otherData": other}

    def export(self, path: str | os.PathLike[str]) -> str:
        """Write `to_chrome` as JSON to ``path`` (open it in Perfetto or ``chrome://tracing``);
        return the path. A path that cannot be written raises `TraceError` naming it."""
        target = os.fspath(path)
        try:
            with open(target, "w", encoding="utf-8") as f:
                json.dump(self.to_chrome(), f, separators=(",", ":"))
        except OSError as exc:
            raise TraceError(f"trace.export({target!r}): cannot write the trace there: {exc.strerror or exc}") from None
        return target

    def frame(self) -> pandas.DataFrame:
        """Every event as a row of a pandas DataFrame with the columns `FRAME_COLUMNS`."""
        import pandas

        rows = [(e.worker, e.kind, e.start_ns, e.end_ns, e.duration_ns, e.tasklet, e.vertex, e.progress, e.done,
                 e.items_in, e.items_out, e.state, e.strategy, e.asked_ns, e.idle_round, e.woken)
                for e in self.events]
        return pandas.DataFrame.from_records(rows, columns=list(FRAME_COLUMNS))

    def __repr__(self) -> str:
        counts = ", ".join(f"{lane.worker}: {len(lane.events):,}" for lane in self.lanes)
        note = self.dropped_note()
        return f"Trace(job {self.job_name!r}, events {{{counts}}}" + (f"; {note})" if note else ")")
