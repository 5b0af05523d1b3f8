"""Generate the teaching notebooks in this directory from the cell sources below.

The notebooks are committed without outputs; this file is their reviewable source. After
editing a cell here, regenerate them:

    .venv/bin/python notebooks/build_notebooks.py          # write every notebook
    .venv/bin/python notebooks/build_notebooks.py --check  # exit 1 if a notebook is stale

Each notebook starts with a parameters cell (tagged ``parameters``, papermill style) holding
small default sizes, so the whole set runs headless in CI in a few minutes
(``tests/notebooks/test_notebooks.py``), and asserts its key claims, so a notebook that
silently stops showing its lesson fails.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def md(text: str) -> tuple[str, str]:
    return ("markdown", text)


def code(text: str) -> tuple[str, str]:
    return ("code", text)


def params(text: str) -> tuple[str, str]:
    return ("parameters", text)


def _clean(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def make_notebook(stem: str, cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    """A notebook with deterministic cell ids (``<stem>-NN``), so regenerating gives no diff."""
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    for i, (kind, text) in enumerate(cells):
        cell_id = f"{stem[:3]}{i:02d}"
        source = _clean(text)
        if kind == "markdown":
            nb.cells.append(nbformat.v4.new_markdown_cell(source, id=cell_id))
        else:
            cell = nbformat.v4.new_code_cell(source, id=cell_id)
            if kind == "parameters":
                cell.metadata["tags"] = ["parameters"]
            nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


# ---------------------------------------------------------------------------------------------
# 01 · getting started
# ---------------------------------------------------------------------------------------------

GETTING_STARTED = [
    md("""
    # 01 · Getting started: seed 002's word count

    jetbench runs dataflow programs the way Hazelcast Jet does: a job is a **DAG** whose vertices
    are processors and whose edges are bounded queues, executed by a few cooperative worker
    threads inside this kernel.

    This notebook writes the classic word count with the high-level **Pipeline** API, as a
    hand-built **DAG**, and in the visual **builder**; draws the DAG; checks every version
    against a plain Python loop; and shows the counts as a pandas DataFrame.
    """),
    params("""
    LINES = 2_000        # lines of generated text
    VOCABULARY = 500     # distinct words in the generated corpus
    PARALLELISM = 2      # instances of each vertex in the hand-built DAG
    THREADS = 2          # cooperative worker threads
    """),
    code("""
    from collections import Counter

    from jetbench import DAG, Edge, ExecutionService, Pipeline, aggregate, run, sinks, sources
    from jetbench.datasets import corpus
    from jetbench.wordcount import non_empty, tokenize
    from jetbench.processors import (
        Transform,
        accumulate_by_key,
        collect_sink,
        combine_by_key,
        counting,
        items_source,
        transform_processor,
    )

    lines = corpus(LINES, vocabulary_size=VOCABULARY, seed=42)
    lines[:3]
    """),
    md("""
    ## The single-threaded loop

    Seed 002 starts from the obvious nested loop: lower-case each line, split it on runs of
    non-word characters, count the non-empty words. It is our reference answer.
    """),
    code("""
    expected = Counter()
    for line in lines:
        for word in tokenize(line):
            if word:
                expected[word] += 1
    print(f"{sum(expected.values())} words, {len(expected)} distinct")
    expected.most_common(5)
    """),
    md("""
    ## The same computation as a Pipeline

    The Pipeline API separates the steps — read, flat-map into words, filter out empty ones,
    group by word and count, write — and lets the planner turn them into a DAG. Displaying the
    pipeline draws that planned DAG with Graphviz.
    """),
    code("""
    p = Pipeline()
    (p.read_from(sources.items(lines))
        .flat_map(tokenize)
        .filter(non_empty)
        .group_by(lambda word: word)
        .aggregate(aggregate.counting())
        .write_to(sinks.pandas()))
    p
    """),
    md("""
    `explain()` says what each vertex runs. Note what the planner did, exactly as seed 002
    describes: the flat-map and the filter were **fused** into one vertex (no queue between
    them), and the count runs in **two stages**, a local *accumulate* followed by a
    *combine* behind a partitioned edge, so that every word's partial counts meet in one place.
    """),
    code("""
    print(p.explain())
    planned = p.to_dag()
    names = [v.name for v in planned.vertices]
    assert any(name.startswith("fused(") for name in names), names
    assert [e.routing.value for e in planned.edges].count("partitioned") == 1
    """),
    md("""
    `sinks.pandas()` makes the job's result a DataFrame. `run()` submits the job to a fresh
    `ExecutionService`, waits for it, and returns that result.
    """),
    code("""
    counts = run(p, cooperative_threads=THREADS).rename(columns={0: "word", 1: "count"})
    assert dict(zip(counts["word"], counts["count"], strict=True)) == expected
    counts.sort_values("count", ascending=False).head(10).reset_index(drop=True)
    """),
    md("""
    ## The DAG by hand

    Underneath, the pipeline is just a DAG. Here it is written with the core API, vertex by
    vertex, as in seed 002's picture: a source, the fused tokenizer, accumulate and combine
    joined by edges **partitioned by word** (equal words always reach the same instance), and a
    sink. Each vertex runs `PARALLELISM` instances; the sink runs one.
    """),
    code("""
    def word_of(word):
        return word

    def key_of(pair):
        return pair[0]

    dag = DAG()
    source = dag.new_vertex("source", items_source(lines), local_parallelism=PARALLELISM)
    tokenizer = dag.new_vertex(
        "tokenize", transform_processor(Transform().flat_map(tokenize).filter(non_empty)), PARALLELISM
    )
    accumulate = dag.new_vertex("accumulate", accumulate_by_key(word_of, counting()), PARALLELISM)
    combine = dag.new_vertex("combine", combine_by_key(counting()), PARALLELISM)
    sink = dag.new_vertex("sink", collect_sink(), local_parallelism=1)
    dag.edge(Edge.between(source, tokenizer))
    dag.edge(Edge.between(tokenizer, accumulate).partitioned(word_of))
    dag.edge(Edge.between(accumulate, combine).partitioned(key_of))
    dag.edge(Edge.between(combine, sink))
    dag
    """),
    md("""
    Submitting a DAG returns a `Job` at once; the work happens on background threads.
    `join()` waits for the result, and `metrics()` shows what every tasklet (processor
    instance) did and on which worker thread it ran.
    """),
    code("""
    service = ExecutionService(cooperative_threads=THREADS)
    job = service.submit(dag, name="word-count")
    dag_counts = dict(job.join(timeout=60))
    print(job.metrics().table())
    assert dag_counts == expected
    assert dag_counts == dict(zip(counts["word"], counts["count"], strict=True))
    """),
    md("""
    ## The visual builder

    `jetbench.notebook.DagBuilder` draws DAGs on a canvas in JupyterLab: drag vertices from the
    palette, connect them, edit their parameters (code fields see this notebook's names, such as
    `lines` and `tokenize`), and run. Everything on the canvas can also be done from Python,
    which is how the cell below lays out the same word count; in JupyterLab you can keep
    editing it by hand. (The builder is a separate component: where it is not installed, this
    section says so and is skipped.)
    """),
    code("""
    from IPython.display import display

    try:
        from jetbench.notebook import DagBuilder
    except ImportError:  # the builder widget is not part of this installation
        DagBuilder = None

    if DagBuilder is None:
        print("DagBuilder is not available here: section skipped")
    else:
        builder = DagBuilder()
        builder.add_vertex("items", "read", params={"items": "lines"}, parallelism=PARALLELISM)
        builder.add_vertex("flat_map", "split", params={"fn": "tokenize(x)"})
        builder.add_vertex("filter", "non-empty", params={"fn": "x != ''"})
        builder.add_vertex("accumulate_by_key", "accumulate", params={"key": "x", "op": "counting"})
        builder.add_vertex("combine_by_key", "combine", params={"op": "counting"})
        builder.add_vertex("collect", "sink", parallelism=1)
        builder.connect("read", "split")
        builder.connect("split", "non-empty")
        builder.connect("non-empty", "accumulate", routing="partitioned", key="x")
        builder.connect("accumulate", "combine", routing="partitioned", key="x[0]")
        builder.connect("combine", "sink")
        display(builder)
    """),
    code("""
    if DagBuilder is not None:
        assert builder.validate() == [], builder.validate()
        assert dict(run(builder.dag, cooperative_threads=THREADS)) == expected
    """),
    md("""
    Next: [02 · cooperative scheduling](02-cooperative-scheduling.ipynb) looks at how the
    tasklets share the worker threads.
    """),
]


# ---------------------------------------------------------------------------------------------
# 02 · cooperative scheduling
# ---------------------------------------------------------------------------------------------

COOPERATIVE = [
    md("""
    # 02 · Cooperative scheduling

    Every processor instance of a job becomes a **tasklet**: an object whose `call()` does a
    small slice of work and returns. A fixed pool of **cooperative workers** (threads) each own
    a list of tasklets and call them **round-robin**, forever, parking briefly only after a
    round in which no tasklet made progress (seeds 001 and 004). No operating-system context
    switch happens between tasklets — which is also the catch: a tasklet that blocks holds up
    every other tasklet on its worker.

    This notebook makes that visible: the round-robin deal, a blocking call freezing its
    worker (and the fix), Jet's old work-stealing rule, and what more threads buy for pure
    Python work under the GIL.
    """),
    params("""
    THREADS = 2          # cooperative workers in the round-robin demo
    RATE = 2_000         # items per second from each rate-limited source
    SECONDS = 1.5        # how long the rate-limited demos run
    BLOCK_S = 0.15       # length of the "blocking call" (a time.sleep)
    BLOCK_EVERY = 500    # every BLOCK_EVERY-th item makes the blocking call
    SAMPLE_S = 0.02      # metrics sampling interval while a job runs
    GIL_ITEMS = 10_000   # items for the GIL measurement
    GIL_WORK = 300       # loop iterations of pure-Python work per item
    GIL_ROUNDS = 7       # timed rounds (1 thread, 2 threads, 1 thread) for the GIL measurement
    """),
    code("""
    import time

    import pandas as pd

    from jetbench import DAG, Edge, ExecutionService, Pipeline, Processor, sinks, sources
    from jetbench.processors import collect_sink, items_source, map_processor, noop_sink
    from jetbench.processors.generator_source import GeneratorSource

    COUNT = int(RATE * SECONDS)
    """),
    md("""
    ## 1. Tasklets, workers and the round-robin deal

    A small DAG: a rate-limited source, two map vertices with two instances each, one sink —
    six tasklets for `THREADS` workers. The service deals cooperative tasklets to workers in
    turn, and each worker then calls its own tasklets one after the other, round after round.
    In JupyterLab the dashboard below shows the job live: each tasklet's worker, calls,
    items/s and queue fill.
    """),
    code("""
    def parse(x):
        return 2 * x

    def enrich(x):
        return x + 1

    dag = DAG()
    source = dag.new_vertex("source", GeneratorSource(RATE, timestamped=False, count=COUNT), 1)
    parse_v = dag.new_vertex("parse", map_processor(parse), local_parallelism=2)
    enrich_v = dag.new_vertex("enrich", map_processor(enrich), local_parallelism=2)
    sink = dag.new_vertex("sink", collect_sink(), local_parallelism=1)
    dag.edge(Edge.between(source, parse_v)).edge(Edge.between(parse_v, enrich_v))
    dag.edge(Edge.between(enrich_v, sink))
    dag
    """),
    code("""
    service = ExecutionService(cooperative_threads=THREADS)
    job = service.submit(dag, name="round-robin")
    dashboard = job.dashboard(interval_s=0.1)
    dashboard
    """),
    md("""
    Without a live front end (a headless run, as in CI) the same facts are in the metrics
    snapshot: which worker each tasklet ran on, how often it was called, and how many rounds
    its worker went through.
    """),
    code("""
    result = job.join(timeout=60)
    dashboard.join(5)
    metrics = job.metrics()
    print(metrics.table())

    rounds = {w.index: w.iteration_count for w in metrics.workers if w.kind == "cooperative"}
    deal = pd.DataFrame([
        {"tasklet": f"{t.vertex}#{t.index}", "worker": t.worker, "calls": t.calls,
         "worker rounds": rounds[t.worker], "items in": t.received_count, "items out": t.emitted_count}
        for t in metrics.tasklets
    ])
    deal
    """),
    code("""
    assert sorted(result) == sorted(enrich(parse(x)) for x in range(COUNT))
    # dealt in turn: the i-th tasklet went to worker i % THREADS
    assert list(deal["worker"]) == [i % THREADS for i in range(len(deal))], deal
    # round-robin: a worker calls each of its tasklets once per round, so a tasklet's calls
    # track its worker's rounds (a tasklet leaves the list once it is done)
    ratio = deal["calls"] / deal["worker rounds"]
    assert ratio.between(0.9, 1.0).all(), deal
    """),
    md("""
    The dashboard keeps its history, so the job can also be drawn after the fact:
    """),
    code("""
    job.plot_metrics()
    """),
    md("""
    ## 2. A blocking call stalls every tasklet on its worker

    Now one worker thread and two independent branches in one job. The *slow* branch calls
    `slow_lookup`, which for every `BLOCK_EVERY`-th item sleeps `BLOCK_S` seconds as a remote
    call would; the *quick* branch just passes timestamped items to a latency sink. Written as
    an ordinary (cooperative) `map`, the sleep happens inside a tasklet's `call()`: the worker
    cannot run anything else until it returns.

    We record when each blocking call started and ended, and sample every tasklet's counters
    every `SAMPLE_S` seconds (`ExecutionService(metrics_interval_s=...)`).
    """),
    code("""
    blocked = []  # (start, end) of every blocking call, time.monotonic()

    def slow_lookup(x):
        \"\"\"Some items need a remote lookup: a blocking sleep.\"\"\"
        if x % BLOCK_EVERY == 0:
            start = time.monotonic()
            time.sleep(BLOCK_S)
            blocked.append((start, time.monotonic()))
        return x

    def tick(x):
        return x

    def two_branches(lookup_stage):
        p = Pipeline()
        slow = p.read_from(sources.generator(RATE, count=COUNT, timestamped=False)).set_name("slow-source")
        lookup_stage(slow).write_to(sinks.noop())
        quick = p.read_from(sources.generator(RATE, count=COUNT)).set_name("quick-source")
        quick.map(tick, name="ticker").write_to(sinks.latency())
        return p

    def cooperative_lookup(stage):
        return stage.map(slow_lookup, name="slow-lookup")

    def run_demo(job_definition):
        \"\"\"Run on one cooperative thread; return the job, the quick branch's latency summary and
        the blocked windows in seconds since the job started.\"\"\"
        blocked.clear()
        service = ExecutionService(cooperative_threads=1, metrics_interval_s=SAMPLE_S)
        job = service.submit(job_definition)
        latency = job.join(timeout=60)
        windows = [(start - job.start_time, end - job.start_time) for start, end in blocked]
        return job, latency, windows

    blocking = two_branches(cooperative_lookup)
    blocking
    """),
    code("""
    job, latency, windows = run_demo(blocking)
    print(job.metrics().table())
    print("quick branch latency (ms):", {k: round(v, 1) for k, v in latency.items() if k != "count"})
    """),
    md("""
    The engine times every cooperative call; one slower than `slow_call_ms` (1 ms, Jet's rule
    of thumb) is counted in the tasklet's `slow_calls`. The blocking map lights up:
    """),
    code("""
    calls = pd.DataFrame([
        {"tasklet": f"{t.vertex}#{t.index}", "cooperative": t.cooperative, "slow calls": t.slow_calls,
         "longest call (ms)": round(t.max_call_ms, 1)}
        for t in job.metrics().tasklets
    ])
    lookup = job.metrics().tasklet("slow-lookup")
    assert lookup.cooperative and lookup.slow_calls >= 1
    assert lookup.max_call_ms >= 0.9 * BLOCK_S * 1000
    calls
    """),
    md("""
    Now the proof that the others stood still. For each blocked window, take the metrics
    samples that fall inside it and see how far each vertex's counters (items in + items out
    + calls) moved between the first and the last of them:
    """),
    code("""
    def progress_while_blocked(job, windows, margin_s=0.03):
        \"\"\"Per blocked window: how far each vertex's counters moved between the first and the
        last metrics sample taken inside the window.\"\"\"
        frame = job.metrics_frame()
        frame["progress"] = frame["received_count"] + frame["emitted_count"] + frame["calls"]
        wide = frame.pivot_table(index="t", columns="vertex", values="progress", aggfunc="sum")
        rows = []
        for start, end in windows:
            inside = [t for t in wide.index if start + margin_s <= t <= end]
            if len(inside) >= 2:
                moved = wide.loc[inside[-1]] - wide.loc[inside[0]]
                rows.append({"blocked at (s)": round(start, 3),
                             "sampled for (s)": round(inside[-1] - inside[0], 3), **moved.to_dict()})
        return pd.DataFrame(rows)

    stalled = progress_while_blocked(job, windows)
    stalled
    """),
    code("""
    assert len(stalled) >= 3, f"only {len(stalled)} blocked windows were sampled"
    others = [c for c in stalled.columns if c not in ("blocked at (s)", "sampled for (s)", "slow-lookup")]
    assert len(others) == 6, others  # every other tasklet: all of them share the one worker
    # while slow-lookup slept, no other tasklet on its worker moved at all ...
    assert (stalled[others] == 0).all().all(), stalled
    # ... so the quick branch's items waited for it
    assert latency["max_ms"] >= 0.8 * BLOCK_S * 1000, latency
    """),
    md("""
    ## 3. The fix: declare the blocking code non-cooperative

    Seed 002's advice: code that blocks goes through `mapUsingService`, which Jet runs as a
    **non-cooperative** processor on a dedicated thread. jetbench does the same for
    `map_using_service`, and for any `Processor` with `is_cooperative = False` (it also gets an
    outbox that waits for room instead of refusing). The sleep still happens, but only that
    processor's own thread waits: the cooperative worker keeps serving the quick branch.
    """),
    code("""
    def service_lookup(stage):
        return stage.map_using_service(lambda: None, lambda _service, x: slow_lookup(x), name="slow-lookup")

    class SlowLookupP(Processor):
        is_cooperative = False  # a dedicated thread, and an outbox that never refuses

        def process(self, ordinal, inbox):
            for x in inbox.take():
                self.outbox.offer(slow_lookup(x))

    # the Processor variant: plan the blocking pipeline, then swap the vertex's supplier
    processor_dag = two_branches(cooperative_lookup).to_dag()
    processor_dag.vertex("slow-lookup").supplier = SlowLookupP

    runs = {"cooperative map": (job, latency, windows)}
    runs["map_using_service"] = run_demo(two_branches(service_lookup))
    runs["Processor(is_cooperative=False)"] = run_demo(processor_dag)
    """),
    code("""
    rows = []
    for name, (run_job, run_latency, run_windows) in runs.items():
        moved = progress_while_blocked(run_job, run_windows)
        lookup = run_job.metrics().tasklet("slow-lookup")
        rows.append({
            "slow-lookup runs as": name,
            "cooperative": lookup.cooperative,
            "worker": lookup.worker,
            "blocked windows sampled": len(moved),
            "blocked windows with ticker progress": (moved["ticker"] > 0).mean(),
            "quick p50 latency (ms)": round(run_latency["p50_ms"], 1),
            "quick p90 latency (ms)": round(run_latency["p90_ms"], 1),
            "quick max latency (ms)": round(run_latency["max_ms"], 1),
        })
    comparison = pd.DataFrame(rows)
    comparison
    """),
    code("""
    blocked_row, *fixed_rows = rows
    assert blocked_row["quick p90 latency (ms)"] > 0.5 * BLOCK_S * 1000, blocked_row
    for row in fixed_rows:
        assert not row["cooperative"] and row["worker"] < 0, row  # on a dedicated thread
        assert row["blocked windows sampled"] >= 3, row
        # the quick branch kept moving through the blocked windows (a busy machine may
        # still pause the whole process now and then, hence "nearly every") ...
        assert row["blocked windows with ticker progress"] >= 0.8, row
        # ... and its items no longer wait for the sleep
        assert row["quick p90 latency (ms)"] < 0.25 * BLOCK_S * 1000, row
    """),
    md("""
    ## 4. Work stealing on and off

    The deal at submission is blind to how long tasklets will live. Jet's historical rule
    (seed 001), kept in jetbench as a switch: when a worker finishes a tasklet, it looks for a
    colleague with at least two more tasklets and **steals** one. Here the deal gives worker 0
    four long-running sources and their sinks and worker 1 only short-lived ones. We sample
    where each tasklet runs and look half-way through the job.
    """),
    code("""
    def uneven_dag():
        \"\"\"Dealt in turn over 2 workers: worker 0 gets the long-running tasklets, worker 1 the quick ones.\"\"\"
        dag = DAG()
        for k in range(4):
            slow = dag.new_vertex(f"long{k}", GeneratorSource(RATE / 2, timestamped=False, count=COUNT // 2), 1)
            quick = dag.new_vertex(f"short{k}", items_source(range(5)), 1)
            slow_sink = dag.new_vertex(f"long{k}-sink", noop_sink(), 1)
            quick_sink = dag.new_vertex(f"short{k}-sink", noop_sink(), 1)
            dag.edge(Edge.between(slow, slow_sink)).edge(Edge.between(quick, quick_sink))
        return dag

    def run_stealing(work_stealing):
        service = ExecutionService(cooperative_threads=2, work_stealing=work_stealing, metrics_interval_s=0.05)
        job = service.submit(uneven_dag())
        job.join(timeout=60)
        frame = job.metrics_frame()
        first = frame[frame["t"] == frame["t"].min()].set_index("vertex")["worker"]
        middle_t = frame.loc[frame["t"] >= job.elapsed / 2, "t"].min()
        middle = frame[frame["t"] == middle_t].set_index("vertex")["worker"]
        stealing = job.workers[0].stealing
        long_side = [v for v in middle.index if v.startswith("long")]
        return {
            "work stealing": work_stealing,
            "steals": stealing.steals if stealing is not None else 0,
            "long-running tasklets on worker 0 at start": int((first[long_side] == 0).sum()),
            "... on worker 0 half-way": int((middle[long_side] == 0).sum()),
            "... on worker 1 half-way": int((middle[long_side] == 1).sum()),
            "worker 1 rounds": next(w.iteration_count for w in job.workers if w.index == 1),
        }

    stealing = pd.DataFrame([run_stealing(False), run_stealing(True)])
    stealing
    """),
    code("""
    off, on = stealing.to_dict("records")
    assert off["steals"] == 0 and off["... on worker 1 half-way"] == 0, off  # worker 1 went idle
    assert on["steals"] > 0 and on["... on worker 1 half-way"] >= 1, on    # worker 1 took some over
    assert on["worker 1 rounds"] > off["worker 1 rounds"]
    """),
    md("""
    The rule is blunt. Each finished tasklet triggers one steal attempt, and a tasklet already
    marked for stealing still counts on its old worker's list until it is handed over; when many
    tasklets finish together, as the short ones do here, the thief keeps marking and can end
    up with most of the long-running work (compare the two half-way columns).

    Moving tasklets changes *where* the work runs; whether that makes the job faster is the
    next question.

    ## 5. More threads and the GIL

    In CPython only one thread runs Python bytecode at a time (the global interpreter lock).
    Two cooperative workers running pure-Python maps take turns holding the lock, so the job
    takes about as long as on one worker. (Time spent sleeping or in C code that releases the
    GIL does overlap, which is why section 3's dedicated thread helped.)

    Wall times are noisy on a busy machine, so the measurement runs `GIL_ROUNDS` rounds of
    *1 thread, 2 threads, 1 thread* back to back; each round's speedup compares the 2-thread
    run with the mean of the 1-thread runs around it, and the median round counts.
    """),
    code("""
    def busy(x):
        total = 0
        for i in range(GIL_WORK):
            total += i * x % 7
        return total

    def cpu_bound_dag():
        dag = DAG()
        source = dag.new_vertex("source", items_source(range(GIL_ITEMS)), 1)
        work = dag.new_vertex("busy", map_processor(busy), local_parallelism=2)
        sink = dag.new_vertex("sink", noop_sink(), 1)
        dag.edge(Edge.between(source, work)).edge(Edge.between(work, sink))
        return dag

    def timed(threads):
        wall0, cpu0 = time.perf_counter(), time.process_time()
        ExecutionService(cooperative_threads=threads).run(cpu_bound_dag(), timeout=120)
        return time.perf_counter() - wall0, time.process_time() - cpu0

    rounds = []
    for _ in range(GIL_ROUNDS):
        (one_a, cpu_a), (two, cpu_two), (one_b, cpu_b) = timed(1), timed(2), timed(1)
        rounds.append({"1 thread (s)": (one_a + one_b) / 2, "2 threads (s)": two,
                       "speedup": (one_a + one_b) / 2 / two,
                       "CPU / wall, 1 thread": (cpu_a + cpu_b) / (one_a + one_b), "CPU / wall, 2 threads": cpu_two / two})
    gil = pd.DataFrame(rounds)
    speedup = gil["speedup"].median()
    print(f"2 threads vs 1: {speedup:.2f}x (median of {len(gil)} rounds)")
    gil.round(3)
    """),
    code("""
    assert speedup < 1.3, f"2 threads ran {speedup:.2f}x faster than 1 on pure-Python work"
    # the process never used much more than one core's worth of CPU, even with 2 threads
    assert gil["CPU / wall, 2 threads"].median() < 1.4, gil
    """),
    md("""
    Next: [03 · backpressure and queues](03-backpressure-and-queues.ipynb).
    """),
]


# ---------------------------------------------------------------------------------------------
# 03 · backpressure and queues
# ---------------------------------------------------------------------------------------------

BACKPRESSURE = [
    md("""
    # 03 · Backpressure and queues

    Tasklets talk through **bounded** single-producer/single-consumer queues (seed 001's
    ringbuffers). When a consumer falls behind, its inbound queue fills; the producer's outbox
    then refuses items, the producer stops taking input, its own inbound queue fills, and so on
    up to the source. Nothing grows without bound: this is **backpressure**.

    This notebook runs a fast source into a slow sink, shows the queues filling from the sink
    upstream, checks that memory stays bounded however much data flows, and measures what the
    queue size does to throughput and latency.
    """),
    params("""
    ITEMS = 20_000                          # items through the pipeline
    PAYLOAD_BYTES = 1_000                   # size of each item
    QUEUE = 128                             # queue size of every edge (and the outbox capacity)
    SINK_US_PER_ITEM = 20                   # the slow sink's cost per item (a sleep)
    QUEUE_SIZES = [4, 16, 128, 1024, 4096]  # queue sizes for the throughput/latency table
    REPEATS = 2                             # runs per queue size (the best one counts)
    SAMPLE_S = 0.02                         # metrics sampling interval
    """),
    code("""
    %matplotlib inline
    import time
    import tracemalloc

    import matplotlib.pyplot as plt
    import pandas as pd

    from jetbench import DAG, Edge, ExecutionService, Processor
    from jetbench.processors import items_source, map_processor
    """),
    md("""
    ## 1. A slow sink

    The sink writes to a slow external system: it sleeps `SINK_US_PER_ITEM` µs per item.
    Because it blocks, it is declared non-cooperative (notebook 02). The source produces
    `ITEMS` payloads lazily from a generator, as fast as it is allowed to.
    """),
    code("""
    class SlowSinkP(Processor):
        \"\"\"Takes up to 64 items at a time and sleeps SINK_US_PER_ITEM µs for each.\"\"\"

        is_cooperative = False
        collects = True

        def __init__(self, per_item_us):
            self.per_item_s = per_item_us / 1e6
            self.latencies = []

        def process(self, ordinal, inbox):
            batch = inbox.take(64)
            time.sleep(len(batch) * self.per_item_s)
            now = time.perf_counter()
            self.latencies += [now - stamped for stamped, _ in batch]

        def result_part(self):
            return self.latencies

    def payloads(n, size):
        for _ in range(n):
            yield bytes(size)  # a new object each time, never a list of them all

    def stamp(payload):
        return (time.perf_counter(), payload)  # when the item entered the pipeline

    def pass_through(item):
        return item

    def slow_sink_dag(items, queue, payload_bytes=PAYLOAD_BYTES, per_item_us=SINK_US_PER_ITEM):
        dag = DAG()
        source = dag.new_vertex("source", items_source(payloads(items, payload_bytes)), 1)
        stamper = dag.new_vertex("stamp", map_processor(stamp), 1)
        enrich = dag.new_vertex("enrich", map_processor(pass_through), 1)
        sink = dag.new_vertex("slow-sink", lambda: SlowSinkP(per_item_us), 1)
        for a, b in [(source, stamper), (stamper, enrich), (enrich, sink)]:
            dag.edge(Edge.between(a, b).queue_size(queue))
        return dag

    dag = slow_sink_dag(ITEMS, QUEUE)
    dag
    """),
    code("""
    service = ExecutionService(outbox_capacity=QUEUE, metrics_interval_s=SAMPLE_S)
    job = service.submit(dag, name="slow-sink")
    latencies = job.join(timeout=120)
    print(job.metrics().table())
    job.plot_metrics()
    """),
    md("""
    The *inbound queue fill* panel shows every queue pinned at its capacity while the sink
    works through the backlog. Per vertex, over all samples: the largest inbound queue size
    seen, the capacity, and how often the vertex found its outbound queue full (backpressure).
    """),
    code("""
    frame = job.metrics_frame()
    queues = frame.groupby("vertex", sort=False).agg(
        max_queue=("queues_size", "max"),
        capacity=("queues_capacity", "max"),
        backpressured=("backpressure", "mean"),
    )
    queues
    """),
    code("""
    assert len(latencies) == ITEMS
    # queues never exceed their capacity ...
    assert (frame["queues_size"] <= frame["queues_capacity"]).all()
    # ... and the slow sink filled its own queue and, through backpressure, every queue upstream
    for vertex in ["slow-sink", "enrich", "stamp"]:
        assert queues.loc[vertex, "max_queue"] == QUEUE, queues
    for vertex in ["source", "stamp", "enrich"]:
        assert queues.loc[vertex, "backpressured"] > 0.5, queues
    """),
    md("""
    ## 2. Memory stays bounded

    Since every queue and outbox is bounded, the items in flight are bounded too, whatever the
    length of the input. `tracemalloc` measures the peak memory Python allocated while the job
    ran, for `ITEMS` and for twice as many items: the peak stays a small fraction of the data
    that flowed, and does not grow with it.
    """),
    code("""
    def peak_memory(items):
        tracemalloc.start()
        try:
            ExecutionService(outbox_capacity=QUEUE).run(slow_sink_dag(items, QUEUE), timeout=120)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    memory = pd.DataFrame([
        {"items": n, "data through the job (MB)": n * PAYLOAD_BYTES / 1e6, "peak traced (MB)": peak_memory(n) / 1e6}
        for n in (ITEMS, 2 * ITEMS)
    ])
    memory.round(2)
    """),
    code("""
    small, large = memory.to_dict("records")
    assert small["peak traced (MB)"] < 0.25 * small["data through the job (MB)"], small
    assert large["peak traced (MB)"] < 0.25 * large["data through the job (MB)"], large
    assert large["peak traced (MB)"] < 1.5 * small["peak traced (MB)"] + 0.5, memory  # no growth with input
    """),
    md("""
    ## 3. Queue size, throughput and latency

    How big should the queues be? Run the same job with each size in `QUEUE_SIZES` (the
    outbox capacity, which is also the most a tasklet emits per call, follows the queue size
    up to 1024). Latency is measured per item from the `stamp` vertex to the sink.

    Little's law predicts the latency of a saturated pipeline: items in flight divided by
    throughput. With three full queues and three full outboxes between `stamp` and the sink,
    that is roughly `(3 × queue + 3 × outbox) / throughput`.
    """),
    code("""
    def measure(queue):
        outbox = min(queue, 1024)
        start = time.perf_counter()
        lat = ExecutionService(outbox_capacity=outbox).run(slow_sink_dag(ITEMS, queue), timeout=120)
        throughput = ITEMS / (time.perf_counter() - start)
        lat = sorted(lat)
        return {
            "queue size": queue,
            "items/s": round(throughput),
            "p50 latency (ms)": 1000 * lat[len(lat) // 2],
            "p99 latency (ms)": 1000 * lat[int(0.99 * (len(lat) - 1))],
            "Little's law estimate (ms)": 1000 * 3 * (queue + outbox) / throughput,
        }

    runs = pd.DataFrame([measure(queue) for _ in range(REPEATS) for queue in QUEUE_SIZES])
    # the least disturbed run of each size: the highest throughput
    sizes = runs.loc[runs.groupby("queue size")["items/s"].idxmax()].set_index("queue size")
    sizes.round(1)
    """),
    code("""
    fig, (ax_tp, ax_lat) = plt.subplots(1, 2, figsize=(9, 3.4), layout="constrained")
    ax_tp.plot(sizes.index, sizes["items/s"], "o-")
    ax_tp.set(xscale="log", xlabel="queue size", ylabel="items/s", title="throughput")
    ax_tp.set_ylim(bottom=0)
    ax_lat.plot(sizes.index, sizes["p50 latency (ms)"], "o-", label="p50")
    ax_lat.plot(sizes.index, sizes["p99 latency (ms)"], "o--", label="p99")
    ax_lat.plot(sizes.index, sizes["Little's law estimate (ms)"], ":", color="grey", label="Little's law")
    ax_lat.set(xscale="log", yscale="log", xlabel="queue size", ylabel="ms", title="latency")
    ax_lat.legend()
    for ax in (ax_tp, ax_lat):
        ax.grid(alpha=0.3, which="both")
    """),
    md("""
    Tiny queues cost throughput (each hand-over moves only a few items, so per-batch overhead
    dominates); past a few hundred items the sink is the bottleneck and bigger queues only
    hold more items waiting, which is pure latency.
    """),
    code("""
    smallest, middle, largest = sizes.index[0], sizes.index[len(sizes) // 2], sizes.index[-1]
    throughput, p50 = sizes["items/s"], sizes["p50 latency (ms)"]
    assert throughput[smallest] < 0.85 * throughput.max(), sizes   # tiny queues cost throughput
    assert throughput[largest] < 1.5 * throughput[middle], sizes   # big ones buy none ...
    assert p50[largest] > 3 * p50[middle] > 9 * p50[smallest], sizes  # ... but add latency
    """),
    md("""
    Next: [04 · the idle-CPU experiment](04-idle-cpu-experiment.ipynb).
    """),
]


# ---------------------------------------------------------------------------------------------
# 04 · idle CPU
# ---------------------------------------------------------------------------------------------

IDLE_CPU = [
    md("""
    # 04 · The idle-CPU experiment (seed 004)

    A cooperative worker that finds nothing to do parks for a short time, doubling from a
    minimum (Jet's default: 25 µs) up to a maximum. Seed 004 showed the price of a short
    minimum: a job moving only 1000 items/s through a handful of vertices kept **18 %** of a
    core busy, and raising the minimum to 1000 µs brought that down to **1 %**.

    This notebook reproduces the experiment on jetbench with a small sweep, puts the blog's
    table beside ours, tunes the floor live on a running job, and tries jetbench's
    timer-aware idle strategy. Each sweep point runs in a fresh process so CPU accounting is
    clean; the defaults below keep the whole notebook under a minute
    (`jetbench idle-experiment` runs the full sweep from the terminal).
    """),
    params("""
    RATES = [1_000, 50_000]         # items per second
    FLOORS = [25, 1_000]            # minimum idle (park) times in microseconds
    STRATEGIES = ["backoff", "timer"]
    SECONDS = 1.5                   # measured seconds per sweep point
    WARMUP = 0.5                    # seconds before measuring
    SWEEP_CSV = None                # where to keep the sweep's rows (None: a temporary file)
    LIVE_SECONDS = 1.0              # CPU measuring window in the live-tuning demos
    USE_SPARK = True                # also tune live against a Spark-backed dataset (if available)
    """),
    code("""
    %matplotlib inline
    import contextlib
    import importlib.util
    import shutil
    import tempfile
    import time
    from pathlib import Path

    import pandas as pd
    import psutil

    from jetbench import ExecutionService, JobCancelled, sources
    from jetbench.experiments import (
        blog_table,
        idle_job,
        idle_sweep,
        plot_cpu_vs_rate,
        plot_latency_vs_floor,
        plot_tradeoff,
        sleep_granularity,
        targets,
    )
    """),
    md("""
    ## 1. What a wake-up costs on this machine

    Before measuring the engine, measure the floor it stands on: how long a requested sleep
    really lasts, and how much CPU a thread burns doing nothing but sleeping and waking up at
    that interval. Seed 004's footnote notes Linux rounds short parks up (~50 µs); Python adds
    its own overhead per wake-up.
    """),
    code("""
    sleeps = pd.DataFrame([s.as_dict() for s in sleep_granularity((0, 25, 100, 1000), seconds=0.2)])
    sleeps.round(1)
    """),
    md("""
    ## 2. The sweep

    Seed 004's job: a source emitting at a fixed rate with creation timestamps, six identity
    maps (not fused, to have many tasklets), a count per one-second tumbling window, and a
    latency sink — all on one cooperative worker. Each (rate, floor, strategy) point runs in
    its own process, plus a *bare-sleep* process per floor that only sleeps at that interval.
    """),
    code("""
    idle_job(sources.generator(1000))
    """),
    code("""
    csv_path = Path(SWEEP_CSV) if SWEEP_CSV else Path(tempfile.mkdtemp()) / "idle_sweep.csv"
    sweep = idle_sweep(rates=RATES, min_idle_us=FLOORS, strategies=STRATEGIES, seconds=SECONDS,
                       warmup=WARMUP, csv_path=csv_path, progress=False)
    sweep[["rate", "min_idle_us", "strategy", "cpu_percent", "achieved_rate", "kept_up",
           "latency_p50_ms", "latency_p99_ms", "wakeups_per_s"]].round(2)
    """),
    md("""
    The blog's numbers (Jet 3.0 on an m5.large) beside jetbench's: CPU as % of one core.
    """),
    code("""
    table = blog_table(sweep)
    table
    """),
    code("""
    def cpu(rate, floor, strategy):
        row = sweep[(sweep["rate"] == rate) & (sweep["min_idle_us"] == floor) & (sweep["strategy"] == strategy)]
        return float(row["cpu_percent"].iloc[0])

    low, high = min(RATES), max(RATES)
    jobs = sweep[sweep["strategy"] != "bare-sleep"]
    assert jobs[jobs["rate"] == low]["kept_up"].all(), jobs  # every point kept up with the low rate
    # the blog's result: at a low rate, a 1000 µs floor burns less CPU than the 25 µs default
    assert cpu(low, 1000, "backoff") < cpu(low, 25, "backoff"), table
    """),
    code("""
    plot_cpu_vs_rate(sweep)
    """),
    code("""
    plot_latency_vs_floor(sweep)
    """),
    code("""
    plot_tradeoff(sweep)
    """),
    md("""
    The trade-off is the blog's: a higher floor saves CPU at low rates and costs a little
    latency. One difference from Jet: in CPython a round over the job's ten tasklets takes longer
    than the gap between items at high rates, so Jet's rule — park only after a round in
    which *nothing* progressed — never parks, and the floor stops mattering: at the highest
    rate the backoff strategy keeps the worker busy (close to a full core on an otherwise idle
    machine) whatever the floor.

    ## 3. Tuning the floor live

    The idle bounds are read at every park, so `service.set_idle(...)` changes them on a
    running job. Start seed 004's job at 1000 items/s with the 25 µs floor, measure this
    process's CPU for `LIVE_SECONDS`, raise the floor to 1000 µs, measure again. (In JupyterLab
    the job dashboard has the same control: the *min idle* field.)
    """),
    code("""
    process = psutil.Process()

    def cpu_percent(seconds=LIVE_SECONDS):
        \"\"\"This process's CPU over the next `seconds`, in % of one core.\"\"\"
        before, start = process.cpu_times(), time.perf_counter()
        time.sleep(seconds)
        after, wall = process.cpu_times(), time.perf_counter() - start
        return 100 * ((after.user + after.system) - (before.user + before.system)) / wall

    def tune_live(source, change, settle_s=0.3, **service_config):
        \"\"\"Run seed 004's job from `source`; CPU before and after `change(service)`.\"\"\"
        service = ExecutionService(**service_config)
        job = service.submit(idle_job(source))
        try:
            time.sleep(settle_s)
            before = cpu_percent()
            change(service)
            time.sleep(settle_s)
            after = cpu_percent()
            assert job.status.value == "running", job
        finally:
            job.cancel()
            with contextlib.suppress(JobCancelled):
                job.join(timeout=30)
        return before, after

    before, after = tune_live(sources.generator(low), lambda s: s.set_idle(min_idle_us=1000),
                              min_idle_us=25, max_idle_us=1000)
    print(f"{low} items/s, backoff: {before:.1f} % CPU with the 25 µs floor -> {after:.1f} % with 1000 µs")
    """),
    code("""
    assert after < 0.8 * before, (before, after)
    """),
    md("""
    ## 4. The timer-aware strategy

    `ExecutionService(idle="timer")` idles differently: tasklets say when they can next make
    progress (a rate-limited source knows when its next item is due, a map knows it waits for
    input), and the worker sleeps until the earliest such time — woken early if another thread
    hands it work. It also paces busy periods on a tick of the floor, so at high rates items
    are handled in batches of about `rate × floor` instead of one round per item. In the sweep:
    """),
    code("""
    timer_vs_backoff = pd.DataFrame([
        {"rate": rate, "floor (µs)": floor,
         "backoff CPU %": round(cpu(rate, floor, "backoff"), 1), "timer CPU %": round(cpu(rate, floor, "timer"), 1)}
        for rate in RATES for floor in FLOORS
    ])
    timer_vs_backoff
    """),
    code("""
    # at the highest rate Jet's rule never parks; the timer strategy does, and saves CPU
    assert cpu(high, 1000, "timer") < 0.6 * cpu(high, 1000, "backoff"), timer_vs_backoff
    """),
    md("""
    The targets this strategy was built against, checked on this sweep: at every rate, CPU no
    higher than the 1000 µs floor's and p99 latency no higher than the 25 µs floor's; and at the
    1000 µs floor, CPU close to Jet's blog. Expect some to be missed: CPython pays tens of
    microseconds for a wake-up and a few for every tasklet call, where Java pays far less, and
    `benchmarks/README.md` works out which of these limits no sleeping strategy can reach on a
    given machine. Short points are noisy; `jetbench idle-experiment --repeats 3` takes medians.
    """),
    code("""
    targets(sweep)
    """),
    md("""
    The strategy can be switched on a running job too (`service.set_idle_strategy`, also in
    the dashboard). The same live measurement at the highest rate, floor 1000 µs:
    """),
    code("""
    before, after = tune_live(sources.generator(high), lambda s: s.set_idle_strategy("timer"),
                              min_idle_us=1000, max_idle_us=1000, idle="backoff")
    print(f"{high} items/s, floor 1000 µs: {before:.1f} % CPU with backoff -> {after:.1f} % with timer")
    assert after < 0.6 * before, (before, after)
    """),
    md("""
    ## 5. Against a Spark-backed dataset (optional)

    The same live tuning, with the events coming from a dataset that Spark generated (and
    cached as parquet): the source loads it before the job starts, then replays it at 1000
    items/s with creation timestamps. This section needs `jetbench.spark` (pyspark and a Java
    runtime); starting Spark takes ten seconds or so. Without them, or with
    `USE_SPARK = False`, it is skipped and says so.
    """),
    code("""
    spark_ready = (USE_SPARK and importlib.util.find_spec("jetbench.spark") is not None
                   and shutil.which("java") is not None)
    if not spark_ready:
        print("Spark section skipped: USE_SPARK is False, jetbench.spark is missing or no Java runtime was found")
    else:
        from jetbench import spark
        from jetbench.experiments.spark_source import spark_replay_source

        replay = spark_replay_source(low, WARMUP + 4 * LIVE_SECONDS)  # loaded now, Spark's work done
        spark.stop()  # the replay is in memory; stop the JVM so it does not disturb the measurement
        spark_before, spark_after = tune_live(replay, lambda s: s.set_idle(min_idle_us=1000),
                                              min_idle_us=25, max_idle_us=1000)
        print(f"Spark-backed replay at {low} items/s: {spark_before:.1f} % -> {spark_after:.1f} % CPU")
        assert spark_after < 0.8 * spark_before, (spark_before, spark_after)
    """),
]


# ---------------------------------------------------------------------------------------------
# 06 · writing processors
# ---------------------------------------------------------------------------------------------

PROCESSORS = [
    md("""
    # 06 · Writing processors

    Pipelines are convenient, but everything runs as **processors** (seed 003). A processor
    receives batches in an **inbox** and emits into an **outbox** whose buckets are bounded and
    *refuse* items when full. Because a cooperative processor must never block, it has to
    handle a refusal by saving its place and returning; the engine calls it again once the
    outbox has drained.

    The lifecycle: `init(outbox, context)` once; `process(ordinal, inbox)` while input
    arrives; `try_process()` whenever the inbox is empty; `complete_edge(ordinal)` when one
    input is exhausted; `complete()` at the end (sources emit from here); `close()` always last.
    The boolean methods return `True` when done and are called again otherwise.

    `jetbench.testing.verify_processor` checks a processor against that contract the way
    Jet's `TestSupport` does: with an outbox that holds **one** item, so nearly every second
    offer is refused.
    """),
    params("""
    ENGINE_LINES = 2_000   # lines for the runs on the real engine
    """),
    code("""
    from jetbench import DAG, Edge, ExecutionService, Inbox, Outbox, Processor
    from jetbench.datasets import corpus
    from jetbench.processors import collect_sink, items_source
    from jetbench.testing import verify_processor
    """),
    md("""
    ## 1. Inbox and outbox

    Remove an item from the inbox only once it is fully handled; `offer` returns `False`
    (accepting nothing) when the bucket is full.
    """),
    code("""
    inbox = Inbox(["a", "b", "c"])
    print("peek:", inbox.peek(), "| left:", len(inbox))      # look at the head without taking it
    print("remove:", inbox.remove(), "| left:", len(inbox))  # take it, once handled

    outbox = Outbox(ordinal_count=1, capacity=2)
    offers = [outbox.offer(x) for x in "xyz"]
    print("offers:", offers, "|", outbox)
    assert offers == [True, True, False]
    """),
    md("""
    ## 2. A processor that handles refusals

    A flat-map: each line becomes its words. One line can yield more words than the outbox
    has room for, so the processor remembers which words of the head line are still to go,
    returns when refused, and removes the line from the inbox only after its last word went
    out.
    """),
    code("""
    class SplitWordsP(Processor):
        \"\"\"One line in, its words out; keeps its place when the outbox refuses.\"\"\"

        def __init__(self):
            self._words = None  # words of the inbox's head line not yet emitted

        def process(self, ordinal, inbox):
            while inbox:
                if self._words is None:
                    self._words = inbox.peek().split()
                while self._words:
                    if not self.outbox.offer(self._words[0]):
                        return  # full: keep the line in the inbox and our place in it
                    self._words.pop(0)
                self._words = None
                inbox.remove()  # only now is the line fully handled

    LINES = ["the cat sat", "on the mat", "", "the end"]
    WORDS = [w for line in LINES for w in line.split()]
    report = verify_processor(SplitWordsP, input=LINES, expected=WORDS)
    report
    """),
    md("""
    `verify_processor` ran it twice (inbox limit 1 and 1024), each time with a one-item
    outbox, re-calling while full, and compared the output. It passes.

    ## 3. A processor that drops items

    The tempting version ignores what `offer` returns. With room to spare it even looks right;
    as soon as the outbox fills, words silently vanish.
    """),
    code("""
    class LossySplitWordsP(Processor):
        def process(self, ordinal, inbox):
            for line in inbox.take():
                for word in line.split():
                    self.outbox.offer(word)  # a refusal is ignored: the word is lost

    try:
        verify_processor(LossySplitWordsP, input=LINES, expected=WORDS)
    except AssertionError as error:
        failure = error
    else:
        failure = None
    assert failure is not None, "verify_processor should have rejected LossySplitWordsP"
    print(failure)
    """),
    md("""
    The harness names the processor, the mode, and the item offered after a refusal. On the
    real engine the same bug loses data whenever a batch of lines yields more words than the
    outbox's capacity (1024 by default):
    """),
    code("""
    def split_on_engine(supplier, lines):
        dag = DAG()
        source = dag.new_vertex("lines", items_source(lines), 1)
        split = dag.new_vertex("split", supplier, 1)
        sink = dag.new_vertex("sink", collect_sink(), 1)
        dag.edge(Edge.between(source, split)).edge(Edge.between(split, sink))
        return ExecutionService().run(dag, timeout=60)

    text = corpus(ENGINE_LINES, vocabulary_size=300, seed=6)
    words = [w for line in text for w in line.split()]
    good, lossy = split_on_engine(SplitWordsP, text), split_on_engine(LossySplitWordsP, text)
    print(f"{len(words)} words in; SplitWordsP emitted {len(good)}, LossySplitWordsP {len(lossy)}")
    assert good == words
    assert len(lossy) < len(words)
    """),
    md("""
    ## 4. `try_process` and `complete`

    A batcher gathers items into lists of at most `size`. `process` moves items from the inbox
    into the current batch (emitting it when full). When the inbox runs dry the engine calls
    `try_process`, which emits the partial batch — so batches follow how the input arrived.
    `complete` emits whatever is left at the end. Both return `False` while the outbox refuses,
    and are called again.

    Note `self._batch = []` after a successful offer: the outbox now owns that list.
    """),
    code("""
    class BatcherP(Processor):
        def __init__(self, size):
            self.size = size
            self._batch = []

        def _flush(self):
            if self._batch:
                if not self.outbox.offer(self._batch):
                    return False
                self._batch = []  # the outbox owns the old list now
            return True

        def process(self, ordinal, inbox):
            while inbox:
                if len(self._batch) == self.size and not self._flush():
                    return
                self._batch.append(inbox.remove())

        def try_process(self):
            return self._flush()

        def complete(self):
            return self._flush()

    def check_batches(batches):
        assert [x for b in batches for x in b] == list(range(10)), batches
        assert all(1 <= len(b) <= 3 for b in batches), batches

    report = verify_processor(lambda: BatcherP(3), input=range(10), assert_output=check_batches)
    for run in report.runs:
        print(f"{run.mode:>17}: {run.output}")
    assert report.runs[0].output == [[x] for x in range(10)]        # one item per inbox
    assert report.runs[1].output == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    """),
    md("""
    A source has no inbox at all: it emits from `complete()`, returning `False` until it has
    emitted everything.
    """),
    code("""
    class CountdownP(Processor):
        def __init__(self, start):
            self.next = start

        def complete(self):
            while self.next > 0:
                if not self.outbox.offer(self.next):
                    return False  # called again once the outbox drained
                self.next -= 1
            return True

    verify_processor(lambda: CountdownP(5), expected=[5, 4, 3, 2, 1])
    """),
    md("""
    ## 5. The lifecycle on the engine

    A processor that logs its callbacks, between a small source and a sink:
    """),
    code("""
    class TracingP(Processor):
        trace = []

        def _log(self, event):
            if not TracingP.trace or TracingP.trace[-1] != event:  # collapse repeats
                TracingP.trace.append(event)

        def init(self, outbox, context):
            super().init(outbox, context)
            self._log(f"init({context.vertex_name}#{context.local_index})")

        def process(self, ordinal, inbox):
            self._log(f"process({ordinal}, {len(inbox)} items)")
            while inbox:
                if not self.outbox.offer(inbox.peek()):
                    return
                inbox.remove()

        def try_process(self):
            self._log("try_process()")
            return True

        def complete_edge(self, ordinal):
            self._log(f"complete_edge({ordinal})")
            return True

        def complete(self):
            self._log("complete()")
            return True

        def close(self):
            self._log("close()")

    dag = DAG()
    source = dag.new_vertex("source", items_source(range(3)), 1)
    traced = dag.new_vertex("traced", TracingP, 1)
    sink = dag.new_vertex("sink", collect_sink(), 1)
    dag.edge(Edge.between(source, traced)).edge(Edge.between(traced, sink))
    assert ExecutionService().run(dag, timeout=30) == [0, 1, 2]
    print("\\n".join(TracingP.trace))
    """),
    code("""
    trace = TracingP.trace
    assert trace[0] == "init(traced#0)" and trace[-1] == "close()", trace
    assert "process(0, 3 items)" in trace
    assert trace.index("complete_edge(0)") < trace.index("complete()") < trace.index("close()"), trace
    """),
    md("""
    Next: [07 · event time and windows](07-event-time-and-windows.ipynb).
    """),
]


# ---------------------------------------------------------------------------------------------
# 07 · event time and windows
# ---------------------------------------------------------------------------------------------

WINDOWS = [
    md("""
    # 07 · Event time and windows

    Streams carry their own clock: each event has an **event-time timestamp** (here in
    milliseconds), and events arrive somewhat out of order. A windowed aggregation cannot emit
    the window `[0, 1000)` as soon as it sees an event at 1000 — a straggler at 950 may still
    come. **Watermarks** settle it: a watermark `W` in the stream promises that no event with
    a timestamp below `W` follows. jetbench's watermarks trail the highest timestamp seen by an
    **allowed lag**; an event that arrives after a watermark has passed all of its windows is
    **late**: dropped, and counted.

    Everything below uses `sources.test_stream`, a scripted list of `(timestamp, item)` events.
    """),
    params("""
    ALLOWED_LAG = 200      # ms a watermark trails the highest timestamp seen
    GENEROUS_LAG = 2_000   # a lag long enough that nothing is late
    """),
    code("""
    from collections import Counter

    import pandas as pd

    from jetbench import (
        DAG,
        Edge,
        ExecutionService,
        Pipeline,
        Processor,
        WindowResult,
        aggregate,
        run,
        sinks,
        sources,
    )
    from jetbench.processors.insert_watermarks import insert_watermarks
    from jetbench.window import session, sliding, tumbling

    EVENTS = [
        (100, "click"), (250, "view"), (180, "click"), (1200, "view"),
        (1020, "click"), (2600, "click"), (900, "view"), (3100, "view"),
    ]
    pd.DataFrame(EVENTS, columns=["timestamp (ms)", "event"]).T
    """),
    md("""
    ## 1. Watermarks in the stream

    To see the watermarks themselves, send the events through the watermark-inserting
    processor into a sink that records everything it gets, watermarks included
    (`try_process_watermark`). Watermarks are throttled to 1-second frames here, so they move
    in whole seconds.
    """),
    code("""
    class StreamRecorderP(Processor):
        collects = True

        def __init__(self):
            self.log = []

        def process(self, ordinal, inbox):
            self.log += [("event", ts, item) for ts, item in inbox.take()]

        def try_process_watermark(self, watermark):
            self.log.append(("watermark", watermark.timestamp, ""))
            return True

        def result_part(self):
            return self.log

    dag = DAG()
    events = dag.new_vertex("events", sources.test_stream(EVENTS).supplier, 1)
    marks = dag.new_vertex("watermarks", insert_watermarks(None, allowed_lag=ALLOWED_LAG, throttle_frame=1000), 1)
    recorder = dag.new_vertex("recorder", StreamRecorderP, 1)
    dag.edge(Edge.between(events, marks)).edge(Edge.between(marks, recorder))
    stream = pd.DataFrame(run(dag), columns=["kind", "time (ms)", "event"])
    stream
    """),
    code("""
    watermarks = stream[stream["kind"] == "watermark"]["time (ms)"].tolist()
    assert watermarks == sorted(watermarks)  # watermarks never go back
    # every event that follows a watermark but is older than it is late
    late = []
    current = float("-inf")
    for kind, t, event in stream.itertuples(index=False):
        if kind == "watermark":
            current = t
        elif t < current:
            late.append((t, event))
    assert late == [(900, "view")], late
    """),
    md("""
    Each watermark is the highest timestamp so far minus `ALLOWED_LAG`, rounded down to the
    frame: the first event (100) gives `100 - 200 = -100`, hence -1000. `(900, "view")`
    arrives after the watermark 2000 (raised by the event at 2600): it is late for every
    window that could hold it.

    ## 2. Tumbling windows

    Back-to-back windows of one second, collecting the events of each window. The late event
    is dropped, and the window processor counts it in `late_events_dropped`, which
    `job.metrics()` reports per processor.
    """),
    code("""
    p = Pipeline()
    (p.read_from(sources.test_stream(EVENTS, allowed_lag=ALLOWED_LAG))
        .window(tumbling(1000))
        .aggregate(aggregate.to_list())
        .write_to(sinks.collect()))
    job = ExecutionService().submit(p)
    tumbled = sorted(job.join(timeout=30))
    dropped = sum(t.processor_metrics.get("late_events_dropped", 0) for t in job.metrics().tasklets)
    print("late events dropped:", dropped)
    pd.DataFrame(tumbled)
    """),
    code("""
    assert tumbled == [
        WindowResult(0, 1000, None, ["click", "view", "click"]),
        WindowResult(1000, 2000, None, ["view", "click"]),
        WindowResult(2000, 3000, None, ["click"]),
        WindowResult(3000, 4000, None, ["view"]),
    ], tumbled
    assert dropped == 1
    """),
    md("""
    ## 3. Sliding windows

    Two-second windows that start every second, counted per event type (`group_by` before
    `window`). Every event falls into two windows; the late one is dropped from both.
    """),
    code("""
    p = Pipeline()
    (p.read_from(sources.test_stream(EVENTS, allowed_lag=ALLOWED_LAG))
        .group_by(lambda event: event)
        .window(sliding(2000, 1000))
        .aggregate(aggregate.counting())
        .write_to(sinks.pandas()))
    slid = run(p).sort_values(["start", "key"]).reset_index(drop=True)
    slid
    """),
    code("""
    def windows_of(ts, size, slide):
        first_start = (ts // slide) * slide - size + slide
        return [(s, s + size) for s in range(first_start, ts + 1, slide) if s <= ts < s + size]

    expected = Counter()
    for ts, event in EVENTS:
        if (ts, event) != (900, "view"):  # the late one
            for start, end in windows_of(ts, 2000, 1000):
                expected[(start, end, event)] += 1
    got = {(r.start, r.end, r.key): r.value for r in slid.itertuples()}
    assert got == dict(expected), (got, expected)
    """),
    md("""
    ## 4. Session windows

    A session is a burst of activity: it grows while events for its key keep coming less
    than `gap` ms apart and closes after a quiet gap. With a 500 ms gap and a generous lag (so
    no event is late), the clicks form three sessions and the views three:
    """),
    code("""
    p = Pipeline()
    (p.read_from(sources.test_stream(EVENTS, allowed_lag=GENEROUS_LAG))
        .group_by(lambda event: event)
        .window(session(500))
        .aggregate(aggregate.counting())
        .write_to(sinks.pandas()))
    sessions = run(p).sort_values(["key", "start"]).reset_index(drop=True)
    sessions
    """),
    code("""
    got = [(r.key, r.start, r.end, r.value) for r in sessions.itertuples()]
    assert got == [
        ("click", 100, 680, 2), ("click", 1020, 1520, 1), ("click", 2600, 3100, 1),
        ("view", 250, 750, 1), ("view", 900, 1700, 2), ("view", 3100, 3600, 1),
    ], got
    """),
    md("""
    A session ends at its last event plus the gap: the views at 900 and 1200 form one session
    `[900, 1700)`.

    ## 5. Allowed lag: completeness against latency

    A longer allowed lag waits longer before closing windows (more latency on a real
    stream), and in exchange accepts more stragglers. The same tumbling count with both lags:
    """),
    code("""
    def tumbling_counts(lag):
        p = Pipeline()
        (p.read_from(sources.test_stream(EVENTS, allowed_lag=lag))
            .window(tumbling(1000))
            .aggregate(aggregate.counting())
            .write_to(sinks.collect()))
        job = ExecutionService().submit(p)
        counts = {r.start: r.value for r in job.join(timeout=30)}
        dropped = sum(t.processor_metrics.get("late_events_dropped", 0) for t in job.metrics().tasklets)
        return {"allowed lag (ms)": lag, "events counted": sum(counts.values()), "late events dropped": dropped,
                **{f"[{s}, {s + 1000})": counts.get(s, 0) for s in range(0, 4000, 1000)}}

    lags = pd.DataFrame([tumbling_counts(ALLOWED_LAG), tumbling_counts(GENEROUS_LAG)])
    lags
    """),
    code("""
    tight, generous = lags.to_dict("records")
    assert (tight["events counted"], tight["late events dropped"]) == (len(EVENTS) - 1, 1)
    assert (generous["events counted"], generous["late events dropped"]) == (len(EVENTS), 0)
    assert generous["[0, 1000)"] == 4  # the straggler at 900 made it into its window
    """),
]


SPARK = [
    md("""
    # 05 · Scaling out on Spark

    jetbench's datasets come from Apache Spark, and when one process is not enough the same
    job runs **on Spark**: `jetbench.run(job, runner="spark")` cuts the DAG at its distributed
    edges (partitioned, all-to-one, broadcast) into stages, runs each stage's sub-DAG inside
    Spark tasks on a local cooperative executor (one copy per Spark partition, as Jet runs the
    DAG on every cluster member), and turns each cut edge into a Spark shuffle keyed by the
    edge's key function with a stable hash.

    This notebook uses the **embedded** Spark session: `local[*]` in this kernel, bound to
    127.0.0.1, web UI off. It needs Java (the set-up script installs it).
    """),
    params("""
    LINES = 20_000       # corpus lines for the word count
    EVENTS = 20_000      # timestamped events for the windowed count
    DISORDER_MS = 50     # how far events may arrive out of timestamp order
    REPEAT = 2           # timed runs per runner (the median is kept)
    """),
    code("""
    import statistics
    import time

    import pandas as pd

    import jetbench
    from jetbench import Pipeline, aggregate, sinks
    from jetbench.wordcount import non_empty, tokenize, word_key
    from jetbench.wordcount import wordcount_pipeline
    from jetbench.spark import SparkRunner, datasets, session, sources
    from jetbench.spark import sinks as spark_sinks
    from jetbench.window import tumbling

    spark = session()
    conf = spark.sparkContext.getConf()
    pd.Series({
        "Spark": spark.version,
        "master": spark.sparkContext.master,
        "driver bound to": conf.get("spark.driver.bindAddress"),
        "web UI": conf.get("spark.ui.enabled"),
    })
    """),
    code("""
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"  # nothing listens beyond loopback
    """),
    md("""
    ## 1. A dataset that Spark serves

    `datasets.corpus(lines)` is text made **by Spark** (Zipf-distributed words), written as
    parquet in jetbench's cache and reused. `sources.dataframe(df)` reads any DataFrame as a
    partitioned, non-cooperative source: Arrow record batches, in each partition's order, the
    blocking reads kept off the cooperative threads.
    """),
    code("""
    corpus = datasets.corpus(LINES)
    print(f"{corpus.count():,} lines in {corpus.rdd.getNumPartitions()} Spark partition(s)")
    corpus.limit(5).toPandas()
    """),
    md("""
    ## 2. One pipeline, two runners

    Seed 002's word count reading that DataFrame. On the local executor the flat_map and
    filter fuse and the count runs in two stages; on Spark the accumulating stage runs next to
    the source in every partition, and only the partial counts cross the shuffle.
    """),
    code("""
    wordcount = wordcount_pipeline(sources.dataframe(corpus, columns=["line"], as_="value"))
    runner = SparkRunner(spark)
    print(runner.explain(wordcount))
    wordcount
    """),
    code("""
    def timed(run, repeat=REPEAT):
        run()  # once to warm up (Python workers, JIT, caches)
        times, result = [], None
        for _ in range(repeat):
            started = time.perf_counter()
            result = run()
            times.append(time.perf_counter() - started)
        return result, statistics.median(times)

    local_counts, local_s = timed(lambda: dict(jetbench.run(wordcount)))
    spark_counts, spark_s = timed(lambda: dict(runner.run(wordcount)))
    words = sum(local_counts.values())
    pd.DataFrame(
        {"seconds": [local_s, spark_s], "words/s": [words / local_s, words / spark_s]},
        index=["local cooperative executor", f"SparkRunner ({spark.sparkContext.master})"],
    ).round(2)
    """),
    code("""
    assert local_counts == spark_counts  # the same job gives the same result on both runners
    top = sorted(local_counts.items(), key=lambda wc: -wc[1])[:5]
    print(f"{words:,} words, {len(local_counts):,} distinct; top: {top}")
    """),
    md("""
    ## 3. Results that stay in Spark

    `jetbench.spark.sinks` turn a job's output into a DataFrame (or parquet files, or a
    table) built inside Spark, so big results never pass through the driver.
    """),
    code("""
    to_spark = Pipeline()
    (to_spark.read_from(sources.dataframe(corpus, columns=["line"], as_="value"))
        .flat_map(tokenize).filter(non_empty)
        .group_by(word_key).aggregate(aggregate.counting())
        .write_to(spark_sinks.dataframe(schema="word string, count long")))
    counts_df = runner.run(to_spark)
    top_df = counts_df.orderBy("count", ascending=False).limit(5).toPandas()
    top_df
    """),
    code("""
    assert counts_df.count() == len(local_counts)
    assert dict(zip(top_df["word"], top_df["count"], strict=True)) == dict(top)
    """),
    md("""
    ## 4. Windows over event time, in batch

    `datasets.events(n)` gives timestamped events (`ts` in ms, slightly out of order). A count
    per one-second tumbling window runs on both runners. On Spark, watermarks do not cross
    shuffles: a window is emitted when its stage's input is complete, so **no event is late**.
    The local executor follows Jet: with an allowed lag smaller than the disorder, events
    behind the watermark are dropped and counted. With a lag that covers the disorder, both
    agree exactly.
    """),
    code("""
    events = datasets.events(EVENTS, keys=4, interval_ms=1, disorder_ms=DISORDER_MS)

    def windowed_count(allowed_lag):
        p = Pipeline()
        (p.read_from(sources.dataframe(events, columns=["ts", "key", "value"], as_=tuple))
            .add_timestamps(lambda event: event[0], allowed_lag=allowed_lag)
            .window(tumbling(1000)).aggregate(aggregate.counting())
            .write_to(sinks.collect()))
        return p

    rows = {}
    for lag in (0, DISORDER_MS):
        p = windowed_count(lag)
        local_windows, spark_windows = sorted(jetbench.run(p)), sorted(runner.run(p))
        rows[f"allowed_lag={lag} ms"] = {
            "windows": len(local_windows),
            "events counted locally": sum(w.value for w in local_windows),
            "events counted on Spark": sum(w.value for w in spark_windows),
            "equal": local_windows == spark_windows,
        }
    windows_table = pd.DataFrame(rows).T
    windows_table
    """),
    code("""
    covered = windows_table.loc[f"allowed_lag={DISORDER_MS} ms"]
    assert covered["equal"] and covered["events counted on Spark"] == EVENTS
    tight = windows_table.loc["allowed_lag=0 ms"]
    assert tight["events counted on Spark"] == EVENTS  # batch on Spark: nothing is late
    assert tight["events counted locally"] < EVENTS    # the local executor dropped late events
    """),
    md("""
    ## 5. More cores, more partitions

    The same word count on `local[1]` and `local[2]` (the embedded session restarts for each
    master). With this small default corpus Spark's fixed cost per job dominates; the
    benchmark `jetbench bench spark-wordcount --lines 1000000` measures the scaling where the
    work does (see `benchmarks/README.md`).
    """),
    code("""
    scaling = {}
    for master in ("local[1]", "local[2]"):
        spark = session(master)  # a DataFrame lives in its session: read the corpus again
        job = wordcount_pipeline(sources.dataframe(datasets.corpus(LINES), columns=["line"], as_="value"))
        master_runner = SparkRunner(spark)
        counts, seconds = timed(lambda r=master_runner, j=job: dict(r.run(j)))
        assert counts == local_counts
        scaling[master] = {"seconds": round(seconds, 2), "partitions": spark.sparkContext.defaultParallelism}
    pd.DataFrame(scaling).T
    """),
    code("""
    jetbench.spark.stop()  # free the JVM; the next session() starts a new one
    """),
]


NOTEBOOKS: dict[str, list[tuple[str, str]]] = {
    "01-getting-started": GETTING_STARTED,
    "02-cooperative-scheduling": COOPERATIVE,
    "03-backpressure-and-queues": BACKPRESSURE,
    "04-idle-cpu-experiment": IDLE_CPU,
    "05-spark-scale-out": SPARK,
    "06-writing-processors": PROCESSORS,
    "07-event-time-and-windows": WINDOWS,
}


def build() -> dict[Path, str]:
    """Every generated notebook's path and its JSON text."""
    return {HERE / f"{stem}.ipynb": nbformat.writes(make_notebook(stem, cells)) + "\n"
            for stem, cells in NOTEBOOKS.items()}


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path, text in build().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path.name)
        if not check:
            path.write_text(text, encoding="utf-8")
    if check and stale:
        print("stale notebooks (run notebooks/build_notebooks.py):", ", ".join(stale))
        return 1
    print(("up to date" if not stale else "wrote " + ", ".join(stale)) if not check else "up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
