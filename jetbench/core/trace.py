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
  and whether a wake (another thread handing it work) cut it short; also the parks inside a call
  (``in_call``: a non-cooperative tasklet's blocking outbox waiting for room downstream), which
  lie within that call's time and come before it in the worker's events (a call is recorded when
  it returns).

**Memory.** A ring holds at most ``trace_capacity`` events (`DEFAULT_TRACE_CAPACITY`, 65,536, unless
``ExecutionService(trace_capacity=...)`` or ``job.trace(capacity=...)`` says otherwise) per
worker, about 150 bytes each (a 7-tuple, its two clock readings and the deque's slot: 147
measured on a full ring; tests/core/test_trace.py holds it under `BYTES_PER_EVENT`, 200): 65,536
events are about 10 MB per worker at most, about 6 s of a 10-tasklet worker calling 10,000 times
a second.

The notebook's timeline (``job.timeline()`` or ``trace.timeline()``: `jetbench.notebook.timeline`,
a lane per worker, live over a sliding window while the job runs) reads the same rings, a
`RingReader` per worker converting only what was appended since its last read.

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
from .views import view

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
    for a paced park after a productive round; inside a call, the round of the outbox's wait),
    ``woken`` (a wake cut it short) and ``in_call`` (the blocking outbox waited for room: the park
    lies within the call recorded next). The other fields are None.
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
    in_call: bool | None = None

    @property
    def duration_ns(self) -> int:
        """How long the call ran or the park actually slept."""
        return self.end_ns - self.start_ns


#: `Trace.frame`'s columns, in order
FRAME_COLUMNS = ("worker", "kind", "start_ns", "end_ns", "duration_ns", "tasklet", "vertex", "progress",
                 "done", "items_in", "items_out", "state", "strategy", "asked_ns", "idle_round", "woken", "in_call")


@dataclass(frozen=True)
class Lane:
    """One worker's recording: its thread's name, its kind, its events and what was dropped."""

    worker: str
    kind: str
    events: tuple[TraceEvent, ...]
    capacity: int
    dropped: int


def _start(e: TraceEvent) -> int:
    return e.start_ns


def _state_names() -> dict[str, str]:
    from . import tasklet

    return {step: state.name for step, state in tasklet._STATE_OF_STEP.items()}


class _Converter:
    """Turns a worker's ring entries into `TraceEvent`s, fast: the names of each tasklet and step
    are looked up once, and each event is made without the frozen dataclass's field-by-field
    ``__init__`` (its fields go into its ``__dict__`` at once; the fields left out keep their
    defaults, which the class holds). A live view converts every entry it shows."""

    def __init__(self, worker: str):
        self.worker = worker
        self.states = _state_names()
        self.tasklets: dict[int, tuple[str, str, Any]] = {}  # id -> (name, vertex, the tasklet: kept alive)

    def __call__(self, entry: tuple[Any, ...]) -> TraceEvent:
        start, end, t, a, b, c, d = entry
        e = _new_event(TraceEvent)
        if t is None:
            e.__dict__.update(worker=self.worker, kind="park", start_ns=start, end_ns=end, strategy=d, asked_ns=a,
                              idle_round=b, woken=bool(c & 1), in_call=bool(c & 2))
            return e
        names = self.tasklets.get(id(t))
        if names is None:
            names = self.tasklets[id(t)] = (f"{t.vertex_name}#{t.index}", t.vertex_name, t)
        step_name = getattr(d, "__name__", "")
        e.__dict__.update(worker=self.worker, kind="call", start_ns=start, end_ns=end, tasklet=names[0],
                          vertex=names[1], progress=bool(a & 1), done=bool(a & 2), items_in=b, items_out=c,
                          state=self.states.get(step_name, step_name))
        return e


_new_event = object.__new__


class RingReader:
    """Reads one worker's ring again and again (a live view's ticks), converting only the entries
    appended since the previous read: a tick costs what was recorded since the last one, not the
    ring's size. Entries are told apart by identity (each is a tuple of its own), so a reader
    never counts one twice; entries that dropped out of the ring between two reads are lost to it
    (`lost` counts the reads that found the previous newest entry gone, `missed` the entries)."""

    def __init__(self, worker: TracedWorker):
        self.worker = worker
        self._ring: deque[Any] | None = None
        self._last: object = None
        self._written = 0
        self._convert: _Converter | None = None
        self.lost = 0
        #: events that dropped out of the ring before a read could take them (counted by the
        #: worker's `trace_written`)
        self.missed = 0

    def read(self) -> list[TraceEvent]:
        """The events recorded since the previous read, oldest first ([] while not recording)."""
        ring = self.worker.trace_events
        if ring is None:
            return []
        entries = list(ring)  # one C-level copy: the worker's thread cannot append in between
        written = self.worker.trace_written
        if ring is not self._ring:  # recording (re)started: a fresh ring
            self._ring, self._last, self._written = ring, None, 0
        start = 0
        last = self._last
        if last is not None:
            for k in range(len(entries) - 1, -1, -1):
                if entries[k] is last:
                    start = k + 1
                    break
            else:
                self.lost += 1
                self.missed += max(0, written - self._written - len(entries))
        elif written > len(entries):  # the first read of a ring that dropped already
            self.missed += written - len(entries)
        self._written = written
        if entries:
            self._last = entries[-1]
        if self._convert is None:
            self._convert = _Converter(self.worker.thread.name)
        return list(map(self._convert, entries[start:]))


def lane_of(worker: TracedWorker) -> Lane | None:
    """A copy of ``worker``'s ring as a `Lane`, or None if it records nothing."""
    ring = worker.trace_events
    if ring is None:
        return None
    written = worker.trace_written
    entries = list(ring)  # one C-level copy: the worker's thread cannot append in between
    events = tuple(map(_Converter(worker.thread.name), entries))
    return Lane(worker.thread.name, worker.kind, events, ring.maxlen or len(entries), max(0, written - len(entries)))


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
            # in time order: a park inside a call was recorded before the call that holds it
            for e in sorted(lane.events, key=_start):
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
                            "idle_round": e.idle_round, "woken": e.woken, "in_call": e.in_call}
                    what = "waits for room" if e.in_call else "park"
                    out.append({"name": f"{what} {(e.asked_ns or 0) / 1000:g} us",
                                "cat": "park,outbox" if e.in_call else "park", "ph": "X",
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
                 e.items_in, e.items_out, e.state, e.strategy, e.asked_ns, e.idle_round, e.woken, e.in_call)
                for e in self.events]
        return pandas.DataFrame.from_records(rows, columns=list(FRAME_COLUMNS))

    def timeline(self, **kwargs: Any) -> Any:
        """This trace drawn in the notebook: a lane per worker, zoom and pan
        (`jetbench.notebook.timeline.Timeline`)."""
        return view("timeline")(self, **kwargs)

    def __repr__(self) -> str:
        counts = ", ".join(f"{lane.worker}: {len(lane.events):,}" for lane in self.lanes)
        note = self.dropped_note()
        return f"Trace(job {self.job_name!r}, events {{{counts}}}" + (f"; {note})" if note else ")")
