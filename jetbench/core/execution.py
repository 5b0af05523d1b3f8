"""The cooperative execution service: plans a job and hands its tasklets to worker threads.

Each job gets its own workers (`jetbench.core.worker`), which end when the job ends, so no thread
outlives a job: ``cooperative_threads`` workers share the cooperative tasklets (dealt
round-robin, the cursor kept across jobs as Jet does), and every non-cooperative tasklet gets a
dedicated thread. A worker backs off through its idler only after a full round in which no
tasklet progressed.

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
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .clock import SYSTEM_CLOCK, Clock
from .dag import DAG
from .errors import DagError, JetbenchError, JobError, JobTimeout
from .idle import IDLE_STRATEGIES, IdleConfig, make_idler
from .job import Job
from .job_config import JobConfig
from .job_handle import JobStatus
from .plan import JobPlan, build_plan
from .sampler import MetricsSampler
from .tasklet import ProcessorTasklet
from .trace import DEFAULT_TRACE_CAPACITY, check_capacity
from .worker import BlockingWorker, CooperativeWorker, Worker, share_work

if TYPE_CHECKING:
    from .snapshot_tasklet import SnapshotSetup

_job_ids = itertools.count(1)


class ExecutionService:
    """Runs DAGs on cooperative worker threads; the idle bounds can change while jobs run.

    Parameters mirror Jet's: ``cooperative_threads`` workers (also the default vertex
    parallelism), park times from ``min_idle_us`` doubling to ``max_idle_us`` after idle rounds,
    ``work_stealing`` (Jet's old rule, off by default), ``slow_call_ms`` (a cooperative call
    slower than this is counted as slow; Jet's rule of thumb is 1 ms), ``outbox_capacity`` (items
    per outbox bucket = the per-call emit budget), ``idle`` ("backoff", Jet's blind exponential
    backoff, or "timer", which sleeps until the earliest time a tasklet says it can progress and
    is woken by other threads handing it work), ``noncooperative_idle`` (how the dedicated thread
    of a non-cooperative tasklet waits: "timer", the default, sleeps until a producer offers to
    its queues, capped at ``noncooperative_max_idle_us``; "backoff" polls as Jet's threads do,
    the park doubling from ``noncooperative_min_idle_us`` to that cap), ``metrics_interval_s`` (record every job's
    metrics at this interval in ``job.sampler``; off by default), ``clock`` (what workers, idlers,
    jobs and processors read the time from and sleep on: the real clock unless a test passes a
    `jetbench.core.clock.MockClock`), ``trace`` (record every tasklet call and every park of each
    worker of each job into a ring of ``trace_capacity`` events per worker, read by ``job.trace()``:
    `jetbench.core.trace`; off by default, and then it costs nothing), ``step`` (step mode, for teaching:
    every job records and runs one round per worker at each ``job.step()``, nothing in between;
    ``job.join()`` lets it run freely: `jetbench.core.stepping`; meant for a `MockClock`).
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
        noncooperative_idle: str = "timer",
        trace: bool = False,
        trace_capacity: int = DEFAULT_TRACE_CAPACITY,
        step: bool = False,
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
        self.idle_strategy = _idle_strategy("idle", idle)
        self.noncooperative_idle_strategy = _idle_strategy("noncooperative_idle", noncooperative_idle)
        self.clock = clock
        if not isinstance(trace, bool):
            raise JetbenchError(f"trace must be True or False, got {trace!r}")
        if not isinstance(step, bool):
            raise JetbenchError(f"step must be True or False, got {step!r}")
        #: step mode: each job's workers run one round per ``job.step()`` (and record it)
        self.step = step
        #: events per worker of each job's trace ring; 0 when not tracing
        self.trace_capacity = check_capacity("trace_capacity", trace_capacity) if trace or step else 0
        self._cursor = 0
        self._lock = threading.Lock()
        self._running: weakref.WeakSet[Job] = weakref.WeakSet()

    def set_idle(self, min_idle_us: float | None = None, max_idle_us: float | None = None) -> None:
        """Change the cooperative idle bounds; running workers use them from their next park."""
        self.idle.set(min_idle_us, max_idle_us)

    def set_idle_strategy(self, strategy: str) -> None:
        """Switch the cooperative idle strategy ("backoff" or "timer"), also on running workers."""
        _idle_strategy("idle strategy", strategy)
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
            plan = self.plan(dag, blocking)
        except JobError as exc:  # a vertex supplier raised: the job fails and join() raises it
            job._fail(exc, JobStatus.FAILED)
            job._start([], lambda: None)
            return job
        except DagError as exc:  # the message says it all: raised from here, not from inside validate()
            raise exc.with_traceback(None)  # noqa: B904 - the same exception, with a shorter traceback
        self.launch(job, plan, blocking)
        return job

    def plan(self, dag: DAG, blocking: dict[int, BlockingWorker], snapshots: SnapshotSetup | None = None) -> JobPlan:
        """Plan ``dag``; a blocking tasklet's outbox waits on the worker ``blocking`` will name."""

        def wait_for_room(t: ProcessorTasklet) -> None:
            blocking[id(t)].wait_for_room(t)

        return build_plan(dag, self.cooperative_threads, self.outbox_capacity, wait_for_room, self.clock, snapshots)

    def launch(self, job: Job, plan: JobPlan, blocking: dict[int, BlockingWorker]) -> None:
        """Give ``plan``'s tasklets to new workers of ``job`` and start them."""
        job.tasklets = list(plan.tasklets)
        job.edges = plan.edges
        cooperative = self._deal_cooperative(job, plan.tasklets)
        if self.work_stealing and len(cooperative) > 1:
            share_work(cooperative)
        workers: list[Worker] = [*cooperative, *self._dedicate_threads(job, plan.tasklets, blocking)]
        for w in workers:
            w.colleagues = [c for c in cooperative if c is not w]
        with self._lock:
            self._running.add(job)
        job.add_done_listener(self._forget)
        job._start(workers, plan.result)
        if self.metrics_interval_s:
            job.sampler = MetricsSampler(job, self.metrics_interval_s)
        if self.step and not job.runs_freely:  # nothing runs until the first job.step()
            from .stepping import Stepper

            stepper = Stepper(job, workers, lambda: _start_threads(job, workers))
            for w in workers:
                w.gate = stepper
            job.stepper = stepper
            job._stepper_ready.set()
            return
        _start_threads(job, workers)

    def _submit_fault_tolerant(self, dag: DAG, name: str, config: JobConfig) -> Job:
        from .snapshot import start_fault_tolerant

        try:
            return start_fault_tolerant(self, dag, name, config)
        except DagError as exc:
            raise exc.with_traceback(None)  # noqa: B904 - the same exception, with a shorter traceback

    def _deal_cooperative(self, job: Job, tasklets: Sequence[ProcessorTasklet]) -> list[CooperativeWorker]:
        """Deal the cooperative tasklets round-robin over new cooperative workers, continuing from
        where the previous job's deal stopped (as Jet does); return the workers that got any."""
        workers = [
            CooperativeWorker(i, job, self.idle, self.slow_call_ns, f"jetbench.{job.name}.cooperative-{i}",
                              self.idle_strategy, self.clock, self.trace_capacity)
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
                               f"jetbench.{job.name}.blocking-{k}", self.noncooperative_idle_strategy, self.clock,
                               self.trace_capacity)
            w.tasklets.append(t)
            w.wake_on_input()
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


def _idle_strategy(argument: str, value: str) -> str:
    """``value`` if it names an idle strategy, else a `JetbenchError` naming ``argument``."""
    if value not in IDLE_STRATEGIES:
        raise JetbenchError(f"{argument} must be one of {sorted(IDLE_STRATEGIES)}, got {value!r}")
    return value


def _as_dag(dag: Any) -> DAG:
    """``dag`` itself, or what its ``to_dag()`` gives (a Pipeline); `JetbenchError` otherwise."""
    if not isinstance(dag, DAG) and hasattr(dag, "to_dag"):
        dag = dag.to_dag()
    if not isinstance(dag, DAG):
        raise JetbenchError(f"submit() takes a DAG or a Pipeline, got {dag!r}")
    return dag


def _start_threads(job: Job, workers: list[Worker]) -> None:
    for w in workers:
        w.thread.start()
    if job.sampler is not None:
        job.sampler.start()
