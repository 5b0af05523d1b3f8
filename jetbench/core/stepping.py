"""Step mode: a job run one round at a time, for walking through Jet's state machine.

``ExecutionService(step=True, clock=MockClock())`` submits jobs whose workers record every call
and park (`jetbench.core.trace`) and wait at a gate (`Stepper`) before each round. Nothing runs
until the first ``job.step()``; each call then lets every worker run one round, one worker after
the other (so a run on the mock clock is the same every time), and returns a `StepReport`: what
each tasklet's call did (progress or not, items in and out, the state it moved to), each park
(what the idler asked for and slept: on the mock clock time moves only by parks), and where
each tasklet stands after the round (its state, the outbox refusing because a queue downstream
is full, the watermark it has taken in, its part in a snapshot in flight).

``job.join()`` (or ``job.cancel()``) lets the workers run freely from then on.

A blocking tasklet's outbox waiting for room is not the end of its round: its consumer may be on a
worker that waits at the gate. The step then goes on without it (the report says it waits for
room) and the blocked round finishes in a later step, when the consumer has drained the queue.

>>> from jetbench import DAG, Edge, ExecutionService
>>> from jetbench.core.clock import MockClock
>>> from jetbench.processors import items_source, collect_sink
>>> dag = DAG()
>>> src = dag.new_vertex("src", items_source(range(3)), 1)
>>> out = dag.new_vertex("out", collect_sink(), 1)
>>> _ = dag.edge(Edge.between(src, out))
>>> job = ExecutionService(step=True, clock=MockClock()).submit(dag)
>>> first = job.step()
>>> [(row.tasklet, row.did) for row in first.calls]
[('src#0', 'init'), ('out#0', 'init')]
>>> second = job.step()
>>> [(row.tasklet, row.did, row.items_out) for row in second.calls][0]
('src#0', 'progress', 3)
>>> job.join()
[0, 1, 2]
"""

from __future__ import annotations

import html
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .errors import JetbenchError
from .trace import Lane, RingReader, Trace, TraceEvent
from .views import view

if TYPE_CHECKING:
    from .job import Job
    from .worker import Worker


#: how wide a call is drawn in `StepReport.timeline` when it took less (on the mock clock: none)
CALL_WIDTH_NS = 10_000


@dataclass(frozen=True)
class StepRow:
    """One call or park of a round, with where its tasklet stood after the round (calls only)."""

    worker: str
    kind: str  # "call" or "park"
    tasklet: str  # "" for a park
    did: str  # "init", "progress", "no progress", "finished"; a park: "park" or "waits for room" (inside a call)
    items_in: int
    items_out: int
    state: str  # the state the call moved to
    outbox_full: bool  # after the round: its last flush left items behind (a full queue downstream)
    watermark: int | None  # after the round: the coalesced watermark it has taken in
    snapshot: str  # after the round: its part in a snapshot in flight ("aligning #2", ...)
    asked_ns: int | None  # a park: what the idler asked for
    slept_ns: int  # a call: its duration; a park: what it slept
    idle_round: int | None  # a park: the consecutive idle round (0: paced after progress)


