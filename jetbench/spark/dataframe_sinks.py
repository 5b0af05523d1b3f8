"""Spark-backed pipeline sinks: the job's items become a DataFrame, parquet files or a table.

On the local executor each sink instance collects its items; when the job ends they become
one DataFrame (through Arrow), which is written out for `parquet` and `table`; the job's
result is the DataFrame (read back from where it was written). Under
`jetbench.spark.SparkRunner` the items never come to the driver: the stage that feeds the
sink becomes the DataFrame inside Spark.

Items map to rows field by field: dicts by key, pyspark ``Row`` and named tuples (such as
`jetbench.WindowResult`) by field, dataclasses by field, plain tuples as ``_1, _2, ...``
and anything else as one column ``value``. As with every collecting sink, a job's result
is that of its first collecting sink.
"""

from __future__ import annotations

import os
from typing import Any

from ..core.errors import JetbenchError
from ..pipeline.connectors import Sink
from ..processors.collect_sink import CollectSinkP
from ._arrow import item_to_record, items_to_arrow

__all__ = ["SparkSink", "dataframe", "parquet", "table"]

_MODES = ("overwrite", "append", "error", "errorifexists", "ignore")


class SparkSinkP(CollectSinkP):
    """Collects the items of one instance; the supplier turns all of them into a DataFrame.

    As the `collect` sink it is exactly-once under a processing guarantee: items are committed
    to the result when the snapshot covering them is stored, and restored from it."""


class SparkSink:
    """Supplier of `SparkSinkP`; ``kind`` is ``"dataframe"``, ``"parquet"`` or ``"table"``."""

    def __init__(self, kind: str, target: str | None = None, mode: str = "overwrite", schema: Any = None):
        if mode not in _MODES:
            raise JetbenchError(f"spark sink: mode must be one of {', '.join(_MODES)}, got {mode!r}")
        self.kind = kind
        self.target = target
        self.mode = mode
        self.schema = schema

    def __call__(self) -> SparkSinkP:
        return SparkSinkP()

    def merge_results(self, parts: list[list]) -> Any:
        """Local executor: every instance's items -> one DataFrame -> written (see `finish`)."""
        from ._session import session

        spark = session()
        return self.finish(items_to_dataframe(spark, [x for part in parts for x in part], self.schema))

    def finish(self, df: Any) -> Any:
        """Write ``df`` where this sink says; return what the job returns."""
        if self.kind == "parquet":
            df.write.mode(self.mode).parquet(self.target)
            return df.sparkSession.read.parquet(self.target)
        if self.kind == "table":
            df.write.mode(self.mode).saveAsTable(self.target)
            return df.sparkSession.table(self.target)
        return df

    def __repr__(self) -> str:
        return f"spark_sink({self.kind}{'' if self.target is None else ', ' + repr(self.target)})"


def items_to_dataframe(spark: Any, items: list, schema: Any = None) -> Any:
    """A DataFrame of ``items`` (fields as in the module doc), through Arrow unless a schema is given."""
    if schema is not None:
        return spark.createDataFrame([_row(x) for x in items], schema)
    if not items:
        from pyspark.sql.types import StructType

        return spark.createDataFrame([], StructType([]))
    return spark.createDataFrame(items_to_arrow(items))


def _row(item: Any) -> Any:
    from pyspark.sql import Row

    return Row(**item_to_record(item))


def rdd_to_dataframe(spark: Any, rdd: Any, schema: Any = None) -> Any:
    """SparkRunner: a DataFrame of an RDD of items, built inside Spark (schema inferred from
    the first rows when not given)."""
    rows = rdd.map(_row)
    if schema is None and not rows.take(1):
        from pyspark.sql.types import StructType

        return spark.createDataFrame([], StructType([]))
    return spark.createDataFrame(rows, schema)


def dataframe(schema: Any = None) -> Sink:
    """The job's result is a DataFrame of all items (``schema``: optional, a DDL string or ``StructType``)."""
    return Sink("spark.dataframe", SparkSink("dataframe", schema=schema))


def parquet(path: str | os.PathLike, mode: str = "overwrite", schema: Any = None) -> Sink:
    """Writes the items as parquet files into the directory ``path`` (``mode`` as in Spark's
    ``DataFrameWriter``); the job's result is the DataFrame read back."""
    path = os.fspath(path)
    return Sink(f"spark.parquet({os.path.basename(path.rstrip('/')) or path})", SparkSink("parquet", path, mode, schema))


def table(name: str, mode: str = "overwrite", schema: Any = None) -> Sink:
    """Saves the items as the Spark table ``name``; the job's result is ``spark.table(name)``."""
    return Sink(f"spark.table({name})", SparkSink("table", name, mode, schema))
