"""The idle-CPU job of Jet's "Idle Green Threads" blog post (2019) without a rate limit:
ints -> 6 identity maps -> count per window of 1000 items.

Ways to run it, in one process: the jetbench DAG (6 separate map vertices, not fused), the
Pipeline version (``--fused``: the planner fuses the maps), the loop a Python programmer writes
(`idiomatic_loop`: the six calls nested, the key and the count inline; the baseline of the
ratio), the older "same functions" loop calling the job's key and ``counting()`` functions per
item (`plain_loop`), and a thread per vertex joined by ``queue.Queue`` (the naive baseline).
"""

from __future__ import annotations

import queue
import threading
from typing import Any

from .. import sinks, sources
from ..core import DAG, Edge, ExecutionService
from ..pipeline import Pipeline
from ..processors import (
    aggregate_by_key,
    collect_sink,
    items_source,
    map_processor,
)
from ..processors.aggregate_operation import counting
from .common import BenchReport, interleaved, on_thread, timed

MAPS = 6
WINDOW = 1000
_MISSING = object()


def identity(x: Any) -> Any:
    return x


def window_key(x: int) -> int:
    return x // WINDOW


def chain_dag(n: int) -> DAG:
    """The DAG version: six separate map vertices, as the blog post's job has them."""
    dag = DAG()
    prev = dag.new_vertex("source", items_source(range(n)))
    for i in range(MAPS):
        v = dag.new_vertex(f"map-{i + 1}", map_processor(identity))
        dag.edge(Edge.between(prev, v))
        prev = v
    count = dag.new_vertex("count-per-window", aggregate_by_key(window_key, counting()), local_parallelism=1)
    sink = dag.new_vertex("sink", collect_sink(), local_parallelism=1)
    dag.edge(Edge.between(prev, count).all_to_one()).edge(Edge.between(count, sink))
    return dag


def chain_pipeline(n: int) -> Pipeline:
    """The Pipeline version: the planner fuses the six maps into one vertex."""
    p = Pipeline()
    stage = p.read_from(sources.items(range(n)))
    for _ in range(MAPS):
        stage = stage.map(identity)
    stage.group_by(window_key).aggregate(counting()).write_to(sinks.collect())
    return p


def plain_loop(n: int) -> dict[int, int]:
    """The same functions in one fused loop: what jetbench is measured against."""
    f = identity
    key = window_key
    create, accumulate = counting().create, counting().accumulate
    counts: dict[int, int] = {}
    get = counts.get
    for x in range(n):
        x = f(f(f(f(f(f(x))))))
        k = key(x)
        acc = get(k, _MISSING)
        counts[k] = accumulate(create() if acc is _MISSING else acc, x)
    return counts


def idiomatic_loop(n: int) -> dict[int, int]:
    """What a Python programmer writes: the map functions nested in one loop, a dict count."""
    counts: dict[int, int] = {}
    for x in range(n):
        x = identity(identity(identity(identity(identity(identity(x))))))
        k = x // WINDOW
        counts[k] = counts.get(k, 0) + 1
    return counts


def queue_threads(n: int, capacity: int = 1024) -> dict[int, int]:
    """One OS thread per vertex, items handed over one at a time through ``queue.Queue``."""
    end = None  # after the last item
    queues: list[queue.Queue[int | None]] = [queue.Queue(capacity) for _ in range(MAPS + 1)]
    counts: dict[int, int] = {}

    def source() -> None:
        put = queues[0].put
        for x in range(n):
            put(x)
        put(end)

    def stage(i: int) -> None:
        get, put = queues[i].get, queues[i + 1].put
        while (x := get()) is not end:
            put(identity(x))
        put(end)

    def count() -> None:
        get = queues[MAPS].get
        create, accumulate = counting().create, counting().accumulate
        while (x := get()) is not end:
            k = window_key(x)
            acc = counts.get(k, _MISSING)
            counts[k] = accumulate(create() if acc is _MISSING else acc, x)

    threads = [threading.Thread(target=source)] + [threading.Thread(target=stage, args=(i,)) for i in range(MAPS)]
    threads.append(threading.Thread(target=count))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return counts


def run(items: int = 2_000_000, repeat: int = 3, fused: bool = False, threads: int = 1,
        queue_items: int = 100_000) -> BenchReport:
    service = ExecutionService(cooperative_threads=threads)
    dag = chain_pipeline(items).to_dag() if fused else chain_dag(items)
    timings = interleaved({
        "engine": lambda: service.run(dag),
        "baseline": on_thread(lambda: idiomatic_loop(items)),
        "same_functions": on_thread(lambda: plain_loop(items)),
    }, repeat)
    engine, baseline = timings["engine"], timings["baseline"]
    equal = sorted(engine.result) == sorted(baseline.result.items()) and timings["same_functions"].result == baseline.result
    extra: dict[str, Any] = {"fused": fused, "cooperative_threads": threads}
    if queue_items:
        q = timed(lambda: queue_threads(queue_items))
        extra["queue_threads_items_per_s"] = queue_items / q.wall_s
        extra["queue_threads_ratio"] = (queue_items / q.wall_s) / (items / baseline.wall_s)
        equal = equal and q.result == plain_loop(queue_items)
    extra["jetbench_cpu_s"] = engine.cpu_s
    extra["baseline_cpu_s"] = baseline.cpu_s
    name = "chain --fused" if fused else "chain"
    report = BenchReport.of(name, items, engine, baseline, equal, **extra)
    report.baseline_kind = "idiomatic loop: nested calls, counts[k] = counts.get(k, 0) + 1"
    return report.against("same_functions", timings["same_functions"])
