"""pandas views of engine metrics (kept out of ``jetbench.core``, which is standard library only)."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from .core import JobMetrics, MetricsSampler


def metrics_frame(source: MetricsSampler | JobMetrics | list[dict[str, Any]], kind: str = "tasklet") -> pd.DataFrame:
    """A DataFrame of tasklet (``kind="tasklet"``) or worker (``kind="worker"``) statistics.

    ``source`` is a `MetricsSampler` (one row per tasklet per sample, with the sample time
    ``t``), its ``records``, or a single `JobMetrics` snapshot.

    >>> from jetbench import run, ExecutionService
    >>> from jetbench.examples import wordcount_dag
    >>> job = ExecutionService().submit(wordcount_dag(["a b", "b"]))
    >>> _ = job.join()
    >>> metrics_frame(job.metrics())[["vertex", "received_count"]].to_dict("records")[:2]
    [{'vertex': 'source', 'received_count': 0}, {'vertex': 'tokenize', 'received_count': 2}]
    """
    import pandas as pd

    if hasattr(source, "tasklets") and hasattr(source, "workers"):
        rows = [asdict(x) for x in (source.tasklets if kind == "tasklet" else source.workers)]
        return pd.DataFrame(rows)
    records = source.records if hasattr(source, "records") else source
    rows = [{k: v for k, v in r.items() if k != "kind"} for r in records if r.get("kind") == kind]
    return pd.DataFrame(rows)


def job_metrics_frame(job: Any, kind: str = "tasklet") -> pd.DataFrame:
    """``job.metrics_frame()``: the job's recorded series if it has a sampler (see
    ``ExecutionService(metrics_interval_s=...)``), else one snapshot."""
    return metrics_frame(job.sampler if job.sampler is not None else job.metrics(), kind)
