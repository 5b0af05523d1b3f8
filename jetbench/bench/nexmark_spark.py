"""The SparkRunner's Nexmark SMOKE suite on ``local[2]`` against ``local[1]``, for `jetbench.bench.nexmark`.

Beam's SMOKE suite (Q0-Q9 and Q11, 100,000 events a query, 10,000 for Q4, Q6 and Q9, Beam's
100 generators) runs on a `jetbench.spark.SparkRunner` over the embedded session started on each
master in turn, as ``bench spark-wordcount`` does: a warm-up pass of the whole suite first (the
JVM's JIT and the Python workers), then the timed pass. The events are generated inside the
Spark tasks (`jetbench.nexmark.source.nexmark`: task k of n runs generators k, k+n, ...), as a
Spark job gets its input without the driver: ``jetbench nexmark --suite smoke --runner spark``
instead generates them in the driver and caches them in Spark once per size
(`jetbench.nexmark.suite.events_source`), outside the queries' times.
``scaling`` = the suite's seconds on ``local[1]`` over its seconds on ``local[2]`` (the sum of
the queries' times from submission to the last result; wall clock, so it needs the machine's
second core to be free: the load average is reported). Every query's digest must equal the
local executor's over the same events.
"""

from __future__ import annotations

import time
from typing import Any

MASTERS = ("local[1]", "local[2]")


def generated_in_tasks(runner: Any, generators: int = 100) -> dict[int, tuple[float, str]]:
    """Each SMOKE query on ``runner`` over events generated in the job: query -> (seconds, digest)."""
    from ..nexmark.config import NexmarkConfig
    from ..nexmark.digest import digest
    from ..nexmark.queries import QUERIES, pipeline
    from ..nexmark.source import nexmark
    from ..nexmark.suite import SMOKE_EVENTS
    from ..runners import run as run_job

    out = {}
    for q in sorted(QUERIES):
        config = NexmarkConfig(num_events=SMOKE_EVENTS.get(q, 100_000), num_event_generators=generators)
        p = pipeline(q, nexmark(config), config)
        started = time.perf_counter()
        results = run_job(p, runner=runner)
        out[q] = (time.perf_counter() - started, digest(results))
    return out


def run(masters: tuple[str, ...] = MASTERS, generators: int = 100) -> dict[str, Any]:
    """The suite on each of ``masters`` (narrowest first): seconds, per-query seconds, scaling."""
    from ..nexmark.suite import smoke
    from ..spark import SparkRunner, session
    from ..spark._session import sessions_restored
    from .common import load_average

    load_before = load_average()
    local = {r.query: r.digest for r in smoke(generators)}
    seconds: dict[str, float] = {}
    per_query: dict[str, dict[int, float]] = {}
    equal = True
    with sessions_restored():
        for master in masters:
            runner = SparkRunner(session(master, fast_start=False))
            generated_in_tasks(runner, generators)  # warm-up
            runs = generated_in_tasks(runner, generators)
            seconds[master] = sum(s for s, _ in runs.values())
            per_query[master] = {q: s for q, (s, _) in runs.items()}
            equal = equal and all(local[q] == d for q, (_, d) in runs.items())
    narrowest, widest = masters[0], masters[-1]
    return {"spark_smoke_s": seconds, "spark_smoke_query_s": per_query,
            "spark_smoke_scaling": seconds[narrowest] / seconds[widest], "spark_smoke_results_equal": equal,
            "spark_load_average_before": load_before, "spark_load_average_after": load_average()}
