"""The progress of a job while ``run()`` or ``job.join()`` waits for it.

In a notebook a compact live line (`jetbench.notebook.progress_widget.ProgressView`): status,
elapsed time, items the sources emitted and the sinks received, items/s, and a button that opens
the full dashboard below it; when the job ends it freezes into a one-line summary. In a terminal
a tqdm bar on stderr. Both appear only once the job has run `ProgressConfig.delay_s` (a job that
ends sooner shows nothing) and are refreshed every `ProgressConfig.interval_s` by the waiting
thread itself, between two slices of its wait: no thread of their own.

Turning it off, most specific first: ``run(p, progress=False)`` / ``job.join(progress=False)``;
``configure(enabled=False)`` for the process; the environment variable ``JETBENCH_PROGRESS=0``
(the test suite sets it). ``progress=True`` shows it even where stderr is not a terminal.

What the line counts, and its one-line summary, are `jetbench.notebook.job_counts`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from .job_counts import JobCounts, restart_note, thousands

#: ``JETBENCH_PROGRESS=0`` (or false/off/no) turns the progress line off by default.
ENV_VAR = "JETBENCH_PROGRESS"
_OFF = {"0", "false", "off", "no"}


@dataclass
class ProgressConfig:
    """Process-wide settings of the progress line (`configure` changes them)."""

    #: None: on unless ``JETBENCH_PROGRESS`` says off; True / False: on / off whatever it says
    enabled: bool | None = None
    #: a job that ends within this many seconds shows no progress at all
    delay_s: float = 0.5
    #: seconds between two refreshes of the line (one widget message, or one tqdm redraw)
    interval_s: float = 0.5


config = ProgressConfig()


def configure(enabled: bool | None = None, delay_s: float | None = None, interval_s: float | None = None) -> ProgressConfig:
    """Change the process-wide progress settings; ``enabled=None`` leaves the choice to the
    environment variable again. Returns the settings."""
    config.enabled = enabled
    if delay_s is not None:
        config.delay_s = max(0.0, float(delay_s))
    if interval_s is not None:
        config.interval_s = max(0.1, float(interval_s))
    return config


def progress_wanted(progress: bool | None) -> bool:
    """Whether to show progress, given `Job.join`'s ``progress`` argument."""
    if progress is not None:
        return bool(progress)
    if config.enabled is not None:
        return config.enabled
    return os.environ.get(ENV_VAR, "").strip().lower() not in _OFF


# ------------------------------------------------------------------------------- reporters


class Reporter:
    """Shows one job's progress; `tick` is called by the waiting thread between slices of its
    wait, `close` when the wait ends (the job may still run after an interrupt or a timeout:
    then it is finished when the job ends)."""

    def __init__(self, job: Any, interval_s: float, delay_s: float):
        self.job = job
        self.interval_s = interval_s
        self.delay_s = delay_s
        self.shown = False
        self.closed = False
        self.ticks = 0
        self.cpu_s = 0.0  # CPU of this reporter's ticks (the waiting thread's time)
        self._next = time.monotonic()
        self._last: tuple[float, int] | None = None  # (elapsed, sources_out) of the previous tick

    def tick(self) -> None:
        now = time.monotonic()
        if now < self._next or self.closed:
            return
        self._next = now + self.interval_s
        if not self.shown and self.job.elapsed < self.delay_s:
            self._next = now + min(self.interval_s, self.delay_s - self.job.elapsed)
            return
        c0 = time.thread_time()
        counts = JobCounts.of(self.job)
        moved = counts.sources_out
        rate = None
        if self._last is not None and counts.elapsed_s > self._last[0] and moved >= self._last[1]:
            rate = (moved - self._last[1]) / (counts.elapsed_s - self._last[0])  # (a restart counts from its snapshot)
        self._last = (counts.elapsed_s, moved)
        if not self.shown:
            self.shown = True
            self.show(counts)
        else:
            self.update(counts, rate)
        self.ticks += 1
        self.cpu_s += time.thread_time() - c0

    def close(self, finished: bool) -> None:
        """The wait ended: freeze now if the job has ended, else when it does."""
        if self.closed:
            return
        if not self.shown:
            self.closed = True
            return
        if self.job.is_done:
            self._finish(on_waiting_thread=True)
        else:
            self.job.add_done_listener(lambda _job: self._finish(on_waiting_thread=False))

    def _finish(self, on_waiting_thread: bool) -> None:
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(Exception):  # never let a view break the wait
            self.finish(JobCounts.of(self.job), on_waiting_thread)

    # -- what a kind of reporter does
    def show(self, counts: JobCounts) -> None:
        raise NotImplementedError

    def update(self, counts: JobCounts, rate: float | None) -> None:
        raise NotImplementedError

    def finish(self, counts: JobCounts, on_waiting_thread: bool) -> None:
        raise NotImplementedError


