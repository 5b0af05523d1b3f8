"""Workers: the threads that call tasklets, Jet's cooperative worker loop.

A `CooperativeWorker` calls its tasklets round-robin and backs off through its idler only after
a full round in which no tasklet progressed; a `BlockingWorker` is the dedicated thread of one
non-cooperative tasklet (and its blocking outbox's wait); `WorkStealing` is Jet's historical
work-stealing rule, kept as a switch. `jetbench.core.execution.ExecutionService` creates them per
job and starts them; a job sees them through `jetbench.core.job.JobWorker`.

This module is compiled with mypyc with the rest of the hot path (`jetbench.core.compiled`): the
round loop and the timed call around each tasklet run as native code. Its classes are internal:
nothing outside the engine subclasses them.

Tracing (`jetbench.core.trace`): a worker made with ``trace_capacity`` > 0 keeps its last
``trace_capacity`` events in `Worker.trace_events` (a ``deque`` with that ``maxlen``: the oldest
drop out; `Worker.trace_written` counts every event, so the dropped ones are counted too). Only
the worker's own thread appends; readers copy the deque. The round loop picks the traced or the
plain call once per round (one attribute test a round, never one per call), so a worker without a
trace runs the same calls as before.

Step mode (`jetbench.core.stepping`): a worker of a job submitted with ``ExecutionService(step=True)``
records, and has a `Worker.gate`; on its traced path it waits at the gate before each round until
``job.step()`` lets it run one, so a worker without a gate (every other job) pays nothing for it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import ClassVar, Final, Protocol

from .clock import SYSTEM_CLOCK, Clock
from .idle import IdleConfig, Idler, make_idler
from .job import Job
from .metrics import WorkerStatistics
from .tasklet import DONE_STATE, ProcessorTasklet, TaskletAborted

#: One traced event (see `jetbench.core.trace`, which reads them):
#: a call ``(start_ns, end_ns, tasklet, result bits, items in, items out, the step it runs next)``;
#: a park ``(start_ns, end_ns, None, asked ns, idle round (0: paced after progress), woken 0/1, strategy)``,
#: or ``IN_CALL`` for woken: a park inside a call, the blocking outbox waiting for room (recorded
#: before the call that holds it, which is recorded when it returns)
TraceEntry = tuple[int, int, ProcessorTasklet | None, int, int, int, object]
IN_CALL: Final = 2


class Gate(Protocol):
    """Where a worker of a job in step mode waits for its turn (`jetbench.core.stepping.Stepper`)."""

    def wait_turn(self, worker: Worker) -> None:
        """Before each round: the previous one is over; return when this worker may run the next."""

    def waiting_for_room(self, worker: Worker, waiting: bool) -> None:
        """The worker's blocking outbox waits for room (True), or has found it (False), mid-round."""

    def left(self, worker: Worker) -> None:
        """The worker's thread ends."""


def _thread_cpu_s(thread: threading.Thread | None) -> float | None:
    """CPU seconds used by a live thread, read from another thread (Linux), else None."""
    if thread is None or thread.ident is None or not thread.is_alive():
        return None
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    except (AttributeError, OSError):
        return None


