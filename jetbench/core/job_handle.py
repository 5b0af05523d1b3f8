"""JobHandle: what every handle of a submitted job has, the local `jetbench.core.job.Job` and
`jetbench.spark.SparkJob` alike: its status, failure and value, its elapsed time, listeners
called at its end, and a ``join`` that waits through the registered waiter and, when the wait
itself is interrupted (Stop in a notebook, Ctrl-C) or fails, stops the job before the exception
goes on: no job outlives the wait for it.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable
from typing import Any, Self

from .errors import JobTimeout


class JobStatus(enum.Enum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    #: a job with a processing guarantee stopped by ``suspend()`` after a terminal snapshot:
    #: no thread runs until ``resume()``
    SUSPENDED = "suspended"

    @property
    def is_terminal(self) -> bool:
        return self is not JobStatus.RUNNING and self is not JobStatus.SUSPENDED


#: How `JobHandle.join` waits, when a higher layer registered a way (the notebook layer does:
#: inside a Jupyter kernel it waits in short slices that let the dashboard's messages through,
#: and shows a progress line). It is called as ``waiter(job, wait, timeout, progress)``, where
#: ``wait(t)`` waits at most ``t`` seconds (None: until the end) and says whether the job has
#: ended; it returns what ``wait(timeout)`` would. ``progress`` is ``join``'s argument, passed on.
Waiter = Callable[[Any, Callable[[float | None], bool], float | None, bool | None], bool]
_WAITER: list[Waiter] = []


def register_waiter(waiter: Waiter | None) -> None:
    """Make ``waiter`` the way `JobHandle.join` waits (None: back to a plain wait)."""
    _WAITER[:] = [] if waiter is None else [waiter]


class JobHandle:
    """The state every job handle keeps and the waiting they share. A subclass says how the
    job's end is awaited (`_wait`, and `_after_end` for its threads' last instructions), how it
    is stopped (`stop`) and what an interrupted wait leaves running (`_stuck_note`)."""

    def __init__(self, name: str, start_time: float):
        self.name = name
        self.start_time = start_time
        self.end_time: float | None = None
        self._status = JobStatus.RUNNING
        self._failure: BaseException | None = None
        self._result: Any = None
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._listeners: list[Callable[[Any], None]] = []

    @property
    def status(self) -> JobStatus:
        return self._status

    @property
    def is_done(self) -> bool:
        return self._done.is_set()

    @property
    def failure(self) -> BaseException | None:
        """The `JobError`/`JobCancelled` that ended the job, or None."""
        return self._failure

    @property
    def result(self) -> Any:
        """The job's value once it completed (None while running, or without a collecting sink)."""
        return self._result

    @property
    def elapsed(self) -> float:
        end = self.end_time if self.end_time is not None else self._now()
        return end - self.start_time

    def _now(self) -> float:
        """The clock of ``start_time`` and ``end_time``."""
        return time.monotonic()

    def join(self, timeout: float | None = None, progress: bool | None = None) -> Any:
        """Wait for the job; return its value, or raise `JobError`/`JobCancelled`/`JobTimeout`.

        ``progress`` goes to the registered waiter (`register_waiter`): in a notebook or a
        terminal, None shows a progress line unless it is turned off, False never, True always.
        A `JobTimeout` leaves the job running: the caller holds its handle. If the wait itself
        is interrupted (KeyboardInterrupt) or fails, the job is stopped (`stop`) before the
        exception goes on."""
        try:
            finished = _WAITER[0](self, self._wait, timeout, progress) if _WAITER else self._wait(timeout)
            if finished:
                self._after_end()
        except KeyboardInterrupt as exc:
            self._stop_after(exc)
            # the same interrupt, saying what became of the job, without the frames of the wait
            # (the waiter's slices, threading's lock): the traceback ends at this call
            raise KeyboardInterrupt(f"job {self.name!r} was cancelled: the wait for it was interrupted") from None
        except BaseException as exc:
            self._stop_after(exc)
            raise
        if not finished:
            raise JobTimeout(f"job {self.name!r} still {self._status.value} after {timeout} s")
        if self._failure is not None:
            raise self._failure
        return self._result

    def add_done_listener(self, fn: Callable[[Self], None]) -> None:
        """Call ``fn(job)`` once the job has ended (at once if it already has)."""
        with self._lock:
            if not self._done.is_set():
                self._listeners.append(fn)
                return
        fn(self)

    def _wait(self, timeout: float | None) -> bool:
        """Wait at most ``timeout`` s (None: to the end); True if the job has ended."""
        return self._done.wait(timeout)

    def _after_end(self) -> None:
        """Once the job has ended: wait for what its threads have left to do."""

    def stop(self, timeout: float | None = None) -> bool:
        """Cancel the job and wait (at most ``timeout`` s) for its threads; True if none is left."""
        raise NotImplementedError

    def _stuck_note(self) -> str:
        """What an interrupted wait says when the job's threads outlive `stop`."""
        raise NotImplementedError

    def _stop_after(self, exc: BaseException) -> None:
        """``exc`` interrupted a wait for this job: stop the job; if a thread outlives the grace
        period, say so on ``exc`` (a second interrupt while waiting goes on as it is)."""
        if self.stop():
            return
        exc.add_note(self._stuck_note())


__all__ = ["JobHandle", "JobStatus", "Waiter", "register_waiter"]
