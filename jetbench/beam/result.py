"""The `PipelineResult` of a pipeline run by `JetbenchRunner`: Beam's view of a jetbench `Job`.

``wait_until_finish()`` returns the terminal `PipelineState` (DONE) or raises the job's error
(a `JobError` naming the vertex, its cause a `BeamStageError` naming the Beam step);
``cancel()`` cancels the job; ``metrics().query()`` answers with Beam's counters, distributions,
gauges and string sets; ``job`` is the jetbench `Job` (``result.job.dashboard()``,
``result.job.metrics()``).

>>> import apache_beam as beam
>>> from jetbench.beam import JetbenchRunner
>>> p = beam.Pipeline(runner=JetbenchRunner())
>>> _ = p | beam.Create([1, 2, 3]) | beam.Map(lambda x: x * x)
>>> result = p.run()
>>> result.wait_until_finish(), result.job.status.value
('DONE', 'completed')
"""

from __future__ import annotations

from typing import Any

from apache_beam.runners.runner import PipelineResult, PipelineState

from ..core.errors import JobCancelled, JobTimeout
from ..core.job import Job
from ..core.job_handle import JobStatus
from .translation import BeamPlan

__all__ = ["JetbenchPipelineResult"]

_STATES = {
    JobStatus.RUNNING: PipelineState.RUNNING,
    JobStatus.COMPLETED: PipelineState.DONE,
    JobStatus.FAILED: PipelineState.FAILED,
    JobStatus.CANCELLED: PipelineState.CANCELLED,
    JobStatus.SUSPENDED: PipelineState.STOPPED,
}


class JetbenchPipelineResult(PipelineResult):
    """A running or finished Beam pipeline on jetbench."""

    def __init__(self, job: Job, plan: BeamPlan):
        super().__init__(PipelineState.RUNNING)
        self.job = job
        self.plan = plan

    @property
    def state(self) -> Any:
        return _STATES[self.job.status]

    def wait_until_finish(self, duration: float | None = None) -> Any:
        """Wait (``duration`` in milliseconds, as Beam counts, None for ever); the state. A failed
        job raises its error; a cancelled one returns CANCELLED; a wait running out returns the
        state then (RUNNING)."""
        try:
            self.job.join(None if duration is None else duration / 1000.0, progress=False)
        except JobTimeout:
            pass
        except JobCancelled:
            pass
        return self.state

    def cancel(self) -> Any:
        """Cancel the job, wait for its threads, and return the state (CANCELLED unless it had
        already finished)."""
        self.job.stop()
        return self.state

    def metrics(self) -> Any:
        """Beam's user metrics of the bundles run so far (``.query(MetricsFilter())``)."""
        return self.plan.collector.results(user_metrics_only=True)

    def monitoring_metrics(self) -> Any:
        """All of Beam's metrics, the SDK's own (element counts, timings) included."""
        return self.plan.collector.results(user_metrics_only=False)

    def monitoring_infos(self) -> Any:
        for infos in self.plan.collector.by_stage().values():
            yield from infos

    def __repr__(self) -> str:
        return f"JetbenchPipelineResult({self.job.name!r}, {self.state})"
