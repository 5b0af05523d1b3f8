"""The cooperative execution service: worker threads calling tasklets round-robin.

Each job gets its own workers, which end when the job ends, so no thread outlives a job:
``cooperative_threads`` workers share the cooperative tasklets (dealt round-robin, the cursor
kept across jobs as Jet does), and every non-cooperative tasklet gets a dedicated thread.
A worker backs off through its idler only after a full round in which no tasklet progressed.

>>> from jetbench import DAG, Edge, ExecutionService
>>> from jetbench.processors import items_source, map_processor, collect_sink
>>> dag = DAG()
>>> src = dag.new_vertex("src", items_source(range(5)))
>>> sq = dag.new_vertex("square", map_processor(lambda x: x * x))
>>> out = dag.new_vertex("out", collect_sink())
>>> _ = dag.edge(Edge.between(src, sq)).edge(Edge.between(sq, out))
>>> job = ExecutionService().submit(dag)
>>> sorted(job.join())
[0, 1, 4, 9, 16]
"""

from __future__ import annotations

import itertools
import threading
import time
import weakref
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .clock import SYSTEM_CLOCK, Clock
from .dag import DAG
from .errors import DagError, JetbenchError, JobError, JobTimeout
from .idle import IDLE_STRATEGIES, IdleConfig, Idler, make_idler
from .job import Job, JobStatus
from .job_config import JobConfig
from .metrics import WorkerStatistics
from .plan import JobPlan, build_plan
from .sampler import MetricsSampler
from .tasklet import DONE_STATE, ProcessorTasklet, TaskletAborted

if TYPE_CHECKING:
    from .snapshot_tasklet import SnapshotSetup

_job_ids = itertools.count(1)


def _thread_cpu_s(thread: threading.Thread | None) -> float | None:
    """CPU seconds used by a live thread, read from another thread (Linux), else None."""
    if thread is None or thread.ident is None or not thread.is_alive():
        return None
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    except (AttributeError, OSError):
        return None


class _Worker:
    """What cooperative and blocking workers share: a thread, counters and the call loop body."""

    kind = "cooperative"

    def __init__(self, index: int, job: Job, idle_config: IdleConfig, slow_call_ns: int, name: str,
                 idle_strategy: str = "backoff", clock: Clock = SYSTEM_CLOCK):
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
            self.job._worker_exited()

    def run(self) -> None:
        raise NotImplementedError

    def _call(self, t: ProcessorTasklet) -> int:
        """One timed call; exceptions fail the job (or are the job's own teardown)."""
        now_ns = self._now_ns
        t0 = now_ns()
        try:
            r = t.call()
        except TaskletAborted:
            r = 0
        except Exception as exc:
            self.job.record_failure(exc, t, t.state.name.lower())
            r = 0
        dt = now_ns() - t0
        t.calls += 1
        t.busy_ns += dt
        if dt > self.slow_call_ns and t.cooperative:
            t.slow_calls += 1
            if dt > t.max_call_ns:
                t.max_call_ns = dt
        if r:
            t.progress_calls += 1
        return r

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


class CooperativeWorker(_Worker):
    """Calls its tasklets round-robin; idles with exponential backoff after an idle round."""

    def __init__(self, index: int, job: Job, idle_config: IdleConfig, slow_call_ns: int, name: str,
                 idle_strategy: str = "backoff", clock: Clock = SYSTEM_CLOCK):
        super().__init__(index, job, idle_config, slow_call_ns, name, idle_strategy, clock)
        self.stealing: WorkStealing | None = None  # set when work stealing is on
        self.incoming: deque[ProcessorTasklet] = deque()
        self.expected = 0  # tasklets marked for stealing by this worker, not yet handed over

    def run(self) -> None:
        job = self.job
        tasklets = self.tasklets
        stealing = self.stealing
        call = self._call
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
                    self.idler.after_progress(tasklets)
            elif tasklets or self.expected:
                idle_round += 1
                self.idle_count += 1
                self.idler.idle(idle_round, tasklets)


