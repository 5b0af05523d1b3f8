"""Fault tolerance: the snapshot coordinator and the job that restarts from its snapshots.

A job submitted with a processing guarantee (`JobConfig`) is a `FaultTolerantJob`. Beside its
workers it has one coordinator thread (Jet's master), which:

* every ``snapshot_interval_ms`` starts snapshot *n* (`SnapshotCoordinator.requested_id`) and
  wakes the workers; the tasklets take it as `jetbench.core.snapshot_tasklet` describes and
  report phase 1 with their entries (or that they finished, with their final state);
* once every live tasklet has reported, writes the snapshot to the `SnapshotStore` in one
  transaction (the workers keep running), then opens phase 2 (``snapshot_commit_finish``) and
  waits for it before the next snapshot;
* when a processor raises, lets the execution end (every worker thread gone), then plans the DAG
  again, restores the last good snapshot from the store (from the start if there is none) and
  starts new workers, up to ``max_restarts`` times; then fails the job with every failure;
* when the job ends, forgets its snapshots (``job/<name>`` in the store) and records how it
  ended, in one transaction (`SnapshotStore.finish`).

`start_fault_tolerant` starts such a job: from the snapshot a killed run left (``resume``, as
`SnapshotStore.resume_point` finds it; a job the store records as completed is not run again),
else from ``initial_snapshot``, warning (or refusing, ``on_code_change``) when a vertex's code
differs from the snapshot's (`jetbench.core.code_fingerprint`).

Restored entries go to the instance that owns their key (``hash(key) % parallelism``, as a
partitioned edge routes), a `BroadcastKey` to every instance, and the entries of a vertex some
of whose instances had finished to the instance that saved them.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Any

from .clock import Clock
from .code_fingerprint import changed_parts, vertex_fingerprints
from .dag import DAG
from .errors import JetbenchError, JobCancelled, JobError
from .items import BroadcastKey
from .job import Job, JobService
from .job_config import JobConfig
from .job_handle import JobStatus
from .metrics import JobMetrics, SnapshotStatistics
from .plan import JobPlan
from .processor import Processor
from .snapshot_store import (
    CANCELLED,
    COMPLETED,
    FAILED,
    CodeChangedError,
    JobRecord,
    SnapshotData,
    SnapshotStore,
    SnapshotWarning,
    VertexState,
)
from .snapshot_tasklet import SnapshotSetup, commits_in_phase2
from .tasklet import ProcessorTasklet

__all__ = ["CompletedJob", "FaultTolerantJob", "SnapshotCoordinator", "SnapshotRecord", "open_store",
           "snapshot_support", "start_fault_tolerant"]

_log = logging.getLogger("jetbench.snapshot")

_Key = tuple[str, int]


def snapshot_support(processor: Processor) -> str:
    """``"stateless"``, ``"supported"`` or ``"unsupported"``: how ``processor`` takes part in
    snapshots (its ``snapshot_support``; overriding ``save_to_snapshot`` means supported)."""
    support = processor.snapshot_support
    if not getattr(processor, "replayable", True):  # e.g. a source over a one-shot iterator
        return "unsupported"
    if support == "stateless" and type(processor).save_to_snapshot is not Processor.save_to_snapshot:
        return "supported"
    return support


def open_store(spec: Any) -> SnapshotStore:
    """The `SnapshotStore` ``JobConfig.snapshot_store`` names; None: a `SnapshotStore.private`
    one for the job (never a store the user did not name)."""
    if isinstance(spec, SnapshotStore):
        return spec
    return SnapshotStore.private() if spec is None else SnapshotStore(spec)


class CompletedJob(Job):
    """What ``resume=True`` returns for a job the store records as completed: a `Job` already
    COMPLETED, run by nothing; ``completed_earlier`` is the store's record, ``result`` None (it
    went to the run that completed)."""

    def __init__(self, name: str, clock: Clock, record: JobRecord, store: SnapshotStore):
        super().__init__(name, clock)
        self.completed_earlier = record
        self.store = store
        # what a script reads of a FaultTolerantJob, for one that did nothing in this process
        self.restored_from = 0
        self.restarts = 0
        self.failures: list[JobError] = []
        self.snapshot_history: list[SnapshotRecord] = []
        self._start([], lambda: None)

    def __repr__(self) -> str:
        return f"CompletedJob({self.name!r}, completed earlier at {self.completed_earlier.when} in {self.store.path!r})"


def start_fault_tolerant(service: JobService, dag: DAG, name: str, config: JobConfig) -> Job:
    """Start ``dag`` as the job ``name`` with ``config``'s guarantee (see the module): a
    `FaultTolerantJob` running, or a `CompletedJob` when ``resume`` finds the job completed."""
    store = open_store(config.snapshot_store)
    try:
        owner = f"job/{name}"
        initial: SnapshotData | None = None
        own = False  # starting from the job's own snapshot (its slots are its run's)
        if config.resume:
            initial, record = store.resume_point(owner, stacklevel=5)
            if record is not None and record.state == COMPLETED:
                warnings.warn(f"job {name!r} completed earlier, at {record.when} (as the snapshot store {store.path!r} "
                              f"records), so resume=True does not run it again: the job returned is completed, with "
                              f"no result. To run it again, submit it without resume=True or forget the record: "
                              f"SnapshotStore({store.path!r}).delete({owner!r})", SnapshotWarning, stacklevel=4)
                return CompletedJob(name, service.clock, record, store)
            if initial is None and record is not None and record.state in (FAILED, CANCELLED):
                warnings.warn(f"job {name!r} starts from the beginning: its earlier run {record.state} (at "
                              f"{record.when}, as the snapshot store {store.path!r} records), which dropped its "
                              f"snapshots", SnapshotWarning, stacklevel=4)
            own = initial is not None
        if initial is None and config.initial_snapshot is not None:
            initial = store.load(config.initial_snapshot)
            if initial is None:
                known = ", ".join(map(repr, store.owners())) or "none"
                raise JetbenchError(f"no snapshot named {config.initial_snapshot!r} in {store.path!r} "
                                    f"(it holds: {known})")
            own = config.initial_snapshot == owner
        code = {v.name: vertex_fingerprints(v.supplier) for v in dag.vertices}
        if initial is not None:
            check_code(initial, code, name, store, "the snapshot it resumes from" if config.resume and own
                       else f"snapshot {config.initial_snapshot!r}", config.on_code_change)
        if not own:
            store.begin(owner)
        job = FaultTolerantJob(name, service.clock, service, dag, config, store, initial)
        job.code = code
        plan = job.prepare(initial)
    except BaseException:
        if store.is_private:
            store.remove()
        raise
    job.start(plan)
    return job


def check_code(data: SnapshotData, code: dict[str, dict[str, str]], name: str, store: SnapshotStore, what: str,
               on_change: str) -> None:
    """Compare each vertex's code with the fingerprint ``data`` was taken with: warn, refuse
    (`CodeChangedError`) or allow, as ``on_change`` says. A snapshot without fingerprints (an
    older jetbench's) is not compared."""
    if on_change == "allow" or not data.code:
        return
    changes = {vertex: changed_parts(data.code[vertex], parts) for vertex, parts in code.items()
               if vertex in data.code and data.code[vertex] != parts}
    if not changes:
        return
    listed = "; ".join(f"vertex {vertex!r}: {', '.join(parts)}" for vertex, parts in sorted(changes.items()))
    head = (f"job {name!r}: the code of {len(changes)} vert{'ices' if len(changes) > 1 else 'ex'} differs from when "
            f"{what} in the snapshot store {store.path!r} was taken ({listed})")
    if on_change == "refuse":
        raise CodeChangedError(f"{head}. It was refused (on_code_change='refuse'): run the code that took it, or "
                               f"start the job without the snapshot, or pass on_code_change='allow' if the change "
                               f"is an upgrade its saved state fits")
    warnings.warn(f"{head}. The state saved by the old code goes on with the new, and the output may match "
                  f"neither; JobConfig(on_code_change='refuse') refuses instead, 'allow' (an upgrade) says nothing",
                  SnapshotWarning, stacklevel=5)


@dataclass(frozen=True)
class SnapshotRecord:
    """One snapshot a job took: id, when it started (the job clock), how long until stored,
    bytes per vertex in the store, and whether it was stored."""

    snapshot_id: int
    started: float
    duration_s: float
    sizes: dict[str, int] = field(default_factory=dict)
    success: bool = True


class SnapshotCoordinator:
    """The snapshot state of one execution of a job, shared by its tasklets (`SnapshotContext`)
    and the job's coordinator thread. Tasklets read the ids without a lock and report under it."""

    def __init__(self, tasklets: Sequence[ProcessorTasklet], exactly_once: bool, last_id: int):
        self.exactly_once = exactly_once
        self.requested_id = last_id
        self.phase2_id = last_id
        self.phase2_success = True
        self.cond = threading.Condition()
        self.tasklets: list[ProcessorTasklet] = []
        self.parallelism: dict[str, int] = {}
        self.set_tasklets(tasklets)
        self.phase = 0  # 0 idle, 1 waiting for phase-1 reports, 2 waiting for phase-2 reports
        self.awaited: set[_Key] = set()
        self.entries: dict[_Key, bytes] = {}  # pickled entry lists
        self.finished_entries: dict[_Key, bytes] = {}
        self.started = 0.0
        #: vertices upstream of a higher-priority input (`priority_upstream`): no snapshot starts
        #: before all of their instances finished
        self.postponed_by: set[str] = set()
        #: the id of the terminal snapshot, taken at once when every instance has finished and some
        #: await its phase 2 (`terminal_due`); 0: none yet
        self.terminal_id = 0

    def set_tasklets(self, tasklets: Sequence[ProcessorTasklet]) -> None:
        self.tasklets = list(tasklets)
        for t in tasklets:
            self.parallelism[t.vertex_name] = t.context.total_parallelism
        #: instances that, once finished, await the phase 2 of a snapshot holding their final state
        #: before they close (a transactional sink's last output: `jetbench.core.snapshot_tasklet`)
        self.commit_waiters = [t for t in tasklets
                               if t.context.processing_guarantee != "none" and commits_in_phase2(t.processor)]

    # -- called by tasklets ---------------------------------------------------------------------

    def phase1_done(self, tasklet: ProcessorTasklet, snapshot_id: int, entries: bytes) -> None:
        key = (tasklet.vertex_name, tasklet.index)
        with self.cond:
            if self.phase == 1 and snapshot_id == self.requested_id:
                self.entries[key] = entries
                self._report(key)

    def phase2_done(self, tasklet: ProcessorTasklet, snapshot_id: int) -> None:
        with self.cond:
            if self.phase == 2:
                self._report((tasklet.vertex_name, tasklet.index))

    def finished(self, tasklet: ProcessorTasklet, entries: bytes) -> None:
        key = (tasklet.vertex_name, tasklet.index)
        with self.cond:
            self.finished_entries[key] = entries
            self.awaited.discard(key)
            self.cond.notify_all()  # also what may_start() reads

    def _report(self, key: _Key) -> None:
        """``key`` reported: wake the coordinator once the last awaited one has (a wake-up per
        report made it take the GIL from the workers a dozen times a snapshot)."""
        awaited = self.awaited
        awaited.discard(key)
        if not awaited:
            self.cond.notify_all()

    # -- called by the coordinator, under ``cond`` ----------------------------------------------

    def may_start(self) -> bool:
        """Whether a snapshot may start: every instance of a vertex upstream of a
        higher-priority input has finished (Jet postpones snapshots the same way)."""
        if not self.postponed_by:
            return True
        finished = self.finished_entries
        return all((t.vertex_name, t.index) in finished for t in self.tasklets if t.vertex_name in self.postponed_by)

    def terminal_due(self) -> bool:
        """Whether to store the terminal snapshot now: every instance has finished, some await its
        phase 2 to commit their last output, and none was stored for them yet (or the last try
        could not be stored)."""
        if not self.commit_waiters or (self.terminal_id and (self.phase2_id < self.terminal_id or self.phase2_success)):
            return False
        finished = self.finished_entries
        return all((t.vertex_name, t.index) in finished for t in self.tasklets)

    def start(self, now: float) -> int:
        self.requested_id += 1
        self.phase = 1
        self.started = now
        self.entries = {}
        self.awaited = {(t.vertex_name, t.index) for t in self.tasklets} - set(self.finished_entries)
        return self.requested_id

    def snapshot(self) -> SnapshotData:
        """Snapshot ``requested_id``: each instance's phase-1 entries, or its final state if it
        finished before taking it."""
        vertices: dict[str, VertexState] = {}
        for name, n in self.parallelism.items():
            state = VertexState(n, [b"" for _ in range(n)], set())
            for k in range(n):
                key = (name, k)
                if key in self.entries:
                    state.entries[k] = self.entries[key]
                elif key in self.finished_entries:
                    state.entries[k] = self.finished_entries[key]
                    state.done.add(k)
            vertices[name] = state
        return SnapshotData(self.requested_id, vertices)

    def open_phase2(self, success: bool) -> None:
        self.phase = 2
        self.awaited = set(self.entries) - set(self.finished_entries)
        self.phase2_success = success
        self.phase2_id = self.requested_id


def route_snapshot(data: SnapshotData, dag: DAG, default_parallelism: int
                   ) -> tuple[dict[str, list[list[tuple[Any, Any]]]], dict[str, set[int]]]:
    """Each vertex's entries per new instance, and the instances that had finished; a
    `JetbenchError` naming the vertex when the snapshot does not fit the DAG."""
    parallelism = {v.name: v.local_parallelism or default_parallelism for v in dag.vertices}
    restore: dict[str, list[list[tuple[Any, Any]]]] = {}
    done: dict[str, set[int]] = {}
    for name, state in data.vertices.items():
        if name not in parallelism:
            if state.entry_count or state.done:
                raise JetbenchError(f"snapshot {data.snapshot_id} holds state of vertex {name!r}, which the DAG does "
                                    f"not have (vertices: {', '.join(parallelism)})")
            continue
        n = parallelism[name]
        if state.done and n != state.parallelism:
            raise JetbenchError(f"vertex {name!r}: snapshot {data.snapshot_id} was taken at parallelism "
                                f"{state.parallelism} with instances {sorted(state.done)} finished; it cannot be "
                                f"restored at parallelism {n}")
        done[name] = set(state.done)
        if n == 1:  # one instance gets every entry: no key to route (a restart of 100k keys: 20-30 ms less)
            restore[name] = [list(chain.from_iterable(state.entries))]
            continue
        per: list[list[tuple[Any, Any]]] = [[] for _ in range(n)]
        for index, entries in enumerate(state.entries):
            for entry in entries:
                key = entry[0]
                if isinstance(key, BroadcastKey):
                    for part in per:
                        part.append(entry)
                elif state.done:
                    per[index].append(entry)
                else:
                    try:
                        per[hash(key) % n].append(entry)
                    except TypeError:
                        raise JetbenchError(f"vertex {name!r}: snapshot key {key!r} is not hashable") from None
        restore[name] = per
    return restore, done


class FaultTolerantJob(Job):
    """A `Job` with a processing guarantee: snapshots, restarts and exports (see the module)."""

    def __init__(self, name: str, clock: Clock, service: JobService, dag: DAG, config: JobConfig,
                 store: SnapshotStore, initial: SnapshotData | None):
        super().__init__(name, clock)
        self.service: JobService = service
        self.dag = dag
        self.config = config
        self.store = store
        self.owner = f"job/{name}"
        #: every failure the job restarted after (and the last one, if it failed)
        self.failures: list[JobError] = []
        self.restarts = 0
        #: every snapshot taken, oldest first
        self.snapshot_history: list[SnapshotRecord] = []
        #: the id of the snapshot the current execution was restored from (0: none)
        self.restored_from = 0
        self._initial = initial
        #: each vertex's code fingerprint, kept with every snapshot (`jetbench.core.code_fingerprint`)
        self.code: dict[str, dict[str, str]] = {}
        self._stored_id = 0  # the newest snapshot id in the store for this job
        self._execution_failure: JobError | None = None
        self._execution_over = threading.Event()
        self._finalizing = False
        self._export_wanted = 0  # an export waits for a snapshot with an id above this
        self._coordinator: SnapshotCoordinator | None = None
        self._next_plan: JobPlan | None = None
        self._blocking: dict[int, Any] = {}  # the execution's blocking workers, by id(tasklet)
        self._suspending = False  # suspend(): the execution ends after its terminal snapshot
        self._lifecycle = threading.RLock()  # one suspend / resume / cancel at a time
        self._thread = self._new_coordinator_thread()

    # -- public --------------------------------------------------------------------------------

    @property
    def last_snapshot(self) -> SnapshotRecord | None:
        """The newest snapshot stored, or None."""
        good = [r for r in self.snapshot_history if r.success]
        return good[-1] if good else None

    def snapshot_statistics(self) -> SnapshotStatistics:
        """The job's snapshot figures now: taken, failed, the last one's id, duration, size per
        vertex and age, restarts (also in `metrics`)."""
        history = list(self.snapshot_history)
        good = [r for r in history if r.success]
        last = good[-1] if good else None
        return SnapshotStatistics(
            self.config.processing_guarantee, len(good), len(history) - len(good),
            last.snapshot_id if last else 0, last.duration_s * 1000 if last else 0.0,
            dict(last.sizes) if last else {},
            (self.clock.monotonic() if self.end_time is None else self.end_time) - last.started if last else None,
            self.restarts, self.restored_from)

    def metrics(self) -> JobMetrics:
        """`Job.metrics` with the job's `SnapshotStatistics` (``snapshots``)."""
        return replace(super().metrics(), snapshots=self.snapshot_statistics())

    def export_snapshot(self, name: str, timeout: float | None = 30.0) -> SnapshotRecord:
        """Take a snapshot now and keep it in the store under ``name`` (Jet's
        ``exportSnapshot``): ``JobConfig(initial_snapshot=name)`` starts a job from it, also
        in another process. Waits for the snapshot (at most ``timeout`` seconds)."""
        if not isinstance(name, str) or not name or name.startswith("job/"):
            raise JetbenchError(f"export_snapshot: the name must be a non-empty string not starting with 'job/', "
                                f"got {name!r}")
        if self.store.is_private:
            raise JetbenchError(f"job {self.name!r} keeps its snapshots in a temporary store of its own, deleted when "
                                f"it ends, so an exported snapshot would not outlive it: name a store, "
                                f"JobConfig(..., snapshot_store='path/to/store.sqlite')")
        self._snapshot_now(f"to export as {name!r}", "exports a snapshot", timeout)
        self.store.export(self.owner, name)
        record = self.last_snapshot
        assert record is not None
        return record

    def suspend(self, timeout: float | None = 30.0) -> None:
        """Take a terminal snapshot, then stop every thread of the job (Jet's ``suspend``):
        `status` is SUSPENDED and no thread of the job is left until `resume`. Waits (at most
        ``timeout`` seconds for the snapshot, as long again for the threads to end); a
        `JetbenchError` for a job without a guarantee or one that is not running. A job whose
        every tasklet finished on its own before it stopped is COMPLETED instead."""
        with self._lifecycle:
            self._snapshot_now("to suspend from", "can be suspended", timeout)
            with self._lock:
                self._suspending = True
                self.terminating = True  # every worker leaves on its next turn
            self._notify()
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise JetbenchError(f"job {self.name!r}: its threads did not end within {timeout} s of the "
                                    f"terminal snapshot")

    def resume(self) -> None:
        """Restart a suspended job from its terminal snapshot (Jet's ``resume``): the same
        handle, `status` RUNNING again."""
        with self._lifecycle:
            if self._status is not JobStatus.SUSPENDED:
                raise JetbenchError(f"job {self.name!r} is {self._status.value}: only a suspended job resumes")
            restore = self.store.load(self.owner)
            if restore is None:
                raise JetbenchError(f"job {self.name!r}: its terminal snapshot is no longer in {self.store.path!r}")
            plan = self.prepare(restore)
            with self._lock:
                self._suspending = False
                self.terminating = False
                self._status = JobStatus.RUNNING
            self._next_plan = plan
            self._thread = self._new_coordinator_thread()
            self._thread.start()

    def cancel(self) -> None:
        with self._lifecycle:
            suspended = self._status is JobStatus.SUSPENDED
            super().cancel()
            if suspended:  # no thread runs: end the job here
                self._finalizing = True
                self._forget_snapshots()
                Job._finish(self)

    def request_snapshot(self, timeout: float | None = 30.0) -> int:
        """Start a snapshot now and return its id, without waiting for it to be taken: what a
        walkthrough in step mode (``ExecutionService(step=True)``) needs, since there the snapshot
        only goes on as ``job.step()`` runs rounds. Waits only for the coordinator to start it."""
        ok, wanted, coordinator = self._ask_for_snapshot(
            "asks for a snapshot", lambda c, wanted: c.requested_id > wanted, timeout)
        if not ok or coordinator.requested_id <= wanted:
            raise JetbenchError(f"job {self.name!r}: request_snapshot(): no snapshot started "
                                f"({'timed out' if not ok else 'the execution ended first'})")
        return coordinator.requested_id

    def _snapshot_now(self, what: str, action: str, timeout: float | None) -> None:
        """Ask for a snapshot and wait (at most ``timeout`` s) until it is in the store."""
        ok, wanted, _ = self._ask_for_snapshot(action, lambda _c, wanted: self._stored_id > wanted, timeout)
        if not ok or self._stored_id <= wanted:
            raise JetbenchError(f"job {self.name!r}: no snapshot was stored {what} "
                                f"({'timed out' if not ok else 'the execution ended first'})")

    def _ask_for_snapshot(self, action: str, reached: Callable[[SnapshotCoordinator, int], bool],
                          timeout: float | None) -> tuple[bool, int, SnapshotCoordinator]:
        """Ask the coordinator of this running job for a snapshot and wait (at most ``timeout`` s)
        until ``reached(coordinator, the last id asked for before)``, the execution ends or
        restarts; ``(whether that came, that id, the coordinator)``."""
        if not self.config.snapshots:
            raise JetbenchError(f"job {self.name!r} takes no snapshots (processing_guarantee='none'); only a job "
                                f"with a processing guarantee {action}")
        coordinator = self._coordinator
        if coordinator is None or self.is_done or self._status is not JobStatus.RUNNING or self.terminating:
            status = "restarting" if self._status is JobStatus.RUNNING and not self.is_done else self.status.value
            raise JetbenchError(f"job {self.name!r} is {status}: only a running job {action}")
        with coordinator.cond:
            wanted = coordinator.requested_id
            self._export_wanted = max(self._export_wanted, wanted + 1)
            coordinator.cond.notify_all()
            ok = coordinator.cond.wait_for(lambda: reached(coordinator, wanted) or self._execution_over.is_set()
                                           or self._coordinator is not coordinator, timeout)
        return ok, wanted, coordinator

    def _new_coordinator_thread(self) -> threading.Thread:
        return threading.Thread(target=self._coordinate, name=f"jetbench.{self.name}.coordinator", daemon=True)

    def live_threads(self) -> list[threading.Thread]:
        threads = super().live_threads()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            threads.append(self._thread)
        return threads

    def join(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().join(*args, **kwargs)
        finally:
            if self.is_done and self._thread is not threading.current_thread():
                self._thread.join()

    def __repr__(self) -> str:
        return (f"FaultTolerantJob({self.name!r}, {self.status.value}, {self.config.processing_guarantee}, "
                f"{len(self.snapshot_history)} snapshots, {self.restarts} restarts)")

    # -- engine side ---------------------------------------------------------------------------

    def _fail(self, error: JobError, status: JobStatus) -> None:
        if status is JobStatus.FAILED and not self._finalizing:
            with self._lock:
                if self._failure is not None or self._execution_failure is not None or self._done.is_set():
                    return
                self._execution_failure = error  # this execution ends; the coordinator decides
                self.terminating = True
            if self.stepper is not None:  # step mode: no worker of this execution stays at its gate
                self.stepper.wake()
        else:
            super()._fail(error, status)
        self._notify()

    def _finish(self) -> None:
        """The last worker of an execution left: tell the coordinator (it finishes the job)."""
        self._execution_over.set()
        self._notify()

    def _notify(self) -> None:
        coordinator = self._coordinator
        if coordinator is not None:
            with coordinator.cond:
                coordinator.cond.notify_all()

    def prepare(self, restore: SnapshotData | None) -> JobPlan:
        """Plan one execution (restored from ``restore``); raises for a DAG the guarantee refuses."""
        service = self.service
        last_id = restore.snapshot_id if restore is not None else self._stored_id
        setup_restore, setup_done = (route_snapshot(restore, self.dag, service.cooperative_threads)
                                     if restore is not None else (None, None))
        coordinator = SnapshotCoordinator((), self.config.exactly_once, last_id)
        self._blocking = {}
        plan: JobPlan = service.plan(self.dag, self._blocking,
                                      SnapshotSetup(coordinator, last_id, setup_restore, setup_done,
                                                    self.config.processing_guarantee))
        coordinator.set_tasklets(plan.tasklets)
        coordinator.postponed_by = priority_upstream(self.dag)
        if self.config.snapshots:
            try:
                check_plan(self.dag, plan)
            except BaseException:
                for t in plan.tasklets:
                    t.close_processor()
                raise
        self.restored_from = restore.snapshot_id if restore is not None else 0
        self._coordinator = coordinator
        return plan

    def start(self, plan: JobPlan) -> None:
        self._next_plan = plan
        self._thread.start()

    def _coordinate(self) -> None:
        suspended = False
        try:
            plan = self._next_plan
            self._next_plan = None
            while True:
                if plan is None:
                    break
                self._execution_over.clear()
                self.service.launch(self, plan, self._blocking)
                self._supervise()
                for w in self.workers:
                    w.thread.join()
                if self.sampler is not None:
                    self.sampler.join()
                    self.sampler = None
                failure = self._execution_failure
                if self._suspending and self._failure is None and not self._all_finished():
                    if failure is not None:  # failed after the terminal snapshot: resume restores it
                        self.failures.append(failure)
                    self._execution_failure = None
                    with self._lock:
                        self._status = JobStatus.SUSPENDED
                    suspended = True
                    break
                if failure is None or self._failure is not None:
                    break
                self.failures.append(failure)
                if not self.config.snapshots or self.restarts >= self.config.max_restarts:
                    self._finalizing = True
                    Job._fail(self, self._history_error(failure), JobStatus.FAILED)
                    break
                self.restarts += 1
                _log.warning("job %r restarts (%d of %d) after: %s", self.name, self.restarts,
                             self.config.max_restarts, str(failure).splitlines()[0])
                restore = self.store.load(self.owner) if self._stored_id else self._initial
                self._execution_failure = None
                self.terminating = False
                try:
                    plan = self.prepare(restore)
                except Exception as exc:
                    self._finalizing = True
                    error = exc if isinstance(exc, JobError) else JobError(
                        f"job {self.name!r} could not restart: {type(exc).__name__}: {exc}")
                    if error is not exc:
                        error.__cause__ = exc
                    Job._fail(self, error, JobStatus.FAILED)
                    break
        except BaseException as exc:  # a bug in the coordinator: fail the job, never hang it
            self._finalizing = True
            error = JobError(f"job {self.name!r}: its snapshot coordinator failed: {type(exc).__name__}: {exc}")
            error.__cause__ = exc
            Job._fail(self, error, JobStatus.FAILED)
            self.terminating = True
            for w in self.workers:
                w.thread.join()
        finally:
            if not suspended:
                self._finalizing = True
                self._forget_snapshots()
                Job._finish(self)

    def _all_finished(self) -> bool:
        """Whether every tasklet of the execution finished on its own (not stopped)."""
        coordinator = self._coordinator
        return coordinator is not None and all((t.vertex_name, t.index) in coordinator.finished_entries
                                               for t in coordinator.tasklets)

    def _forget_snapshots(self) -> None:
        """The job ended: its snapshots go and the store records how it ended, in one
        transaction (`SnapshotStore.finish`); a private store goes altogether."""
        if self.store.is_private:
            self.store.remove()
            return
        failure = self._failure
        state = COMPLETED if failure is None else CANCELLED if isinstance(failure, JobCancelled) else FAILED
        try:
            self.store.finish(self.owner, state)
        except Exception as exc:
            _log.warning("job %r: its snapshots could not be removed from %r: %s", self.name, self.store.path, exc)

    def _history_error(self, last: JobError) -> JobError:
        lines = [f"job {self.name!r} failed {len(self.failures)} times (max_restarts={self.config.max_restarts}); "
                 f"the last failure:", str(last)]
        if len(self.failures) > 1:
            lines.append("earlier failures:")
            lines += [f"  {k}. {str(f).splitlines()[0]}" for k, f in enumerate(self.failures[:-1], 1)]
        error = JobError("\n".join(lines), last.vertex, last.instance)
        error.item, error.item_kind, error.user_frame = last.item, last.item_kind, last.user_frame
        error.__cause__ = last.__cause__
        error.failures = list(self.failures)  # type: ignore[attr-defined]
        return error

    def _supervise(self) -> None:
        coordinator = self._coordinator
        assert coordinator is not None
        clock = self.clock
        interval = self.config.snapshot_interval_ms / 1000 if self.config.snapshots else None
        next_due = clock.monotonic() + interval if interval is not None else float("inf")
        cond = coordinator.cond
        while True:
            store: SnapshotData | None = None
            wake = False
            with cond:
                if self._execution_over.is_set():
                    return
                now = clock.monotonic()
                if coordinator.phase == 1 and not coordinator.awaited and not self.terminating:
                    store = coordinator.snapshot()
                elif coordinator.phase == 2 and not coordinator.awaited:
                    coordinator.phase = 0
                    next_due = now + interval if interval is not None else next_due
                    cond.notify_all()
                elif (coordinator.phase == 0 and interval is not None and not self.terminating
                      and (now >= next_due or self._export_wanted > coordinator.requested_id)
                      and coordinator.may_start()):
                    coordinator.start(now)
                    cond.notify_all()  # request_snapshot() waits for the start
                    wake = True
                elif coordinator.phase == 0 and not self.terminating and coordinator.terminal_due():
                    coordinator.terminal_id = coordinator.start(now)  # every instance finished: no wait
                else:
                    postponed = coordinator.phase == 0 and not coordinator.may_start()  # woken as they finish
                    timeout = 0.5 if coordinator.phase or postponed else min(max(next_due - now, 0.0), 0.5)
                    cond.wait(timeout)
            if wake:
                self._wake_workers()
            if store is not None:
                self._store(coordinator, store)

    def _store(self, coordinator: SnapshotCoordinator, data: SnapshotData) -> None:
        success = True
        try:
            data.code = self.code
            self.store.write(self.owner, data, job=True)
        except Exception as exc:
            success = False
            _log.warning("job %r: snapshot %d could not be stored: %s", self.name, data.snapshot_id, exc)
        duration = self.clock.monotonic() - coordinator.started
        with coordinator.cond:
            self.snapshot_history.append(SnapshotRecord(data.snapshot_id, coordinator.started, duration,
                                                        dict(data.sizes), success))
            if success:
                self._stored_id = data.snapshot_id
            coordinator.open_phase2(success)
            coordinator.cond.notify_all()
        self._wake_workers()

    def _wake_workers(self) -> None:
        for w in list(self.workers):
            w.idler.wake()


def check_plan(dag: DAG, plan: JobPlan) -> None:
    """A `JetbenchError` naming the vertex when a guarantee cannot be kept: a processor keeps
    state it cannot snapshot."""
    for t in plan.tasklets:
        if snapshot_support(t.processor) == "unsupported":
            raise JetbenchError(
                f"vertex {t.vertex_name!r}: {type(t.processor).__name__} keeps state it cannot save in a snapshot, so "
                f"the job cannot have a processing guarantee; use processing_guarantee='none' or another processor")


def priority_upstream(dag: DAG) -> set[str]:
    """The vertices upstream (inclusive) of an input that has a higher priority (a lower value)
    than another input of its vertex, e.g. a hash join's build side.

    A vertex takes its lower-priority inputs only once the higher-priority ones are done, so
    it could never see a barrier on all its inputs while those still run: as in Jet, the job
    takes its first snapshot once all of these vertices have finished (with a guarantee, a
    higher-priority input must be finite)."""
    inputs: dict[str, list[Any]] = {}
    for e in dag.edges:
        inputs.setdefault(e.target.name, []).append(e)
    found: set[str] = set()
    todo: list[str] = []
    for edges in inputs.values():
        lowest = max(e.edge_priority for e in edges)
        todo += [e.source.name for e in edges if e.edge_priority < lowest]
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            todo += [e.source.name for e in inputs.get(name, ())]
    return found
