"""The SparkRunner's Nexmark SMOKE suite on ``local[2]`` against ``local[1]``, for `jetbench.bench.nexmark`.

Beam's SMOKE suite (`jetbench.nexmark.suite.smoke`: Q0-Q9 and Q11, 100,000 events a query,
10,000 for Q4, Q6 and Q9; the events generated in the driver, not timed) runs on a
`jetbench.spark.SparkRunner` over the embedded session started on each master in turn, as
``bench spark-wordcount`` does: a warm-up pass of the whole suite first (the JVM's JIT and the
Python workers), then the timed pass. ``scaling`` = the suite's seconds on ``local[1]`` over
its seconds on ``local[2]`` (the sum of the queries' times from submission to the last result;
wall clock, so it needs the machine's second core to be free: the load average is reported).
Every query's digest must be the same on both masters and the local executor's.
"""

from __future__ import annotations

from typing import Any

MASTERS = ("local[1]", "local[2]")


def run(masters: tuple[str, ...] = MASTERS, generators: int = 100) -> dict[str, Any]:
    """The suite on each of ``masters`` (narrowest first): seconds, per-query seconds, scaling."""
    from ..nexmark.suite import smoke
    from ..spark import SparkRunner, session, stop
    from ..spark._session import _active
    from .nexmark import load_average

    entry = _active()
    load_before = load_average()
    local = {r.query: r.digest for r in smoke(generators)}
    seconds: dict[str, float] = {}
    per_query: dict[str, dict[int, float]] = {}
    equal = True
    try:
        for master in masters:
            runner = SparkRunner(session(master, fast_start=False))
            smoke(generators, runner)  # warm-up
            runs = smoke(generators, runner)
            seconds[master] = sum(r.seconds for r in runs)
            per_query[master] = {r.query: r.seconds for r in runs}
            equal = equal and all(local[r.query] == r.digest for r in runs)
    finally:
        if _active() is not entry:
            stop()
    narrowest, widest = masters[0], masters[-1]
    return {"spark_smoke_s": seconds, "spark_smoke_query_s": per_query,
            "spark_smoke_scaling": seconds[narrowest] / seconds[widest], "spark_smoke_results_equal": equal,
            "spark_load_average_before": load_before, "spark_load_average_after": load_average()}