class BlockingWorker(_Worker):
    """A dedicated thread for one non-cooperative tasklet, with its own idler."""

    kind = "blocking"

    def run(self) -> None:
        job = self.job
        t = self.tasklets[0]
        idle_round = 0
        while not job.terminating:
            r = self._call(t)
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
                self.idler.idle(idle_round)
        self._abort_all()

    def wait_for_room(self, t: ProcessorTasklet) -> None:
        """Blocking-outbox wait: flush; if nothing moved, idle; leave if the job is torn down."""
        idle_round = 0
        while not t._flush():
            if self.job.terminating:
                raise TaskletAborted()
            idle_round += 1
            self.idler.idle(idle_round)


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


class ExecutionService:
    """Runs DAGs on cooperative worker threads; the idle bounds can change while jobs run.

    Parameters mirror Jet's: ``cooperative_threads`` workers (also the default vertex
    parallelism), park times from ``min_idle_us`` doubling to ``max_idle_us`` after idle rounds,
    ``work_stealing`` (Jet's old rule, off by default), ``slow_call_ms`` (a cooperative call
    slower than this is counted as slow; Jet's rule of thumb is 1 ms), ``outbox_capacity`` (items
    per outbox bucket = the per-call emit budget), ``idle`` ("backoff", Jet's blind exponential
    backoff, or "timer", which sleeps until the earliest time a tasklet says it can progress and
    is woken by other threads handing it work), ``metrics_interval_s`` (record every job's
    metrics at this interval in ``job.sampler``; off by default), ``clock`` (what workers, idlers,
    jobs and processors read the time from and sleep on: the real clock unless a test passes a
    `jetbench.core.clock.MockClock`).
    """

    def __init__(
        self,
        cooperative_threads: int = 1,
        min_idle_us: float = 25,
        max_idle_us: float = 500,
        work_stealing: bool = False,
        slow_call_ms: float = 1.0,
        outbox_capacity: int = 1024,
        noncooperative_min_idle_us: float = 25,
        noncooperative_max_idle_us: float = 5000,
        metrics_interval_s: float | None = None,
        idle: str = "backoff",
        clock: Clock = SYSTEM_CLOCK,
    ):
        if isinstance(cooperative_threads, bool) or not isinstance(cooperative_threads, int) or cooperative_threads < 1:
            raise JetbenchError(f"cooperative_threads must be an int >= 1, got {cooperative_threads!r}")
        if isinstance(outbox_capacity, bool) or not isinstance(outbox_capacity, int) or outbox_capacity < 1:
            raise JetbenchError(f"outbox_capacity must be an int >= 1, got {outbox_capacity!r}")
        self.cooperative_threads = cooperative_threads
        self.idle = IdleConfig(min_idle_us, max_idle_us)
        self.noncooperative_idle = IdleConfig(noncooperative_min_idle_us, noncooperative_max_idle_us)
        self.work_stealing = bool(work_stealing)
        self.slow_call_ns = int(slow_call_ms * 1e6)
        self.outbox_capacity = outbox_capacity
        self.metrics_interval_s = metrics_interval_s
        if idle not in IDLE_STRATEGIES:
            raise JetbenchError(f"idle must be one of {sorted(IDLE_STRATEGIES)}, got {idle!r}")
        self.idle_strategy = idle
        self.clock = clock
        self._cursor = 0
        self._lock = threading.Lock()
        self._running: weakref.WeakSet[Job] = weakref.WeakSet()

    def set_idle(self, min_idle_us: float | None = None, max_idle_us: float | None = None) -> None:
        """Change the cooperative idle bounds; running workers use them from their next park."""
        self.idle.set(min_idle_us, max_idle_us)

    def set_idle_strategy(self, strategy: str) -> None:
        """Switch the cooperative idle strategy ("backoff" or "timer"), also on running workers."""
        if strategy not in IDLE_STRATEGIES:
            raise JetbenchError(f"idle strategy must be one of {sorted(IDLE_STRATEGIES)}, got {strategy!r}")
        with self._lock:
            self.idle_strategy = strategy
            jobs = list(self._running)
        for job in jobs:
            for w in job.workers:
                if isinstance(w, CooperativeWorker) and w.idler.name != strategy:
                    w.idler = w.idler.replaced_by(make_idler(strategy, self.idle, self.clock))

    def _forget(self, job: Job) -> None:
        with self._lock:
            self._running.discard(job)

    def submit(self, dag: Any, name: str | None = None, config: JobConfig | None = None) -> Job:
        """Start ``dag`` (a `DAG`, or anything with ``to_dag()``) on background threads; return its `Job`.

        ``config`` (a `JobConfig`) asks for a processing guarantee: the job is then a
        `jetbench.core.snapshot.FaultTolerantJob`, which takes snapshots and restarts from them.
        Without one (or with ``"none"``) nothing of that is planned or run.
        """
        dag = _as_dag(dag)
        if config is not None and not isinstance(config, JobConfig):
            raise JetbenchError(f"config must be a JobConfig, got {config!r}")
        if config is not None and (config.snapshots or config.initial_snapshot is not None):
            if config.resume and name is None:
                raise JetbenchError("JobConfig(resume=True) resumes a job by its name: submit(dag, name=..., config=...)")
            return self._submit_fault_tolerant(dag, name or f"job-{next(_job_ids)}", config)
        job = Job(name or f"job-{next(_job_ids)}", self.clock)
        job.service = self
        blocking: dict[int, BlockingWorker] = {}  # by id(tasklet): whose outbox waits on which thread
        try:
            plan = self._plan(dag, blocking)
        except JobError as exc:  # a vertex supplier raised: the job fails and join() raises it
            job._fail(exc, JobStatus.FAILED)
            job._start([], lambda: None)
            return job
        except DagError as exc:  # the message says it all: raised from here, not from inside validate()
            raise exc.with_traceback(None)  # noqa: B904 - the same exception, with a shorter traceback
        self._launch(job, plan, blocking)
        return job

    def _plan(self, dag: DAG, blocking: dict[int, BlockingWorker], snapshots: SnapshotSetup | None = None) -> JobPlan:
        """Plan ``dag``; a blocking tasklet's outbox waits on the worker ``blocking`` will name."""

        def wait_for_room(t: ProcessorTasklet) -> None:
            blocking[id(t)].wait_for_room(t)

        return build_plan(dag, self.cooperative_threads, self.outbox_capacity, wait_for_room, self.clock, snapshots)

    def _launch(self, job: Job, plan: JobPlan, blocking: dict[int, BlockingWorker]) -> None:
        """Give ``plan``'s tasklets to new workers of ``job`` and start them."""
        job.tasklets = list(plan.tasklets)
        job.edges = plan.edges
        cooperative = self._deal_cooperative(job, plan.tasklets)
        if self.work_stealing and len(cooperative) > 1:
            _share_work(cooperative)
        workers: list[_Worker] = [*cooperative, *self._dedicate_threads(job, plan.tasklets, blocking)]
        for w in workers:
            w.colleagues = [c for c in cooperative if c is not w]
        with self._lock:
            self._running.add(job)
        job.add_done_listener(self._forget)
        job._start(workers, plan.result)
        if self.metrics_interval_s:
            job.sampler = MetricsSampler(job, self.metrics_interval_s)
        _start_threads(job, workers)

    def _submit_fault_tolerant(self, dag: DAG, name: str, config: JobConfig) -> Job:
        from .snapshot import FaultTolerantJob, open_store

        store = open_store(config.snapshot_store)
        initial = store.load(f"job/{name}") if config.resume else None  # what a killed run of it left
        if initial is None and config.initial_snapshot is not None:
            initial = store.load(config.initial_snapshot)
            if initial is None:
                known = ", ".join(map(repr, store.owners())) or "none"
                raise JetbenchError(f"no snapshot named {config.initial_snapshot!r} in {store.path!r} "
                                    f"(it holds: {known})")
        job = FaultTolerantJob(name, self.clock, self, dag, config, store, initial)
        try:
            plan = job.prepare(initial)
        except DagError as exc:
            raise exc.with_traceback(None)  # noqa: B904 - the same exception, with a shorter traceback
        job.start(plan)
        return job

    def _deal_cooperative(self, job: Job, tasklets: Sequence[ProcessorTasklet]) -> list[CooperativeWorker]:
        """Deal the cooperative tasklets round-robin over new cooperative workers, continuing from
        where the previous job's deal stopped (as Jet does); return the workers that got any."""
        workers = [
            CooperativeWorker(i, job, self.idle, self.slow_call_ns, f"jetbench.{job.name}.cooperative-{i}",
                              self.idle_strategy, self.clock)
            for i in range(self.cooperative_threads)
        ]
        with self._lock:
            for t in tasklets:
                if t.cooperative:
                    w = workers[self._cursor % len(workers)]
                    self._cursor += 1
                    t.worker_index = w.index
                    w.tasklets.append(t)
        return [w for w in workers if w.tasklets]

    def _dedicate_threads(self, job: Job, tasklets: Sequence[ProcessorTasklet],
                          blocking: dict[int, BlockingWorker]) -> list[BlockingWorker]:
        """A `BlockingWorker` per non-cooperative tasklet, registered in ``blocking`` by tasklet."""
        workers = []
        for k, t in enumerate(x for x in tasklets if not x.cooperative):
            w = BlockingWorker(k, job, self.noncooperative_idle, self.slow_call_ns,
                               f"jetbench.{job.name}.blocking-{k}", clock=self.clock)
            w.tasklets.append(t)
            t.worker_index = -1 - k
            blocking[id(t)] = w
            workers.append(w)
        return workers

    def run(self, dag: Any, timeout: float | None = None, progress: bool | None = None,
            config: JobConfig | None = None) -> Any:
        """Submit and join: return the job's result (``progress`` as for `Job.join`, ``config``
        as for `submit`).

        Nobody else holds the job, so it never outlives this call: an interrupt or any other
        exception while waiting cancels it (see `Job.join`), and so does running out of
        ``timeout`` (`JobTimeout`), each after waiting for the job's threads to end.
        """
        job = self.submit(dag, config=config)
        try:
            return job.join(timeout, progress=progress)
        except JobTimeout as exc:
            job._stop_after(exc)
            raise

    def __repr__(self) -> str:
        return (
            f"ExecutionService(cooperative_threads={self.cooperative_threads}, "
            f"min_idle_us={self.idle.min_idle_us:g}, max_idle_us={self.idle.max_idle_us:g}, "
            f"work_stealing={self.work_stealing})"
        )


def _as_dag(dag: Any) -> DAG:
    """``dag`` itself, or what its ``to_dag()`` gives (a Pipeline); `JetbenchError` otherwise."""
    if not isinstance(dag, DAG) and hasattr(dag, "to_dag"):
        dag = dag.to_dag()
    if not isinstance(dag, DAG):
        raise JetbenchError(f"submit() takes a DAG or a Pipeline, got {dag!r}")
    return dag


def _share_work(workers: list[CooperativeWorker]) -> None:
    """Turn Jet's historical work stealing on among ``workers``."""
    stealing = WorkStealing(workers)
    for w in workers:
        w.stealing = stealing


def _start_threads(job: Job, workers: list[_Worker]) -> None:
    for w in workers:
        w.thread.start()
    if job.sampler is not None:
        job.sampler.start()
