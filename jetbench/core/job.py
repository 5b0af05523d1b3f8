"""Job: the handle `ExecutionService.submit` returns, and the shared state of a running job.

A job knows its tasklets and workers only through what they report (`ProcessorTasklet.statistics`,
`JobWorker.statistics`), so `Job.metrics` is a snapshot built here without reading their insides.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .clock import SYSTEM_CLOCK, Clock
from .errors import (
    JetbenchError,
    JobCancelled,
    JobError,
    drop_duplicate_generated_frames,
    failure_report,
)
from .idle import Idler
from .job_handle import JobHandle, JobStatus
from .metrics import JobMetrics, WorkerStatistics
from .sampler import MetricsSampler
from .tasklet import ProcessorTasklet
from .trace import (
    DEFAULT_TRACE_CAPACITY,
    Lane,
    Trace,
    TracedWorker,
    TraceError,
    check_capacity,
    lane_of,
)
from .views import view

if TYPE_CHECKING:
    from .dag import DAG
    from .idle import IdleConfig
    from .plan import JobPlan
    from .snapshot_tasklet import SnapshotSetup
    from .worker import BlockingWorker

#: How long an interrupted wait (`Job.join`, `ExecutionService.run`) waits for the cancelled
#: job's threads to end before letting the interrupt go on: cooperative workers leave within a
#: round; only a processor call that does not return can hold one longer.
STOP_GRACE_S = 5.0


class JobWorker(TracedWorker, Protocol):
    """What a job, and whoever reads ``job.workers``, sees of the workers running it
    (``worker.CooperativeWorker`` and ``worker.BlockingWorker``): what a trace reads of them
    (`TracedWorker`: index, kind, thread, the trace ring) and the rest."""

    @property
    def idler(self) -> Idler: ...

    @property
    def iteration_count(self) -> int: ...

    @property
    def idle_count(self) -> int: ...

    @property
    def cpu_time_s(self) -> float: ...

    def statistics(self) -> WorkerStatistics: ...

    def start_trace(self, capacity: int) -> None: ...

    def stop_trace(self) -> None: ...


class JobService(Protocol):
    """What a job asks of the service that runs it (`jetbench.core.execution.ExecutionService`
    is one): its clock and thread count, whether it runs in step mode, its idle settings (a
    dashboard tunes them while the job runs), and, for a job that restarts
    (`jetbench.core.snapshot.FaultTolerantJob`), a new plan of its DAG and its launch on new
    workers. A protocol, so that this module needs nothing from the service's, which imports it."""

    clock: Clock
    cooperative_threads: int
    step: bool
    idle: IdleConfig

    def plan(self, dag: DAG, blocking: dict[int, BlockingWorker], snapshots: SnapshotSetup | None = None) -> JobPlan:
        """Plan ``dag``; a blocking tasklet's outbox waits on the worker ``blocking`` will name."""
        ...

    def launch(self, job: Job, plan: JobPlan, blocking: dict[int, BlockingWorker]) -> None:
        """Give ``plan``'s tasklets to new workers of ``job`` and start them."""
        ...

    def set_idle(self, min_idle_us: float | None = None, max_idle_us: float | None = None) -> None: ...

    def set_idle_strategy(self, strategy: str) -> None: ...


