"""The Spark-backed variant of the experiment's source: a dataset Spark makes, loaded before
the timed window, replayed on the wall clock at a fixed rate."""

from __future__ import annotations

from typing import Any


def _events_size(items: float) -> int:
    return max(1000, int(items))


def prepare_spark_dataset(items: float) -> None:
    """Make (or reuse) the cached events dataset, so no point pays Spark's set-up in its window."""
    from ..spark import datasets

    datasets.events_path(_events_size(items), keys=100, seed=4)


def spark_replay_source(rate: float, seconds: float) -> Any:
    """A timestamped source replaying Spark-made events at ``rate`` items per second.

    Spark makes the dataset (`jetbench.spark.datasets.events`, written as parquet in jetbench's
    cache) when it is not cached yet; the replay reads Spark's files with pyarrow, so a process
    replaying a dataset made earlier (each point of a sweep, after `prepare_spark_dataset`)
    starts no JVM, whose threads would otherwise share the cores the point measures.
    """
    from ..spark import dataframe_sources as spark_sources
    from ..spark import datasets

    path = datasets.events_path(_events_size(rate * seconds), keys=100, seed=4)
    return spark_sources.parquet(path, as_=tuple, replay=rate)
