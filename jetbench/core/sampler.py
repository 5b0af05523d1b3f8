"""MetricsSampler: records a running job's metrics at an interval, as flat records for frames and plots."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Protocol

from .metrics import JobMetrics


class SampledJob(Protocol):
    """What the sampler reads of a job (a `Job`)."""

    @property
    def name(self) -> str: ...

    @property
    def is_done(self) -> bool: ...

    def metrics(self) -> JobMetrics: ...

    def add_done_listener(self, fn: Callable[[Any], None]) -> None: ...


class MetricsSampler:
    """Samples a job's metrics every ``interval_s`` on its own thread into flat records.

    Each record is a dict with ``t`` (seconds since submission, on the job's clock), ``kind``
    ("tasklet", "worker" or "queue", one per DAG edge: `QueueStatistics`, with where the barrier
    of a snapshot in flight is) and the statistics' fields (a worker's own ``kind`` becomes
    ``worker_kind``).
    The thread takes one last sample as soon as the job ends and stops (``Job.join`` waits
    for it), or stops on `stop()`.
    """

    def __init__(self, job: SampledJob, interval_s: float = 0.1):
        self.job = job
        self.interval_s = interval_s
        self.records: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"jetbench.{job.name}.sampler", daemon=True)

    @property
    def thread(self) -> threading.Thread:
        """The sampling thread (named ``jetbench.<job>.sampler``)."""
        return self._thread

    @property
    def running(self) -> bool:
        """Whether the sampling thread is still alive."""
        return self._thread.is_alive()

    def start(self) -> MetricsSampler:
        self._thread.start()
        self.job.add_done_listener(lambda _job: self._stop.set())
        return self

    def join(self, timeout: float | None = None) -> None:
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def stop(self) -> list[dict[str, Any]]:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        return self.records

    def sample(self) -> JobMetrics:
        m = self.job.metrics()
        for t in m.tasklets:
            self.records.append({"t": m.elapsed_s, "kind": "tasklet", **asdict(t)})
        for w in m.workers:
            row = asdict(w)
            row["worker_kind"] = row.pop("kind")  # "cooperative"/"blocking"; "kind" is the record type
            self.records.append({"t": m.elapsed_s, "kind": "worker", **row})
        for q in m.by_edge():
            self.records.append({"t": m.elapsed_s, "kind": "queue", **asdict(q)})
        return m

    def _run(self) -> None:
        while True:
            done = self.job.is_done
            self.sample()
            if done or (self._stop.is_set() and not self.job.is_done):
                return
            self._stop.wait(self.interval_s)