class Job(JobHandle):
    """A submitted DAG running on background threads.

    ``join()`` waits and returns `result` (or raises `JobError` / `JobCancelled`); ``cancel()``
    makes every tasklet leave on its next turn. When ``join`` returns, no thread of the job is
    left alive.
    """

    def __init__(self, name: str, clock: Clock = SYSTEM_CLOCK):
        super().__init__(name, clock.monotonic())
        self.clock = clock
        self.tasklets: list[ProcessorTasklet] = []
        self.workers: list[JobWorker] = []
        #: the DAG's edges as ``(source vertex, destination vertex, destination ordinal)``, from
        #: the job's plan: maps a tasklet's inbound ordinal to its edge in the metrics
        self.edges: tuple[tuple[str, str, int], ...] = ()
        self._live_workers = 0
        self._result_fn: Callable[[], Any] | None = None
        #: read by every worker each round; set on failure or cancellation
        self.terminating = False
        #: the service running the job (its idle settings can change while it runs)
        self.service: JobService | None = None
        #: a MetricsSampler recording this job's metrics over time, if one was asked for
        self.sampler: MetricsSampler | None = None
        #: step mode only: the gate its workers wait at (`jetbench.core.stepping.Stepper`; typed
        #: loosely because that module imports this one)
        self.stepper: Any = None
        self._stepper_ready = threading.Event()
        #: step mode: join() or a failure let the job run freely (a restart's workers too)
        self.runs_freely = False

    # -- public --------------------------------------------------------------------------------

    def _now(self) -> float:
        return self.clock.monotonic()

    def join(self, timeout: float | None = None, progress: bool | None = None) -> Any:
        """Wait for the job; return its result, or raise `JobError`/`JobCancelled`/`JobTimeout`.

        ``progress`` goes to the registered waiter (`register_waiter`): in a notebook or a
        terminal, None shows a progress line unless it is turned off, False never, True always.

        If the wait itself is interrupted (KeyboardInterrupt: Stop in a notebook, Ctrl-C in a
        script) or fails, the job is cancelled and its threads are waited for (at most
        `STOP_GRACE_S`) before the exception goes on: no job outlives the wait for it. A
        `JobTimeout` leaves the job running: the caller holds its handle.
        """
        self.runs_freely = True
        if self.stepper is not None:  # step mode: from now on the job runs freely
            self.stepper.run_free()
        return super().join(timeout, progress)

    def _after_end(self) -> None:
        for worker in self.workers:
            worker.thread.join()
        if self.sampler is not None:
            self.sampler.join()

    def cancel(self) -> None:
        """Ask every tasklet to leave on its next turn; ``join()`` then raises `JobCancelled`."""
        self._fail(JobCancelled(f"job {self.name!r} was cancelled"), JobStatus.CANCELLED)

    def stop(self, timeout: float | None = STOP_GRACE_S) -> bool:
        """Cancel the job and wait (at most ``timeout`` seconds) until none of its threads is
        left; True if none is. A thread stuck in a call that never returns (a blocking
        processor) cannot be ended from outside: it is named by `live_threads`."""
        self.cancel()
        deadline = None if timeout is None else time.monotonic() + timeout
        me = threading.current_thread()
        for thread in self.live_threads():
            if thread is me:
                continue
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not self.live_threads()

    def suspend(self, timeout: float | None = 30.0) -> None:
        """Take a terminal snapshot and stop every thread of the job (Jet's ``suspend``); only a
        job with a processing guarantee can (`jetbench.core.snapshot.FaultTolerantJob`)."""
        raise JetbenchError(f"job {self.name!r} takes no snapshots (processing_guarantee='none'), so it cannot be "
                            "suspended; submit it with JobConfig(processing_guarantee='exactly_once') or "
                            "'at_least_once'")

    def resume(self) -> None:
        """Go on from the snapshot ``suspend()`` took; only a suspended job can."""
        raise JetbenchError(f"job {self.name!r} is {self._status.value}: only a suspended job resumes")

    def live_threads(self) -> list[threading.Thread]:
        """The job's worker and sampler threads still alive."""
        threads = [w.thread for w in self.workers]
        if self.sampler is not None:
            threads.append(self.sampler.thread)
        return [t for t in threads if t.is_alive()]

    def _stuck_note(self) -> str:
        names = ", ".join(t.name for t in self.live_threads())
        return (f"jetbench: job {self.name!r} was cancelled, but after {STOP_GRACE_S:g} s these threads "
                f"are still in a call that has not returned: {names}")

    def metrics(self) -> JobMetrics:
        """A frozen snapshot of every tasklet's and worker's counters."""
        return JobMetrics(
            self.name,
            self._status.value,
            self.elapsed,
            tuple(t.statistics() for t in list(self.tasklets)),
            tuple(w.statistics() for w in list(self.workers)),
            self.edges,
        )

    def trace(self, seconds: float | None = None, capacity: int | None = None) -> Trace:
        """What this job's workers recorded: every tasklet call and park (`jetbench.core.trace`).

        Without ``seconds``, the rings of a job submitted on ``ExecutionService(trace=True)`` as
        they are now (the whole job, once it ended, as far as the rings hold). With ``seconds``,
        record that window of the running job, then stop (``capacity`` events per worker,
        `DEFAULT_TRACE_CAPACITY` unless given); this call waits for it, or for the job's end if
        that comes first.
        """
        if seconds is None:
            if not any(w.trace_events is not None for w in self.workers):
                raise TraceError(f"job {self.name!r} recorded no trace: submit it on ExecutionService(trace=True) "
                                 "and call job.trace(), or call job.trace(seconds=...) while it runs")
            return Trace.of(self.name, self.workers)
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
            raise JetbenchError(f"job.trace(seconds=...) takes a number of seconds > 0, got {seconds!r}")
        size = DEFAULT_TRACE_CAPACITY if capacity is None else check_capacity("capacity", capacity)
        if self.is_done:
            raise TraceError(f"job {self.name!r} has ended ({self._status.value}): job.trace(seconds=...) records "
                             "a window of a running job; to trace a whole job, submit it on "
                             "ExecutionService(trace=True) and call job.trace() once it ends")
        since = self.clock.monotonic_ns()
        started = [w for w in self.workers if w.trace_events is None]
        for w in started:
            w.start_trace(size)
        try:
            self._done.wait(seconds)
        finally:
            lanes = [lane for lane in map(lane_of, self.workers) if lane is not None]
            for w in started:
                w.stop_trace()
        # workers that were recording already (trace=True) keep their ring: only the window is taken
        return Trace(self.name, [Lane(lane.worker, lane.kind, tuple(e for e in lane.events if e.start_ns >= since),
                                      lane.capacity, lane.dropped) for lane in lanes])

    def step(self) -> Any:
        """Step mode (``ExecutionService(step=True)``): run one round on every worker, one worker
        after the other, and return what each tasklet did (`jetbench.core.stepping.StepReport`)."""
        if self.stepper is None and self.service is not None and self.service.step:
            # a job with a guarantee starts its workers on its snapshot coordinator's thread
            self._stepper_ready.wait(STOP_GRACE_S)
        if self.stepper is None:
            raise JetbenchError(f"job.step(): job {self.name!r} was not submitted in step mode; submit it on "
                                "ExecutionService(step=True, clock=MockClock()) to run it round by round")
        return self.stepper.step()

    def timeline(self, **kwargs: Any) -> Any:
        """The notebook timeline of this job's workers (`jetbench.notebook.timeline.Timeline`): live
        over a sliding window while the job runs (recording from now on if it was not), the whole
        recording once it has ended (which needs ``ExecutionService(trace=True)``)."""
        return view("timeline")(self, **kwargs)

    def dashboard(self, **kwargs: Any) -> Any:
        """The live notebook dashboard of this job (``jetbench.notebook.Dashboard``)."""
        return view("dashboard")(self, **kwargs)

    def metrics_frame(self, **kwargs: Any) -> Any:
        """The recorded metrics as a pandas DataFrame (see ``jetbench.frames``)."""
        return view("metrics_frame")(self, **kwargs)

    def plot_metrics(self, **kwargs: Any) -> Any:
        """A matplotlib figure of the recorded metrics, for when no live front end exists."""
        return view("plot_metrics")(self, **kwargs)

    def __repr__(self) -> str:
        return f"Job({self.name!r}, {self._status.value}, {len(self.tasklets)} tasklets)"

    # -- engine side ---------------------------------------------------------------------------

    def record_failure(self, exc: BaseException, tasklet: ProcessorTasklet | None, during: str) -> None:
        """First failure wins; the job is torn down."""
        where = f"vertex {tasklet.vertex_name!r} instance {tasklet.index}" if tasklet else "the job"
        # a processor that noted no failing item: report what is left in its inbox, if anything
        left = list(tasklet.inbox) if tasklet is not None and during == "process" else None
        drop_duplicate_generated_frames(exc)
        kind, item, frame, details = failure_report(exc, left)
        error = JobError(
            "\n".join([f"job {self.name!r} failed in {where} during {during}: {type(exc).__name__}: {exc}",
                       *details]),
            vertex=tasklet.vertex_name if tasklet else None,
            instance=tasklet.index if tasklet else None,
        )
        error.item, error.item_kind, error.user_frame = item, kind or None, frame
        error.__cause__ = exc
        self._fail(error, JobStatus.FAILED)

    def _fail(self, error: JobError, status: JobStatus) -> None:
        with self._lock:
            if self._failure is not None or self._done.is_set():
                return
            self._failure = error
            self._status = status
            self.terminating = True
            self.runs_freely = True
        if self.stepper is not None:  # step mode: no worker stays at its gate, none waits to start
            self.stepper.run_free()

    def _start(self, workers: Sequence[JobWorker], result_fn: Callable[[], Any]) -> None:
        self.workers = list(workers)
        self._live_workers = len(workers)
        self._result_fn = result_fn
        if not workers:
            self._finish()

    def _worker_exited(self) -> None:
        with self._lock:
            self._live_workers -= 1
            last = self._live_workers == 0
        if last:
            self._finish()

    def _finish(self) -> None:
        if self._failure is None and self._result_fn is not None:
            try:
                self._result = self._result_fn()
            except Exception as exc:  # a sink's result_part/merge failed
                self.record_failure(exc, None, "result collection")
        with self._lock:
            if self._failure is None:
                self._status = JobStatus.COMPLETED
            self.end_time = self.clock.monotonic()
            self._done.set()
            listeners, self._listeners = self._listeners, []
        for fn in listeners:
            fn(self)
