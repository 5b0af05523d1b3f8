"""SparkJob: the handle `SparkRunner.submit` returns, a local `jetbench.Job`'s counterpart for a
job that runs as Spark jobs.

The job's Spark actions run on a thread of its own (``jetbench-spark-<id>``), their Spark jobs
carrying the run's job tag; the handle behaves like a local job where it can: ``join(timeout)``
returns what ``run()`` returns (or raises the same `JobError` naming the vertex, `JobCancelled`
after ``cancel()``, `JobTimeout` when ``timeout`` runs out, the job going on: the caller holds
its handle), ``cancel()`` cancels the run's Spark jobs (``cancelJobsWithTag``: Spark kills the
tasks and their Python workers), ``status`` is a `jetbench.JobStatus`, ``metrics()`` a frozen
`SparkRunStatus` (Spark's jobs, stages and tasks; read once more when the job ends, after
Spark's listener bus has caught up, and kept), ``dashboard()`` the notebook's live view of its
Spark stages (`jetbench.notebook.spark_dashboard`, through the view ``"spark_dashboard"``).
``join`` waits as a local job's does (the waiter of `jetbench.core.job_handle.register_waiter`): in a
notebook it lets widget messages through (a dashboard's Cancel) and shows the progress line of
`jetbench.notebook.spark_progress`, on a terminal a tqdm bar.

No Spark job and no thread outlive the handle's end: an interrupted ``join()`` (Stop in a
notebook, Ctrl-C) cancels the job and waits for its thread (at most `CANCEL_GRACE_S`) before
the interrupt goes on; a failed action cancels whatever else the run started.

Every action runs under a name of jetbench's (`call_site`): Spark names its jobs and stages
after the call site of the action, "toArrow at runner.py:420" otherwise. Spark gives every stage
of one action the same name: the name says what the action computes and which of jetbench's
stages (their vertices) it runs.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from ..core.errors import JetbenchError, JobCancelled, JobError
from ..core.job_handle import JobHandle, JobStatus
from ..core.views import view
from .spark_status import SparkRunStatus, SparkStatusSource

__all__ = ["CANCEL_GRACE_S", "SparkJob", "call_site", "spark_failure"]

#: How long an interrupted wait (or `SparkJob.stop`) waits for the cancelled job's thread: Spark
#: ends cancelled tasks by killing their Python workers, within a second or two on a quiet machine.
CANCEL_GRACE_S = 30.0
#: The longest slice of a wait: an interrupt is seen at once, a cancel re-sent this often.
_SLICE_S = 0.1
#: How long the end of a job waits for Spark's listener bus, whose events the status tracker reads.
_LISTENER_WAIT_MS = 5000


class SparkJob(JobHandle):
    """A job running on Spark. ``work(handle)`` runs on the job's thread and returns the job's
    value, each Spark action inside ``handle.action(name, details)``; ``cleanup()`` runs after
    it whatever happened (unpersisting cached frames). `SparkRunner.submit` makes these."""

    #: what tells the notebook layer's waits and views a Spark job from a local one
    runs_on = "spark"

    def __init__(self, name: str, sc: Any, work: Callable[[SparkJob], Any],
                 cleanup: Callable[[], None] | None = None):
        super().__init__(name, time.monotonic())
        self.sc = sc
        self.tag = f"jetbench-{uuid.uuid4().hex}"
        self._source = SparkStatusSource(sc, self.tag, name)
        self._final: SparkRunStatus | None = None
        self._cancelling = False
        self.thread = threading.Thread(target=self._run, args=(work, cleanup), name=f"jetbench-spark-{self.tag[9:17]}",
                                       daemon=True)
        self.thread.start()

    # -- what a local Job has too (status, failure, result, elapsed, join, add_done_listener:
    # `jetbench.core.job_handle.JobHandle`) ------------------------------------------------------

    def _after_end(self) -> None:
        self.thread.join()  # it has set the end: only its last instructions are left

    def cancel(self) -> None:
        """Cancel the job's Spark jobs; ``join()`` then raises `JobCancelled` (nothing if it has ended)."""
        with self._lock:
            if self._done.is_set() or self._cancelling:
                return
            self._cancelling = True
        self._cancel_spark()

    def stop(self, timeout: float | None = CANCEL_GRACE_S) -> bool:
        """Cancel the job and wait (at most ``timeout`` s) for its thread; True if it has ended."""
        self.cancel()
        if self.thread is not threading.current_thread():
            self.thread.join(timeout)
        return not self.thread.is_alive()

    def live_threads(self) -> list[threading.Thread]:
        """The job's thread, while it is alive."""
        return [self.thread] if self.thread.is_alive() else []

    def metrics(self) -> SparkRunStatus:
        """Spark's jobs, stages and tasks of this job, frozen: now while it runs, its final state once it ended."""
        final = self._final
        if final is not None:
            return final
        return self._source.read()

    def dashboard(self, **kwargs: Any) -> Any:
        """The live notebook view of this job's Spark stages (`jetbench.notebook.spark_dashboard`)."""
        return view("spark_dashboard")(self, **kwargs)

    @property
    def ui_url(self) -> str | None:
        """The embedded Spark UI (on 127.0.0.1), None when it is off."""
        return self._source.ui_url

    def __repr__(self) -> str:
        return f"SparkJob({self.name!r}, {self._status.value})"

    # -- the job's thread ------------------------------------------------------------------------

    @contextlib.contextmanager
    def action(self, name: str, details: str) -> Iterator[None]:
        """Run one Spark action of the job under ``name`` (Spark's name of its jobs and stages
        and the job description) with ``details`` (the call site's long form, the Spark UI's
        "details"); a job cancelled meanwhile starts no more actions."""
        if self._cancelling:
            raise JobCancelled(f"job {self.name!r} was cancelled")
        with call_site(self.sc, name, details):
            yield

    def _run(self, work: Callable[[SparkJob], Any], cleanup: Callable[[], None] | None) -> None:
        sc = self.sc
        value: Any = None
        error: BaseException | None = None
        try:
            sc.addJobTag(self.tag)  # job tags are the thread's own
            value = work(self)
        except BaseException as exc:
            error = exc
        finally:
            with contextlib.suppress(Exception):
                sc.removeJobTag(self.tag)
            if error is not None or self._cancelling:
                self._cancel_spark()  # what the run started besides the failed (or cancelled) job
            if cleanup is not None:
                with contextlib.suppress(Exception):
                    cleanup()
        self._finish(value, error)

    def _finish(self, value: Any, error: BaseException | None) -> None:
        with self._lock:
            cancelled = self._cancelling
        failure: BaseException | None = None
        if cancelled:
            failure = JobCancelled(f"job {self.name!r} was cancelled")
            failure.__cause__ = error
        elif error is not None:
            failure = spark_failure(error) if isinstance(error, Exception) else error
            if failure is not error:
                failure.__cause__ = error
        self._settle(failure is not None)
        self._source.finish()
        message = str(failure).splitlines()[0] if failure is not None and str(failure) else \
            (type(failure).__name__ if failure is not None else None)
        try:
            final = self._source.read(final=True, error=message, cancelled=cancelled)
        except Exception:  # the context stopped under the job: what is known of it
            final = SparkRunStatus(self.name, self._source.elapsed, (), len(self._source.jobs), self._source.ui_url,
                                   True, message, cancelled)
        with self._lock:
            self._final = final
            self._result = value if failure is None else None
            self._failure = failure
            self._status = (JobStatus.CANCELLED if cancelled else JobStatus.FAILED if failure is not None
                            else JobStatus.COMPLETED)
            self.end_time = time.monotonic()
            self._done.set()
            listeners, self._listeners = self._listeners, []
        for fn in listeners:
            with contextlib.suppress(Exception):
                fn(self)

    def _settle(self, stopped: bool) -> None:
        """Let Spark's status catch up with the job's end: the listener bus's events read (the
        status tracker is fed by them); for a job cancelled or failed, also its tasks ended: Spark
        ends a cancelled job at once and kills its running tasks after, and no task of the job
        runs on (nor shows as running in its final state) once it has ended (at most `CANCEL_GRACE_S`)."""
        with contextlib.suppress(Exception):
            bus = self.sc._jsc.sc().listenerBus()
            bus.waitUntilEmpty(_LISTENER_WAIT_MS)
            deadline = time.monotonic() + CANCEL_GRACE_S
            while stopped and self._source.read().tasks_running and time.monotonic() < deadline:
                time.sleep(0.05)
                bus.waitUntilEmpty(_LISTENER_WAIT_MS)

    # -- waiting ---------------------------------------------------------------------------------

    def _wait(self, timeout: float | None) -> bool:
        """Wait at most ``timeout`` s (None: to the end) in short slices; True if the job ended.
        A cancelled job's cancel is sent again each slice: a Spark job submitted as the first
        one came (between the check in `action` and Spark's start of it) is cancelled too."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = _SLICE_S
            if deadline is not None:
                step = min(step, max(0.0, deadline - time.monotonic()))
            if self._done.wait(step):
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            if self._cancelling:
                self._cancel_spark()

    def _cancel_spark(self) -> None:
        with contextlib.suppress(Exception):  # a stopped context has nothing left to cancel
            self.sc.cancelJobsWithTag(self.tag)

    def _stuck_note(self) -> str:
        return (f"jetbench: Spark job {self.name!r} was cancelled, but after {CANCEL_GRACE_S:g} s its thread "
                f"{self.thread.name} is still waiting for Spark")


@contextlib.contextmanager
def call_site(sc: Any, short: str, long: str) -> Iterator[None]:
    """Spark actions started inside are named ``short`` (their Spark jobs' and stages' names
    and the job description) with ``long`` as their details, on this thread.

    pyspark sets the call site itself around each action (``SCCallSiteSync``: "toArrow at
    file:line"), but only at the outermost level of a count it keeps: this holds that count
    for the block, so the name set here is the one Spark sees. The count is pyspark's, one for
    the process: an action another thread starts meanwhile keeps Spark's own name for its
    stages (the JVM's call site) instead of pyspark's "<action> at <file>:<line>"."""
    from pyspark.traceback_utils import SCCallSiteSync

    sc.setLocalProperty("callSite.short", short)
    sc.setLocalProperty("callSite.long", long)
    sc.setJobDescription(short)
    SCCallSiteSync._spark_stack_depth += 1
    try:
        yield
    finally:
        SCCallSiteSync._spark_stack_depth -= 1
        for key in ("callSite.short", "callSite.long", "spark.job.description"):
            with contextlib.suppress(Exception):
                sc.setLocalProperty(key, None)


#: the task's JobError: its first line, then the lines that name the item and the user's line
_JOB_ERROR = re.compile(r"(?:jetbench\.core\.errors\.)?JobError: (.+(?:\n {2}\S.*|\n {4}\S.*)*)")
_ANY_ERROR = re.compile(r"^(\w+(?:\.\w+)*(?:Error|Exception|Exit|Interrupt)): (.+)$", re.MULTILINE)


def spark_failure(exc: Exception) -> JetbenchError:
    """A failed Spark action as a `JobError` naming the vertex when a processor failed, with the
    lines of the task's report that name the failing item and the user's function and line."""
    if isinstance(exc, JetbenchError):
        return exc
    text = str(exc)
    m = _JOB_ERROR.search(text)
    if m:
        message = m.group(1).strip()
        vertex = re.search(r"in vertex '([^']+)'", message)
        instance = re.search(r" instance (\d+)", message)
        return JobError(f"SparkRunner: {message}", vertex.group(1) if vertex else None,
                        int(instance.group(1)) if instance else None)
    errors = [f"{name}: {msg}" for name, msg in _ANY_ERROR.findall(text) if "Py4J" not in name]
    detail = errors[-1] if errors else text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return JobError(f"SparkRunner: the Spark job failed: {detail}")
