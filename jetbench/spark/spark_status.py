"""What Spark says of a running `SparkRunner` job: its Spark jobs, stages and tasks, read from
``SparkContext.statusTracker()`` (the Spark jobs of one run carry the run's job tag), and the
address of the embedded Spark UI (on 127.0.0.1 when `jetbench.spark.session` started it with
``ui=True``; None when the UI is off).

`SparkRunStatus` is a plain, frozen record (its `summary` is the one-line text of the progress
line; a `jetbench.spark.spark_job.SparkJob`'s ``metrics()`` is one); `SparkStatusSource.read`
fills one in. What shows it, in a notebook or a terminal, is `jetbench.notebook.spark_progress`
(the progress line, reached through the wait of ``SparkJob.join``) and
`jetbench.notebook.spark_dashboard` (``job.dashboard()``): the notebook layer sits above this one.

>>> s = SparkRunStatus("wordcount", 2.5, [SparkStageStatus(3, "mapInArrow at x.py:1", 2, 1, 0, 4)], 1, None)
>>> s.summary()
'Spark wordcount: running 2.5 s · 1 job · stages 0/1 done · tasks 2/4 (1 running)'
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

__all__ = ["SparkRunStatus", "SparkStageStatus", "SparkStatusSource"]


@dataclass(frozen=True)
class SparkStageStatus:
    """One Spark stage: its tasks done, running, failed, of ``total``; ``skipped`` when its
    job ended without running it (its shuffle output was there already); ``duration_s`` from
    its submission to its end (to now while it runs; None before Spark submits it); ``ended``:
    the Spark job it belongs to has ended (a stage that did not finish then was cut short)."""

    stage_id: int
    name: str
    done: int
    running: int
    failed: int
    total: int
    skipped: bool = False
    duration_s: float | None = None
    ended: bool = False

    @property
    def finished(self) -> bool:
        return self.skipped or (self.total > 0 and self.done >= self.total)

    @property
    def state(self) -> str:
        """``skipped``, ``done``, ``running``, ``waiting`` (submitted, no task started yet),
        ``pending`` (not submitted) or, for a stage its ended job did not finish, ``failed``
        (a task of it failed) or ``stopped`` (cancelled, or another stage failed)."""
        if self.skipped:
            return "skipped"
        if self.finished:
            return "done"
        if self.ended:
            return "failed" if self.failed else "stopped"
        if self.running or self.done:
            return "running"
        return "waiting" if self.duration_s is not None else "pending"


@dataclass(frozen=True)
class SparkRunStatus:
    """A run's Spark jobs and stages at one moment (``final``: the run has ended; ``error``:
    how it failed; ``cancelled``: it was cancelled). Frozen: a handle's ``metrics()``."""

    job: str
    elapsed_s: float
    stages: tuple[SparkStageStatus, ...]
    jobs: int
    ui_url: str | None
    final: bool = False
    error: str | None = None
    cancelled: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "stages", tuple(self.stages))

    @property
    def tasks_done(self) -> int:
        return sum(s.done for s in self.stages if not s.skipped)

    @property
    def tasks_running(self) -> int:
        return sum(s.running for s in self.stages)

    @property
    def tasks_total(self) -> int:
        return sum(s.total for s in self.stages if not s.skipped)

    @property
    def status(self) -> str:
        """``running``, ``done``, ``failed`` or ``cancelled``."""
        if not self.final:
            return "running"
        if self.cancelled:
            return "cancelled"
        return "failed" if self.error else "done"

    def stage_url(self, stage_id: int) -> str | None:
        """The Spark UI's page of a stage (None when the UI is off)."""
        return f"{self.ui_url}/stages/stage/?id={stage_id}&attempt=0" if self.ui_url else None

    def summary(self) -> str:
        """The progress line's text."""
        done = sum(s.finished for s in self.stages)
        jobs = f"{self.jobs} job{'s' if self.jobs != 1 else ''}"
        line = (f"Spark {self.job}: {self.status} {self.elapsed_s:.1f} s · {jobs} · "
                f"stages {done}/{len(self.stages)} done · tasks {self.tasks_done}/{self.tasks_total}")
        if self.tasks_running:
            line += f" ({self.tasks_running} running)"
        if self.ui_url:
            line += f" · Spark UI {self.ui_url}"
        if self.error:
            line += f" · {self.error}"
        return line


class SparkStatusSource:
    """Reads the status of the Spark jobs tagged ``tag`` from ``sc``'s status tracker."""

    def __init__(self, sc: Any, tag: str, job: str):
        self.sc = sc
        self.tag = tag
        self.job = job
        self.started = time.monotonic()
        self.ended: float | None = None
        self.jobs: list[int] = []  # every Spark job of the run seen so far, in order
        self.ui_url: str | None = getattr(sc, "uiWebUrl", None)
        #: when each stage was first seen finished (wall clock, s): the tracker gives no end time
        self._stage_ends: dict[int, float] = {}

    @property
    def elapsed(self) -> float:
        return (self.ended if self.ended is not None else time.monotonic()) - self.started

    def finish(self) -> None:
        """The run has ended: its elapsed time stops here."""
        if self.ended is None:
            self.ended = time.monotonic()

    def read(self, final: bool = False, error: str | None = None, cancelled: bool = False) -> SparkRunStatus:
        """The status now (the tracker forgets old jobs and stages: what it no longer knows is left out)."""
        tracker = self.sc.statusTracker()
        try:
            jvm_tracker = self.sc._jsc.statusTracker()  # its stage records carry the submission time
            ids = list(self.sc._jsc.sc().statusTracker().getJobIdsForTag(self.tag))
        except Exception:  # the context stopped, or a Spark without tags in its tracker
            jvm_tracker, ids = None, []
        for job_id in sorted(ids):
            if job_id not in self.jobs:
                self.jobs.append(job_id)
        stages: list[SparkStageStatus] = []
        seen: set[int] = set()
        now = time.time()
        for job_id in self.jobs:
            info = tracker.getJobInfo(job_id)
            if info is None or jvm_tracker is None:
                continue
            job_ended = str(info.status) in ("SUCCEEDED", "FAILED")
            for stage_id in sorted(info.stageIds):
                if stage_id in seen:
                    continue
                seen.add(stage_id)
                stage = jvm_tracker.getStageInfo(stage_id)
                if stage is None:
                    continue
                done, running, failed, total = (int(stage.numCompletedTasks()), int(stage.numActiveTasks()),
                                                int(stage.numFailedTasks()), int(stage.numTasks()))
                submitted = int(stage.submissionTime())  # 0: Spark has not submitted it
                skipped = job_ended and submitted <= 0 and done == 0
                duration = None
                if submitted > 0 and not skipped:
                    end = now
                    if (total > 0 and done >= total) or job_ended:
                        end = self._stage_ends.setdefault(stage_id, now)
                    duration = max(0.0, end - submitted / 1000)
                stages.append(SparkStageStatus(stage_id, str(stage.name()), done, running, failed, total, skipped,
                                               duration, job_ended))
        return SparkRunStatus(self.job, self.elapsed, tuple(stages), len(self.jobs), self.ui_url, final, error,
                              cancelled)