class StepReport:
    """What one ``job.step()`` did: `calls` (calls and parks, worker by worker), `waiting` (the
    workers whose blocking outbox still waits for room), `trace` (the round as a `Trace`). Shown
    as a table in a notebook; `timeline` draws it."""

    def __init__(self, job_name: str, number: int, rows: Sequence[StepRow], waiting: Sequence[str], trace: Trace,
                 clock_ns: int):
        self.job_name = job_name
        self.number = number
        self.rows = tuple(rows)
        self.waiting = tuple(waiting)
        self.trace = trace
        self.clock_ns = clock_ns

    @property
    def calls(self) -> list[StepRow]:
        """The tasklet calls of the round, worker by worker, in the order they ran."""
        return [r for r in self.rows if r.kind == "call"]

    @property
    def parks(self) -> list[StepRow]:
        """The parks of the round, one per worker at most."""
        return [r for r in self.rows if r.kind == "park"]

    def row(self, tasklet: str) -> StepRow:
        """The call of ``tasklet`` ("vertex#index") in this round; a `JetbenchError` if it made none."""
        for r in self.rows:
            if r.tasklet == tasklet:
                return r
        raise JetbenchError(f"step {self.number}: tasklet {tasklet!r} made no call in this round "
                            f"(calls: {', '.join(r.tasklet for r in self.calls) or 'none'})")

    def timeline(self, **kwargs: Any) -> Any:
        """This round drawn as a timeline (`jetbench.notebook.timeline.Timeline`), in call order: on
        the mock clock a call takes no time, so each is drawn `CALL_WIDTH_NS` wide, one after the
        other, and each park as long as it slept (its true times are in `trace`)."""
        lanes = []
        for lane in self.trace.lanes:
            t = lane.events[0].start_ns if lane.events else 0
            events = []
            for e in lane.events:
                width = e.duration_ns if e.kind == "park" else max(e.duration_ns, CALL_WIDTH_NS)
                events.append(replace(e, start_ns=t, end_ns=t + width))
                t += width
            lanes.append(replace(lane, events=tuple(events)))
        return view("timeline")(Trace(self.trace.job_name, lanes), **kwargs)

    def _cells(self, r: StepRow) -> list[str]:
        if r.kind == "park":
            asked = (r.asked_ns or 0) / 1000
            what = f"idle round {r.idle_round}" if r.idle_round else "paced after progress"
            if r.did == "waits for room":
                what = f"its blocking outbox waiting for room, round {r.idle_round}"
            return [r.worker, "(park)", f"asked {asked:g} µs, slept {r.slept_ns / 1000:g} µs ({what})", "", "", "",
                    "", "", ""]
        return [r.worker, r.tasklet, r.did, str(r.items_in), str(r.items_out), r.state,
                "outbox full" if r.outbox_full else "", "" if r.watermark is None else str(r.watermark), r.snapshot]

    HEADER = ("worker", "tasklet", "did", "in", "out", "state after", "outbox", "watermark", "snapshot")

    def __repr__(self) -> str:
        rows = [list(self.HEADER)] + [self._cells(r) for r in self.rows]
        widths = [max(len(row[k]) for row in rows) for k in range(len(self.HEADER))]
        lines = [f"step {self.number} of job {self.job_name!r} (clock {self.clock_ns / 1e9:.6f} s)"]
        lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
        if self.waiting:
            lines.append(f"still waiting for room in a full outbox: {', '.join(self.waiting)}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.HEADER)
        body = []
        for r in self.rows:
            style = ' style="opacity:0.55"' if r.did in ("no progress", "park", "waits for room") else ""
            cells = "".join(f"<td>{html.escape(c)}</td>" for c in self._cells(r))
            body.append(f'<tr data-kind="{r.kind}" data-did="{html.escape(r.did)}"{style}>{cells}</tr>')
        waiting = (f"<div>still waiting for room in a full outbox: {html.escape(', '.join(self.waiting))}</div>"
                   if self.waiting else "")
        return (f'<div class="jetbench-step"><b>step {self.number}</b> of job {html.escape(self.job_name)} · clock '
                f"{self.clock_ns / 1e9:.6f} s<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}"
                f"</tbody></table>{waiting}</div>")


_AT_GATE, _RUNNING, _WAITING_FOR_ROOM, _GONE = "at gate", "running", "waiting for room", "gone"


class Stepper:
    """The gate of a job in step mode (see the module's docstring); `Job.step` calls `step`."""

    def __init__(self, job: Job, workers: Sequence[Worker], start: Any):
        self.job = job
        self.workers = list(workers)
        self._start = start  # starts the job's threads: the first step does
        self._cond = threading.Condition()
        self._where: dict[int, str] = {id(w): _RUNNING for w in workers}
        self._turn: Worker | None = None
        self._free = False
        self._started = False
        self._readers = [RingReader(w) for w in workers]
        self._seen: set[str] = set()  # tasklets that made their first call (init)
        self.steps = 0

    # -- the workers' side (their threads) -------------------------------------------------------

    def wait_turn(self, worker: Worker) -> None:
        with self._cond:
            self._where[id(worker)] = _AT_GATE
            self._cond.notify_all()
            while not self._free and self._turn is not worker and not self.job.terminating:
                self._cond.wait()
            if self._turn is worker:
                self._turn = None
            self._where[id(worker)] = _RUNNING

    def waiting_for_room(self, worker: Worker, waiting: bool) -> None:
        with self._cond:
            self._where[id(worker)] = _WAITING_FOR_ROOM if waiting else _RUNNING
            self._cond.notify_all()

    def left(self, worker: Worker) -> None:
        with self._cond:
            self._where[id(worker)] = _GONE
            self._cond.notify_all()

    # -- the caller's side -----------------------------------------------------------------------

    def run_free(self) -> None:
        """Let every worker run without waiting from now on (``job.join()``, ``job.cancel()``)."""
        with self._cond:
            self._free = True
            self._cond.notify_all()
        self._ensure_started()

    def wake(self) -> None:
        """The job is being torn down: no worker may stay at the gate."""
        with self._cond:
            self._cond.notify_all()

    def _ensure_started(self) -> None:
        with self._cond:
            if self._started:
                return
            self._started = True
        self._start()

    def _settled(self, worker: Worker) -> bool:
        return self._where[id(worker)] in (_AT_GATE, _WAITING_FOR_ROOM, _GONE)

    def step(self) -> StepReport:
        job = self.job
        if job.is_done or job.terminating:
            raise JetbenchError(f"job.step(): job {job.name!r} has ended ({job.status.value}); "
                                "there is no round left to run")
        with self._cond:
            if self._free:
                raise JetbenchError(f"job.step(): job {job.name!r} runs freely since job.join(); "
                                    "step it before joining")
        with self._cond:
            if self._started and all(self._where[id(w)] == _GONE for w in self.workers):
                raise JetbenchError(f"job.step(): job {job.name!r} has ended (every worker left); "
                                    "there is no round left to run")
        if not self._started:
            self._ensure_started()
            with self._cond:  # every worker comes to the gate before its first round
                self._cond.wait_for(lambda: all(self._settled(w) for w in self.workers))
        self.steps += 1
        rows: list[StepRow] = []
        lanes: list[Lane] = []
        recorded: list[tuple[Worker, list[TraceEvent]]] = []
        for worker, reader in zip(self.workers, self._readers, strict=True):
            with self._cond:
                if self._where[id(worker)] != _AT_GATE:
                    continue  # gone, or its blocked round is still going
                self._turn = worker
                self._where[id(worker)] = _RUNNING
                self._cond.notify_all()
                while not (self._settled(worker) and self._turn is not worker):
                    self._cond.wait()
            recorded.append((worker, reader.read()))
        tasklets = {t.name: t for t in self.job.tasklets}
        for worker, events in recorded:
            for e in events:
                first = e.kind == "call" and e.tasklet not in self._seen
                if first:
                    self._seen.add(e.tasklet or "")
                rows.append(_row(e, tasklets, first))
            lanes.append(Lane(worker.thread.name, worker.kind, tuple(events), len(events), 0))
        with self._cond:
            waiting = [w.thread.name for w in self.workers if self._where[id(w)] == _WAITING_FOR_ROOM]
        return StepReport(self.job.name, self.steps, rows, waiting, Trace(self.job.name, lanes),
                          self.job.clock.monotonic_ns())


def _row(e: TraceEvent, tasklets: dict[str, Any], first: bool) -> StepRow:
    if e.kind == "park":
        return StepRow(e.worker, "park", "", "waits for room" if e.in_call else "park", 0, 0, "", False, None, "",
                       e.asked_ns, e.duration_ns, e.idle_round)
    t = tasklets.get(e.tasklet or "")
    did = "init" if first else "finished" if e.done else "progress" if e.progress else "no progress"
    watermark = None
    snapshot = ""
    full = False
    if t is not None:
        full = bool(t.refused)
        watermark = t._ordinal_coalescer.last_emitted
        word, snapshot_id, _barriers = t.snapshot_statistics()
        snapshot = f"{word} #{snapshot_id}" if word else ""
    return StepRow(e.worker, "call", e.tasklet or "", did, e.items_in or 0, e.items_out or 0, e.state or "", full,
                   watermark, snapshot, None, e.duration_ns, None)