class TqdmReporter(Reporter):
    """A tqdm bar on stderr counting the items out of the sources (its rate is theirs)."""

    def __init__(self, job: Any, interval_s: float, delay_s: float, file: Any = None):
        super().__init__(job, interval_s, delay_s)
        self.file = file
        self.bar: Any = None
        self._count = 0

    def show(self, counts: JobCounts) -> None:
        from tqdm import tqdm

        self.bar = tqdm(desc=f"jetbench {counts.job}", unit=" items", unit_scale=True, file=self.file or sys.stderr,
                        mininterval=0, dynamic_ncols=True, leave=True)
        self.update(counts, None)

    def update(self, counts: JobCounts, rate: float | None) -> None:
        moved = counts.sources_out
        note = restart_note(counts)
        lag = "" if counts.lag is None else f" · lag {thousands(counts.lag)}"
        self.bar.set_postfix_str(f"sources {thousands(counts.sources_out)} out · sinks {thousands(counts.sinks_in)} in"
                                 + (f" · {note}" if note else "") + lag, refresh=False)
        if moved < self._count:  # a restart: the counts start again at the snapshot
            self.bar.reset()
            self._count = 0
        self.bar.update(moved - self._count)
        self._count = moved

    def finish(self, counts: JobCounts, on_waiting_thread: bool) -> None:
        self.update(counts, None)
        self.bar.set_description(f"jetbench {counts.job} {counts.status}", refresh=False)
        self.bar.close()


class NotebookReporter(Reporter):
    """The live line in a notebook cell (`progress_widget.ProgressView`)."""

    def __init__(self, job: Any, interval_s: float, delay_s: float):
        super().__init__(job, interval_s, delay_s)
        self.view: Any = None
        self.handle: Any = None

    def show(self, counts: JobCounts) -> None:
        from IPython.display import display

        from .progress_widget import ProgressView

        self.view = ProgressView(self.job, counts)
        self.handle = display(self.view, display_id=True)

    def update(self, counts: JobCounts, rate: float | None) -> None:
        self.view.line.set_counts(counts, rate)

    def finish(self, counts: JobCounts, on_waiting_thread: bool) -> None:
        self.view.line.set_counts(counts, None, final=True)
        # on the cell's own thread, the saved output's text also becomes the summary (what a
        # notebook viewer without widgets shows); a thread could address another cell's output
        if on_waiting_thread and self.handle is not None:
            self.handle.update(self.view)


def display_target(progress: bool | None, in_kernel: bool) -> str | None:
    """Where a wait shows its progress: ``"notebook"``, ``"terminal"`` or None: off, or nowhere
    to show it (not a kernel's main thread and stderr not a terminal, unless ``progress=True``)."""
    if not progress_wanted(progress):
        return None
    if in_kernel:
        return "notebook"
    if progress:
        return "terminal"
    # by default only the main thread draws a bar, and only on a terminal
    isatty = getattr(sys.stderr, "isatty", None)
    if threading.current_thread() is threading.main_thread() and isatty is not None and isatty():
        return "terminal"
    return None


def reporter_for(job: Any, progress: bool | None, in_kernel: bool) -> Any:
    """The reporter for a wait, or None (`display_target`): a local job's `Reporter`, or for a
    job running on Spark (a `jetbench.spark.spark_job.SparkJob`: its ``runs_on`` is ``"spark"``) a
    `jetbench.notebook.spark_progress.SparkReporter` over its Spark stages."""
    target = display_target(progress, in_kernel)
    if target is not None and getattr(job, "runs_on", "local") == "spark":
        from .spark_progress import SparkNotebookReporter, SparkTqdmReporter

        kind = SparkNotebookReporter if target == "notebook" else SparkTqdmReporter
        return kind(job, config.interval_s, config.delay_s)
    if target == "notebook":
        return NotebookReporter(job, config.interval_s, config.delay_s)
    if target == "terminal":
        return TqdmReporter(job, config.interval_s, config.delay_s)
    return None
