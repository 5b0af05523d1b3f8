"""Nexmark SMOKE on the SparkRunner: ways of running it, A/B in one session, queries interleaved.

    .venv/bin/python benchmarks/nexmark_spark_smoke.py [--repeat 2] [--queries 0 5] [--variants ...]

Variants (any of): ``list+aqe`` (the events as an in-memory list source, pickled inside every task's
plan, adaptive execution on: how ``jetbench nexmark --suite smoke --runner spark`` ran before
issue 31 item 5), ``cached`` (the events cached in Spark once per size, `events_source`, adaptive
execution off: how it runs now), ``cached+aqe``, ``cached+windows`` (``spark_window_min_items=0``:
the batch windows lowered to Spark whatever the job's size, as before the runner kept a small
job's windows in Python), ``cached-lowering`` (``spark_aggregation=False``: every aggregation and
window in Python). Adaptive execution is a runtime SQL setting, switched
before each run. Each query's digest is checked against the local executor's; prints each
variant's sum over the queries of their fastest run, then of their least CPU time (this process,
Spark's JVM and its Python workers, from /proc: less swayed by the other processes' load than the
wall clock), and the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import time

from proc_cpu import tree_cpu_seconds

from jetbench import run
from jetbench.nexmark.config import NexmarkConfig
from jetbench.nexmark.digest import digest
from jetbench.nexmark.queries import QUERIES, pipeline
from jetbench.nexmark.source import from_events
from jetbench.nexmark.suite import SMOKE_EVENTS, events_source, generate_timed, release_source
from jetbench.pipeline.connectors import Source
from jetbench.spark import SparkRunner, session

VARIANTS = ("list+aqe", "cached", "cached+aqe", "cached+windows", "cached-lowering")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, nargs="*", default=sorted(QUERIES))
    ap.add_argument("--variants", nargs="+", choices=VARIANTS, default=["list+aqe", "cached"])
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    load_before = os.getloadavg()
    spark = session()
    runners = {"cached-lowering": SparkRunner(spark, spark_aggregation=False),
               "cached+windows": SparkRunner(spark, spark_window_min_items=0)}
    default = SparkRunner(spark)
    events: dict[int, tuple[list, Source]] = {}
    local: dict[int, str] = {}
    seconds: dict[tuple[int, str], list[float]] = {}
    cpu_seconds: dict[tuple[int, str], list[float]] = {}
    try:
        for _ in range(args.repeat):
            for q in args.queries:
                config = NexmarkConfig(num_events=SMOKE_EVENTS.get(q, 100_000))
                if config.num_events not in events:
                    pairs = generate_timed(config)[0]
                    events[config.num_events] = pairs, events_source(pairs, default)
                pairs, cached = events[config.num_events]
                if q not in local:
                    local[q] = digest(run(pipeline(q, from_events(pairs), config), progress=False))
                for v in args.variants:
                    spark.conf.set("spark.sql.adaptive.enabled", "true" if v.endswith("+aqe") else "false")
                    source = from_events(pairs) if v.startswith("list") else cached
                    cpu_before, started = tree_cpu_seconds(), time.perf_counter()
                    results = runners.get(v, default).run(pipeline(q, source, config), progress=False)
                    seconds.setdefault((q, v), []).append(time.perf_counter() - started)
                    cpu_seconds.setdefault((q, v), []).append(tree_cpu_seconds() - cpu_before)
                    if digest(results) != local[q]:
                        raise SystemExit(f"Q{q} {v}: digest {digest(results)} differs from the local executor's")
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", "false")
        for _, source in events.values():
            release_source(source)
    print(f"load average before {load_before[0]:.1f}, after {os.getloadavg()[0]:.1f}; every digest equal")
    for label, figures in (("wall", seconds), ("CPU", cpu_seconds)):
        for v in args.variants:
            best = [min(figures[(q, v)]) for q in args.queries]
            print(f"{v:16s} {label:4s} {sum(best):6.2f} s  "
                  + "  ".join(f"Q{q} {s:.2f}" for q, s in zip(args.queries, best, strict=True)))


if __name__ == "__main__":
    main()
