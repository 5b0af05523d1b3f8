"""pandas views of engine metrics (kept out of ``jetbench.core``, which is standard library only)."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from .core import JobMetrics, MetricsSampler


def metrics_frame(source: MetricsSampler | JobMetrics | list[dict[str, Any]], kind: str = "tasklet") -> pd.DataFrame:
    """A DataFrame of tasklet (``kind="tasklet"``), worker (``kind="worker"``) or per-edge queue
    (``kind="queue"``: edge, source, destination, ordinal, size, capacity, fill, and the barrier
    of a snapshot in flight: barrier_id, barrier, barrier_in_queue / _held / _passed) statistics.

    ``source`` is a `MetricsSampler` (one row per tasklet, worker or edge per sample, with the
    sample time ``t``), its ``records``, or a single `JobMetrics` snapshot.

    >>> from jetbench import run, ExecutionService
    >>> from jetbench.wordcount import wordcount_dag
    >>> job = ExecutionService().submit(wordcount_dag(["a b", "b"]))
    >>> _ = job.join()
    >>> metrics_frame(job.metrics())[["vertex", "received_count"]].to_dict("records")[:2]
    [{'vertex': 'source', 'received_count': 0}, {'vertex': 'tokenize', 'received_count': 2}]
    """
    import pandas as pd

    from .core import JobMetrics

    if kind not in ("tasklet", "worker", "queue"):
        raise ValueError(f"kind must be 'tasklet', 'worker' or 'queue', got {kind!r}")
    if isinstance(source, JobMetrics):
        stats = source.by_edge() if kind == "queue" else getattr(source, kind + "s")
        rows = [asdict(x) for x in stats]
        return pd.DataFrame(rows)
    records = source if isinstance(source, list) else source.records
    rows = [{k: v for k, v in r.items() if k != "kind"} for r in records if r.get("kind") == kind]
    return pd.DataFrame(rows)


def job_metrics_frame(job: Any, kind: str = "tasklet") -> pd.DataFrame:
    """``job.metrics_frame()``: the job's recorded series if it has a sampler (see
    ``ExecutionService(metrics_interval_s=...)``), else one snapshot."""
    return metrics_frame(job.sampler if job.sampler is not None else job.metrics(), kind)
