"""What Spark says of a running `SparkRunner` job: its Spark jobs, stages and tasks, read from
``SparkContext.statusTracker()`` (the Spark jobs of one run carry the run's job tag), and the
address of the embedded Spark UI (on 127.0.0.1 when `jetbench.spark.session` started it with
``ui=True``; None when the UI is off).

`SparkRunStatus` is a plain record (its `summary` is the one-line text of the progress line);
`SparkStatusSource.read` fills one in. The progress line that shows it, in a notebook or a
terminal, is `jetbench.notebook.spark_progress`, reached through the registered view
``"spark_progress"`` (the notebook layer sits above this one).

>>> s = SparkRunStatus("wordcount", 2.5, [SparkStageStatus(3, "mapInArrow at x.py:1", 2, 1, 0, 4)], 1, None)
>>> s.summary()
'Spark wordcount: running 2.5 s · 1 job · stages 0/1 done · tasks 2/4 (1 running)'
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SparkRunStatus", "SparkStageStatus", "SparkStatusSource"]


@dataclass(frozen=True)
class SparkStageStatus:
    """One Spark stage: its tasks done, running, failed, of ``total``; ``skipped`` when its
    job ended without running it (its shuffle output was there already)."""

    stage_id: int
    name: str
    done: int
    running: int
    failed: int
    total: int
    skipped: bool = False

    @property
    def finished(self) -> bool:
        return self.skipped or (self.total > 0 and self.done >= self.total)


@dataclass(frozen=True)
class SparkRunStatus:
    """A run's Spark jobs and stages at one moment (``final``: the run has ended, ``error``: how)."""

    job: str
    elapsed_s: float
    stages: list[SparkStageStatus]
    jobs: int
    ui_url: str | None
    final: bool = False
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

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
        if not self.final:
            return "running"
        return "failed" if self.error else "done"

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
        self.jobs: list[int] = []  # every Spark job of the run seen so far, in order
        self.ui_url: str | None = getattr(sc, "uiWebUrl", None)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def read(self, final: bool = False, error: str | None = None) -> SparkRunStatus:
        """The status now (the tracker forgets old jobs and stages: what it no longer knows is left out)."""
        tracker = self.sc.statusTracker()
        try:
            ids = list(self.sc._jsc.sc().statusTracker().getJobIdsForTag(self.tag))
        except Exception:  # the context stopped, or a Spark without tags in its tracker
            ids = []
        for job_id in sorted(ids):
            if job_id not in self.jobs:
                self.jobs.append(job_id)
        stages: list[SparkStageStatus] = []
        seen: set[int] = set()
        for job_id in self.jobs:
            info = tracker.getJobInfo(job_id)
            if info is None:
                continue
            job_ended = str(info.status) in ("SUCCEEDED", "FAILED")
            for stage_id in sorted(info.stageIds):
                if stage_id in seen:
                    continue
                seen.add(stage_id)
                stage = tracker.getStageInfo(stage_id)
                if stage is None:
                    continue
                skipped = job_ended and stage.numCompletedTasks == 0 and stage.numActiveTasks == 0
                stages.append(SparkStageStatus(stage_id, str(stage.name), int(stage.numCompletedTasks),
                                               int(stage.numActiveTasks), int(stage.numFailedTasks),
                                               int(stage.numTasks), skipped))
        return SparkRunStatus(self.job, self.elapsed, stages, len(self.jobs), self.ui_url, final, error)