class Worker:
    """What cooperative and blocking workers share: a thread, counters and the call loop body."""

    kind: ClassVar[str] = "cooperative"

    def __init__(self, index: int, job: Job, idle_config: IdleConfig, slow_call_ns: int, name: str,
                 idle_strategy: str = "backoff", clock: Clock = SYSTEM_CLOCK, trace_capacity: int = 0):
        self.index = index
        self.job = job
        self.idler: Idler = make_idler(idle_strategy, idle_config, clock)
        self.slow_call_ns = slow_call_ns
        self.tasklets: list[ProcessorTasklet] = []
        self.iteration_count = 0
        self.idle_count = 0
        self.final_cpu_s: float | None = None
        #: cooperative workers to wake when this one makes progress (it may have fed them)
        self.colleagues: list[CooperativeWorker] = []
        self.thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._now_ns = clock.monotonic_ns
        #: when the last call ended (clock ns), the start of the next call in the same round;
        #: 0 to read the clock afresh (the round loop clears it before each round)
        self._last_ns = 0
        #: the trace ring: the last ``trace_capacity`` events, None when not tracing
        self.trace_events: deque[TraceEntry] | None = deque(maxlen=trace_capacity) if trace_capacity > 0 else None
        #: events appended to `trace_events` since it was made (those beyond its length were dropped)
        self.trace_written = 0
        #: step mode only (with a trace): where it waits before each round
        self.gate: Gate | None = None

    def start_trace(self, capacity: int) -> None:
        """Record from this worker's next round into a fresh ring of ``capacity`` events."""
        self.trace_written = 0
        self.trace_events = deque(maxlen=capacity)

    def stop_trace(self) -> None:
        """Stop recording from the next round (the ring already read stays with its reader)."""
        self.trace_events = None

    @property
    def cpu_time_s(self) -> float:
        live = _thread_cpu_s(self.thread)
        if live is not None:
            return live
        return self.final_cpu_s or 0.0

    def statistics(self) -> WorkerStatistics:
        """A frozen record of this worker's counters (see `jetbench.core.metrics`)."""
        return WorkerStatistics(
            index=self.index,
            kind=self.kind,
            tasklet_count=len(self.tasklets),
            iteration_count=self.iteration_count,
            idle_count=self.idle_count,
            parked_ms=self.idler.parked_ns / 1e6,
            cpu_time_s=self.cpu_time_s,
            alive=self.thread.is_alive(),
        )

    def _main(self) -> None:
        try:
            self.run()
        except BaseException as exc:  # a bug in the engine itself: fail the job, never hang it
            self.job.record_failure(exc, None, f"worker {self.thread.name}")
            self._abort_all()
        finally:
            self.final_cpu_s = time.thread_time()
            if self.gate is not None:
                self.gate.left(self)
            self.job._worker_exited()

    def run(self) -> None:
        raise NotImplementedError

    def _call(self, t: ProcessorTasklet) -> int:
        """One timed call; exceptions fail the job (or are the job's own teardown).

        It starts when the call before it ended (``_last_ns``) unless that is cleared, as the round
        loop does before each round: a round of n calls reads the clock n + 1 times, not 2n, and
        each call's time includes the loop's few steps before it.
        """
        now_ns = self._now_ns
        t0 = self._last_ns or now_ns()
        try:
            r = t.call()
        except TaskletAborted:
            r = 0
        except Exception as exc:
            self.job.record_failure(exc, t, t.state.name.lower())
            r = 0
        t1 = now_ns()
        self._last_ns = t1
        dt = t1 - t0
        t.calls += 1
        t.busy_ns += dt
        if dt > self.slow_call_ns and t.cooperative:
            t.slow_calls += 1
            if dt > t.max_call_ns:
                t.max_call_ns = dt
        if r:
            t.progress_calls += 1
        return r

    def _traced_call(self, t: ProcessorTasklet) -> int:
        """`_call`, and the call appended to `trace_events` (the clock is read no more often)."""
        received = t.received_count
        emitted = t.emitted_count
        t0 = self._last_ns
        if not t0:
            t0 = self._last_ns = self._now_ns()
        r = self._call(t)
        events = self.trace_events
        if events is not None:
            events.append((t0, self._last_ns, t, r, t.received_count - received, t.emitted_count - emitted, t._step))
            self.trace_written += 1
        return r

    def _traced_park(self, idle_round: int, tasklets: list[ProcessorTasklet]) -> None:
        """The idler's `idle` (``idle_round`` > 0) or `after_progress` (0), a park appended to
        `trace_events` if it parked: the time it asked for, the time it took, whether a wake cut
        it short. A pacing round that did not park reads no clock."""
        idler = self.idler
        parks = idler.parks
        asked = idler.parked_ns
        woken = idler.woken
        t0 = self._last_ns or self._now_ns()  # the round's last call ended: the park starts there
        if idle_round:
            idler.idle(idle_round, tasklets)
        else:
            idler.after_progress(tasklets)
        events = self.trace_events
        if idler.parks != parks and events is not None:
            events.append((t0, self._now_ns(), None, idler.parked_ns - asked, idle_round,
                           1 if idler.woken != woken else 0, idler.name))
            self.trace_written += 1

    def _abort_all(self) -> None:
        for t in self.tasklets:
            self._abort(t)
        self.tasklets.clear()

    def _abort(self, t: ProcessorTasklet) -> None:
        if t.is_done:
            return
        try:
            t.abort()
        except Exception as exc:
            self.job.record_failure(exc, t, "close")


