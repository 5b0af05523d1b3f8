"""jetbench on Apache Spark: an embedded local session, Spark-backed sources, sinks and
datasets, and `SparkRunner`, which runs jetbench DAGs and Pipelines as Spark jobs.

Modules: `dataframe_sources` and `dataframe_sinks` (Pipeline sources and sinks of tabular data:
DataFrames, tables, parquet files), `datasets` (data made by Spark, cached), `runner` (the
driver of `SparkRunner`), `stage_cut` (the cut of a job into stages, pure), `stage_task` (what
runs in the Spark workers), `lowering` (the built-in keyed aggregations Spark combines itself),
`spark_status` (a run's Spark jobs, stages and tasks, for its progress line).

Everything here imports pyspark; nothing outside ``jetbench.spark`` does.

    import jetbench
    from jetbench import Pipeline, aggregate, sinks
    from jetbench.spark import dataframe_sources, datasets, session

    spark = session()                      # the active session, or an embedded local one
    p = Pipeline()
    (p.read_from(dataframe_sources.dataframe(datasets.corpus(10_000), columns=["line"], as_="value"))
        .flat_map(str.split).group_by(str.lower).aggregate(aggregate.counting())
        .write_to(sinks.collect()))
    jetbench.run(p)                        # on the local cooperative executor
    jetbench.run(p, runner="spark")        # the same job as Spark stages
"""

from . import dataframe_sinks, dataframe_sources, datasets
from ._hash import stable_hash
from ._session import cache_dir, session, stop
from .runner import SparkConfig, SparkRunner

__all__ = [
    "SparkConfig",
    "SparkRunner",
    "cache_dir",
    "dataframe_sinks",
    "dataframe_sources",
    "datasets",
    "session",
    "stable_hash",
    "stop",
]
