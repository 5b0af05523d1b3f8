"""A/B in one session: Spark's summed counts of N keys (2 partitions) handed to a Python ``mapInArrow``, the
rows of a lowered aggregation as `jetbench.spark.stage_task.AccumulatorRows` receives them, with the
tuple-key column (always null here, as for the word count's str keys) as ``array<struct>`` (before 2ca18b0)
and as ``binary`` (after); wall clock and CPU seconds of the JVM and the Python workers, medians of
interleaved runs after a warm-up of each.

    .venv/bin/python benchmarks/spark_tuple_key_column.py [--keys 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Iterator
from typing import Any

from spark_wordcount_cpu import cpu_by_kind

MEMBER = "struct<s:string,i:bigint,f:double,b:boolean,y:binary>"
KEY_COLUMN = {"array<struct>": f"array<{MEMBER}>", "binary": "binary"}


def summed(spark: Any, keys: int, tuple_type: str) -> Any:
    """Two rows per key, summed by Spark over the key columns of a lowered aggregation."""
    from pyspark.sql import functions as F

    rows = spark.range(0, 2 * keys, 1, 2).select(
        F.concat(F.lit("w"), (F.col("id") % keys).cast("string")).alias("k_s"),
        F.lit(None).cast("bigint").alias("k_i"), F.lit(None).cast("double").alias("k_f"),
        F.lit(None).cast("boolean").alias("k_b"), F.lit(None).cast("binary").alias("k_y"),
        F.lit(None).cast(tuple_type).alias("k_t"), F.lit(0).cast("bigint").alias("g"),
        F.lit(None).cast("binary").alias("data"), F.lit(1).cast("bigint").alias("a_n"))
    return rows.groupBy("k_s", "k_i", "k_f", "k_b", "k_y", "k_t", "g", "data").agg(F.sum("a_n").alias("a_n"))


def count_rows(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    total = sum(batch.num_rows for batch in batches)
    yield pa.RecordBatch.from_arrays([pa.array([total], pa.int64())], names=["n"])


def main() -> None:
    from pyspark.sql import functions as F

    from jetbench.spark import session

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    spark = session("local[2]", fast_start=False)

    def job(tuple_type: str) -> int:
        return summed(spark, args.keys, tuple_type).mapInArrow(count_rows, "n bigint").agg(F.sum("n")).collect()[0][0]

    for tuple_type in KEY_COLUMN.values():
        job(tuple_type)
    runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in KEY_COLUMN}
    for _ in range(args.repeat):
        for name, tuple_type in KEY_COLUMN.items():
            before, start = cpu_by_kind(), time.perf_counter()
            assert job(tuple_type) == args.keys
            wall, after = time.perf_counter() - start, cpu_by_kind()
            runs[name].append((wall, after["jvm"] - before["jvm"], after["workers"] - before["workers"]))
    print(f"{args.keys:,} keys, local[2], load {os.getloadavg()[0]:.2f}")
    for name, values in runs.items():
        wall, jvm, workers = (statistics.median(v[i] for v in values) for i in range(3))
        print(f"  k_t {name:14s} wall {wall:5.2f} s  JVM CPU {jvm:5.2f} s  workers CPU {workers:5.2f} s"
              f"  (walls {[round(v[0], 2) for v in values]})")


if __name__ == "__main__":
    main()
