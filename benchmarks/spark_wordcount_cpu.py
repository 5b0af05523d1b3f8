"""Where the Spark word count's CPU goes: the DataFrame job against the SparkRunner, wall clock and CPU
seconds of each process kind (this driver, Spark's JVM, its Python workers), interleaved in one session.

    .venv/bin/python benchmarks/spark_wordcount_cpu.py [--master local[2]] [--lines 1000000] [--repeat 2]

The jobs are those of `jetbench bench spark-wordcount` (`jetbench.bench.spark_wordcount`): the idiomatic
DataFrame job with Spark's adaptive execution on, and the Pipeline on ``SparkRunner(spark)``; one warm-up
run of each, then ``--repeat`` interleaved runs, each printed. CPU seconds come from /proc (utime + stime of
the live processes under this one), which the other processes' load moves less than the wall clock: the
Python workers' seconds are the tokenizing and pre-counting stage, the JVM's are Spark's planning, shuffles
and aggregation (all of the DataFrame job).
"""

from __future__ import annotations

import argparse
import os
import time
from functools import partial

from proc_cpu import process_tree

from jetbench.bench.common import with_adaptive
from jetbench.bench.spark_wordcount import _counts, dataframe_wordcount, sparkrunner_pipeline
from jetbench.spark import SparkRunner, datasets, session

KINDS = ("driver", "jvm", "workers")


def cpu_by_kind() -> dict[str, float]:
    """CPU seconds of this process (driver), the JVM and the Python workers under it (Linux /proc)."""
    out = dict.fromkeys(KINDS, 0.0)
    for pid, seconds, command in process_tree():
        kind = "driver" if pid == os.getpid() else "jvm" if "java" in command else "workers" if "pyspark" in command else None
        if kind is not None:
            out[kind] += seconds
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    spark = session(args.master, fast_start=False)
    path = datasets.corpus_path(args.lines, session=spark)
    runner = SparkRunner(spark)
    job = sparkrunner_pipeline(path)
    jobs = {"dataframe": partial(with_adaptive, spark, True, partial(dataframe_wordcount, spark, path)),
            "sparkrunner": partial(_counts, runner, job)}
    results = {name: fn() for name, fn in jobs.items()}  # warm-up: Python workers, query shapes
    assert results["dataframe"] == results["sparkrunner"], "the two jobs count differently"
    print(f"{args.master}, {args.lines:,} lines, load {os.getloadavg()[0]:.2f}")
    for _ in range(args.repeat):
        for name, fn in jobs.items():
            before, start = cpu_by_kind(), time.perf_counter()
            fn()
            wall, after = time.perf_counter() - start, cpu_by_kind()
            cpu = "  ".join(f"{k} {after[k] - before[k]:5.2f}" for k in KINDS)
            print(f"  {name:12s} wall {wall:6.2f} s   CPU s: {cpu}")
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