class CooperativeWorker(Worker):
    """Calls its tasklets round-robin; idles with exponential backoff after an idle round."""

    def __init__(self, index: int, job: Job, idle_config: IdleConfig, slow_call_ns: int, name: str,
                 idle_strategy: str = "backoff", clock: Clock = SYSTEM_CLOCK, trace_capacity: int = 0):
        super().__init__(index, job, idle_config, slow_call_ns, name, idle_strategy, clock, trace_capacity)
        self.stealing: WorkStealing | None = None  # set when work stealing is on
        self.incoming: deque[ProcessorTasklet] = deque()
        self.expected = 0  # tasklets marked for stealing by this worker, not yet handed over

    def run(self) -> None:
        job = self.job
        tasklets = self.tasklets
        stealing = self.stealing
        plain = self._call
        traced = self._traced_call
        idle_round = 0
        while tasklets or self.incoming or self.expected:
            while self.incoming:
                t = self.incoming.popleft()
                t.worker_index = self.index
                tasklets.append(t)
            if job.terminating:
                self._abort_all()
                if stealing is not None:
                    stealing.release_marks(self)
                continue
            progress = False
            finished: list[ProcessorTasklet] | None = None  # to dismiss after the round
            self._last_ns = 0  # the round's first call reads the clock afresh
            if self.trace_events is None:  # once a round, never per call
                call = plain
            else:
                call = traced
                if self.gate is not None:  # step mode: one round per job.step()
                    self.gate.wait_turn(self)
                    if job.terminating:
                        continue
            for t in tasklets:
                if stealing is not None and t.steal_to is not None:
                    if finished is None:
                        finished = [t]
                    else:
                        finished.append(t)
                    continue
                r = call(t)
                if r:
                    progress = True
                    if r & DONE_STATE:
                        if finished is None:
                            finished = [t]
                        else:
                            finished.append(t)
            self.iteration_count += 1
            if finished is not None:
                for t in finished:
                    if stealing is not None:
                        stealing.dismissed(self, t)  # removes it from our list under its lock
                    else:
                        tasklets.remove(t)
            if progress:
                idle_round = 0
                for w in self.colleagues:
                    w.idler.wake()
                if tasklets:
                    if self.trace_events is None:
                        self.idler.after_progress(tasklets)
                    else:
                        self._traced_park(0, tasklets)
            elif tasklets or self.expected:
                idle_round += 1
                self.idle_count += 1
                if self.trace_events is None:
                    self.idler.idle(idle_round, tasklets)
                else:
                    self._traced_park(idle_round, tasklets)


class BlockingWorker(Worker):
    """A dedicated thread for one non-cooperative tasklet, with its own idler.

    With the "timer" idler (`ExecutionService`'s default for these threads) a tasklet that only
    reacts to input (``wake_time()`` is +inf) sleeps until a producer offers to one of its
    queues (the queue calls the idler's `wake`), or ``noncooperative_max_idle_us`` passes; with
    "backoff" (Jet's) it polls, its park doubling up to that maximum. Waiting for room in a full
    outbox always backs off: nothing wakes a producer when its consumer drains.
    """

    kind: ClassVar[str] = "blocking"

    def run(self) -> None:
        job = self.job
        t = self.tasklets[0]
        idle_round = 0
        while not job.terminating:
            self._last_ns = 0  # one tasklet: every call reads the clock afresh (idling comes between)
            if self.trace_events is None:
                r = self._call(t)
            else:
                if self.gate is not None:  # step mode: one round per job.step()
                    self.gate.wait_turn(self)
                    if job.terminating:
                        break
                r = self._traced_call(t)
            self.iteration_count += 1
            if r & DONE_STATE:
                self.tasklets.clear()
                return
            if r:
                idle_round = 0
                for w in self.colleagues:
                    w.idler.wake()
            else:
                idle_round += 1
                self.idle_count += 1
                if self.trace_events is None:
                    self.idler.idle(idle_round, self.tasklets)
                else:
                    self._traced_park(idle_round, self.tasklets)
        self._abort_all()

    def wait_for_room(self, t: ProcessorTasklet) -> None:
        """Blocking-outbox wait: flush; if nothing moved, idle; leave if the job is torn down."""
        idle_round = 0
        gate = self.gate
        while not t._flush():
            if self.job.terminating:
                raise TaskletAborted()
            if idle_round == 0 and gate is not None:
                gate.waiting_for_room(self, True)
            idle_round += 1
            events = self.trace_events
            if events is None:
                self.idler.back_off(idle_round)
            else:  # traced: the park inside the call (its woken field says so: IN_CALL)
                idler = self.idler
                asked = idler.parked_ns
                t0 = self._now_ns()
                idler.back_off(idle_round)
                events.append((t0, self._now_ns(), None, idler.parked_ns - asked, idle_round, IN_CALL, idler.name))
                self.trace_written += 1
        if idle_round and gate is not None:
            gate.waiting_for_room(self, False)

    def wake_on_input(self) -> None:
        """Have the producers of this worker's tasklet wake it on each offer (timer idler only)."""
        if self.idler.name != "timer":
            return
        wake = self.idler.wake
        for stream in self.tasklets[0].inbound:
            for q in stream.queues:
                q.wake = wake


class WorkStealing:
    """Jet's historical work stealing (2016-2018), kept as a switch for teaching.

    Only when a worker dismisses a finished tasklet does it look for the colleague with the
    longest tasklet list; if that list is at least 2 longer than its own, it marks that
    colleague's first unmarked tasklet. The owner, on reaching a marked tasklet, hands it over
    instead of calling it; a tasklet never runs on two threads at once.
    """

    def __init__(self, workers: list[CooperativeWorker]):
        self.workers = workers
        self._lock = threading.Lock()
        self.steals = 0

    def dismissed(self, worker: CooperativeWorker, t: ProcessorTasklet) -> None:
        """``worker`` leaves ``t``, finished or marked for stealing: remove it from its list and
        hand it over if marked. Under the lock, so `release_marks` always finds a marked
        tasklet in its owner's list and never races a handover."""
        with self._lock:
            thief = t.steal_to
            if thief is None and not t.is_done:
                return  # the thief released its mark (job torn down): the owner keeps it
            worker.tasklets.remove(t)
            if thief is not None:  # marked: hand it over (finished ones just release the mark)
                t.steal_to = None
                thief.expected -= 1
                if not t.is_done:
                    thief.incoming.append(t)
                    self.steals += 1
                return
            self._try_steal(worker)

    def _try_steal(self, thief: CooperativeWorker) -> None:
        mine = len(thief.tasklets) + len(thief.incoming) + thief.expected
        victim = max((w for w in self.workers if w is not thief), key=lambda w: len(w.tasklets), default=None)
        if victim is None or len(victim.tasklets) - mine < 2:
            return
        for t in list(victim.tasklets):
            if t.steal_to is None and not t.is_done:
                t.steal_to = thief
                thief.expected += 1
                return

    def release_marks(self, worker: CooperativeWorker) -> None:
        with self._lock:
            worker.expected = 0
            for w in self.workers:
                for t in list(w.tasklets):
                    if t.steal_to is worker:
                        t.steal_to = None


def share_work(workers: list[CooperativeWorker]) -> None:
    """Turn Jet's historical work stealing on among ``workers``."""
    stealing = WorkStealing(workers)
    for w in workers:
        w.stealing = stealing
