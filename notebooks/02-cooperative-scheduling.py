# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 02 · Cooperative scheduling
#
# Every processor instance of a job becomes a **tasklet**: an object whose `call()` does a
# small slice of work and returns. A fixed pool of **cooperative workers** (threads) each own
# a list of tasklets and call them **round-robin**, forever, parking briefly only after a
# round in which no tasklet made progress (Jet's reference manual, "Cooperative
# Multithreading"; Hazelcast's blog post "Idle Green Threads in Hazelcast Jet", 2019). No
# operating-system context switch happens between tasklets — which is also the catch: a tasklet that blocks holds up
# every other tasklet on its worker.
#
# This notebook makes that visible: the round-robin deal, a blocking call freezing its
# worker (and the fix), Jet's old work-stealing rule, and what more threads buy for pure
# Python work under the GIL.

# %% tags=["parameters"]
THREADS = 2          # cooperative workers in the round-robin demo
RATE = 2_000         # items per second from each rate-limited source
SECONDS = 1.5        # how long the rate-limited demos run
BLOCK_S = 0.15       # length of the "blocking call" (a time.sleep)
BLOCK_EVERY = 500    # every BLOCK_EVERY-th item makes the blocking call
SAMPLE_S = 0.02      # metrics sampling interval while a job runs
GIL_ITEMS = 10_000   # items for the GIL measurement
GIL_WORK = 300       # loop iterations of pure-Python work per item
GIL_ROUNDS = 7       # timed rounds (1 thread, 2 threads, 1 thread) for the GIL measurement

# %%
import time

import pandas as pd

from jetbench import DAG, Edge, ExecutionService, Pipeline, Processor, sinks, sources
from jetbench.processors import collect_sink, items_source, map_processor, noop_sink
from jetbench.processors.generator_source import generator_source

COUNT = int(RATE * SECONDS)


# %% [markdown]
# ## 1. Tasklets, workers and the round-robin deal
#
# A small DAG: a rate-limited source, two map vertices with two instances each, one sink —
# six tasklets for `THREADS` workers. The service deals cooperative tasklets to workers in
# turn, and each worker then calls its own tasklets one after the other, round after round.
# In JupyterLab the dashboard below shows the job live: each tasklet's worker, calls,
# items/s and queue fill.

# %%
def parse(x):
    return 2 * x

def enrich(x):
    return x + 1

dag = DAG()
source = dag.new_vertex("source", generator_source(RATE, timestamped=False, count=COUNT), 1)
parse_v = dag.new_vertex("parse", map_processor(parse), local_parallelism=2)
enrich_v = dag.new_vertex("enrich", map_processor(enrich), local_parallelism=2)
sink = dag.new_vertex("sink", collect_sink(), local_parallelism=1)
dag.edge(Edge.between(source, parse_v)).edge(Edge.between(parse_v, enrich_v))
dag.edge(Edge.between(enrich_v, sink))
dag

# %%
service = ExecutionService(cooperative_threads=THREADS)
job = service.submit(dag, name="round-robin")
dashboard = job.dashboard(interval_s=0.1)
dashboard

# %% [markdown]
# Without a live front end (a headless run, as in CI) the same facts are in the metrics
# snapshot: which worker each tasklet ran on, how often it was called, and how many rounds
# its worker went through.

# %%
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

# %%
assert sorted(result) == sorted(enrich(parse(x)) for x in range(COUNT))
# dealt in turn: the i-th tasklet went to worker i % THREADS
assert list(deal["worker"]) == [i % THREADS for i in range(len(deal))], deal
# round-robin: a worker calls each of its tasklets once per round, so no tasklet has more
# calls than its worker has rounds, and the one that finishes last on each worker (a tasklet
# leaves the list once it is done) was called in every round
assert (deal["calls"] <= deal["worker rounds"]).all(), deal
by_worker = deal.groupby("worker")
assert (by_worker["calls"].max() == by_worker["worker rounds"].max()).all(), deal

# %% [markdown]
# ### The rounds, call by call
#
# The metrics say how often; a **trace** says when. With `ExecutionService(trace=True)` each
# worker records every tasklet call (start, end, whether it made progress, items in and out)
# and every park into a bounded ring, and `job.timeline()` draws them: a lane per worker, a bar
# per call coloured by vertex (faded when the call made no progress), the parks between rounds
# as hatched gaps labelled with how long the worker slept. The wheel zooms, a drag pans, a
# double click shows the whole run; hover a bar for its details. Here it opens on 30 ms of the
# run: each worker calls its three tasklets one after the other, round after round.

# %%
traced_job = ExecutionService(cooperative_threads=THREADS, trace=True).submit(dag, name="round-robin-traced")
traced_job.join(timeout=60)
trace = traced_job.trace()
traced_job.timeline(window=(0.5, 0.53))

# %%
# the round-robin in the recording: each worker's first calls are its tasklets, once each,
# in the order they were dealt, and no tasklet is called twice before its worker's others
for lane, worker in zip(trace.lanes, traced_job.workers, strict=True):
    dealt = [t.name for t in traced_job.tasklets if t.worker_index == worker.index]
    called = [e.tasklet for e in lane.events if e.kind == "call"]
    assert called[: len(dealt)] == dealt, (lane.worker, called[:6], dealt)
calls = trace.frame().query("kind == 'call'")
calls.groupby(["worker", "tasklet"]).agg(calls=("progress", "size"), with_progress=("progress", "sum"))


# %%
job.plot_metrics()

# %% [markdown]
# ## 2. A blocking call stalls every tasklet on its worker
#
# Now one worker thread and two independent branches in one job. The *slow* branch calls
# `slow_lookup`, which for every `BLOCK_EVERY`-th item sleeps `BLOCK_S` seconds as a remote
# call would; the *quick* branch just passes timestamped items to a latency sink. Written as
# an ordinary (cooperative) `map`, the sleep happens inside a tasklet's `call()`: the worker
# cannot run anything else until it returns.
#
# We record when each blocking call started and ended, and sample every tasklet's counters
# every `SAMPLE_S` seconds (`ExecutionService(metrics_interval_s=...)`).

# %%
blocked = []  # (start, end) of every blocking call, time.monotonic()

def slow_lookup(x):
    """Some items need a remote lookup: a blocking sleep."""
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
    """Run on one cooperative thread, traced; return the job, the quick branch's latency
    summary and the blocked windows in seconds since the job started."""
    blocked.clear()
    service = ExecutionService(cooperative_threads=1, metrics_interval_s=SAMPLE_S, trace=True,
                               trace_capacity=400_000)
    job = service.submit(job_definition)
    latency = job.join(timeout=60)
    windows = [(start - job.start_time, end - job.start_time) for start, end in blocked]
    return job, latency, windows

blocking = two_branches(cooperative_lookup)
blocking

# %%
job, latency, windows = run_demo(blocking)
print(job.metrics().table())
print("quick branch latency (ms):", {k: round(v, 1) for k, v in latency.items() if k != "count"})

# %% [markdown]
# The engine times every cooperative call; one slower than `slow_call_ms` (1 ms, Jet's rule
# of thumb) is counted in the tasklet's `slow_calls`. The blocking map lights up:

# %%
calls = pd.DataFrame([
    {"tasklet": f"{t.vertex}#{t.index}", "cooperative": t.cooperative, "slow calls": t.slow_calls,
     "longest call (ms)": round(t.max_call_ms, 1)}
    for t in job.metrics().tasklets
])
lookup = job.metrics().tasklet("slow-lookup")
assert lookup.cooperative and lookup.slow_calls >= 1
assert lookup.max_call_ms >= 0.9 * BLOCK_S * 1000  # a sleep never ends early
calls


# %% [markdown]
# Now the proof that the others stood still. For each blocked window, take the metrics
# samples that fall inside it and see how far each vertex's counters (items in + items out
# + calls) moved between the first and the last of them:

# %%
def progress_while_blocked(job, windows, margin_s=0.03):
    """Per blocked window: how far each vertex's counters moved between the first and the
    last metrics sample taken inside the window."""
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

# %%
assert len(stalled) >= 1, "no blocked window was sampled"
others = [c for c in stalled.columns if c not in ("blocked at (s)", "sampled for (s)", "slow-lookup")]
assert len(others) == 5, others  # every other tasklet: all of them share the one worker
# while slow-lookup slept, no other tasklet on its worker moved at all ...
assert (stalled[others] == 0).all().all(), stalled
# ... so some of the quick branch's items (stamped when due) waited out a whole sleep
assert latency["max_ms"] >= 0.9 * BLOCK_S * 1000, latency

# %% [markdown]
# On the timeline the stall is a gap: one long `slow-lookup` bar (a red mark on top: slower
# than the slow-call threshold) and nothing else on the worker until it returns. The view
# opens on the first blocking call.

# %%
first_start, first_end = windows[0]
job.timeline(window=(first_start - 0.02, first_end + 0.02))


# %%
def quick_gaps(run_job, run_windows):
    """Per blocking call: the longest pause between two calls of the quick branch's ticker while
    the call ran (seconds)."""
    ticks = [(e.start_ns, e.end_ns) for lane in run_job.trace().lanes for e in lane.events
             if e.kind == "call" and e.vertex == "ticker"]
    origin = round(run_job.start_time * 1e9)
    gaps = []
    for start, end in run_windows:
        s_ns, e_ns = origin + round(start * 1e9), origin + round(end * 1e9)
        before = max((t[1] for t in ticks if t[1] <= s_ns), default=s_ns)
        after = min((t[0] for t in ticks if t[0] >= e_ns), default=e_ns)
        inside = sorted(t[0] for t in ticks if s_ns < t[0] < e_ns)
        points = [before, *inside, after]
        gaps.append(max(b - a for a, b in zip(points, points[1:], strict=False)) / 1e9)
    return gaps

blocked_gaps = quick_gaps(job, windows)
# the ticker's calls stop for a whole sleep: a sleep never ends early
assert blocked_gaps and all(gap >= 0.9 * BLOCK_S for gap in blocked_gaps), blocked_gaps


# %% [markdown]
# ## 3. The fix: declare the blocking code non-cooperative
#
# The advice of Jet's reference manual: code that blocks goes through `mapUsingService`, which
# Jet runs as a **non-cooperative** processor on a dedicated thread. jetbench does the same for
# `map_using_service`, and for any `Processor` with `is_cooperative = False` (it also gets an
# outbox that waits for room instead of refusing). The sleep still happens, but only that
# processor's own thread waits: the cooperative worker keeps serving the quick branch.

# %%
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

# %%
rows = []
for name, (run_job, run_latency, run_windows) in runs.items():
    moved = progress_while_blocked(run_job, run_windows)
    lookup = run_job.metrics().tasklet("slow-lookup")
    rows.append({
        "slow-lookup runs as": name,
        "cooperative": lookup.cooperative,
        "worker": lookup.worker,
        "blocked windows sampled": len(moved),
        "blocked windows with ticker progress": int((moved["ticker"] > 0).sum()) if len(moved) else 0,
        "quick p50 latency (ms)": round(run_latency["p50_ms"], 1),
        "quick p90 latency (ms)": round(run_latency["p90_ms"], 1),
        "quick max latency (ms)": round(run_latency["max_ms"], 1),
    })
comparison = pd.DataFrame(rows).set_index("slow-lookup runs as")
comparison

# %% [markdown]
# The quick branch's latency under each variant, beside the length of one blocking call: on
# the cooperative map most of its items wait for some sleep; with the sleep on its own
# thread they pass straight through. (How big the gap is depends on the machine and how busy
# it is, so this notebook draws it rather than asserting a number.)

# %%
import matplotlib.pyplot as plt

ax = comparison[["quick p50 latency (ms)", "quick p90 latency (ms)", "quick max latency (ms)"]].plot.barh(
    figsize=(8, 3), title="quick branch latency while slow-lookup sleeps")
ax.axvline(BLOCK_S * 1000, color="grey", linestyle="--", label=f"one blocking call ({BLOCK_S * 1000:.0f} ms)")
ax.set_xlabel("ms")
ax.invert_yaxis()
ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)  # beside the bars, not over them
plt.show()

# %%
blocked_row, *fixed_rows = rows
assert blocked_row["cooperative"] and blocked_row["blocked windows with ticker progress"] == 0, blocked_row
for row in fixed_rows:
    assert not row["cooperative"] and row["worker"] < 0, row  # on a dedicated thread
    # the cooperative worker, now free, moved the quick branch on while the sleep went on
    # (a machine busy enough can pause the whole process, hence "some window", not "every")
    assert row["blocked windows with ticker progress"] >= 1, row

# %% [markdown]
# The timeline of the fix: the sleeps are on their own lane now, the dedicated thread's, and
# the cooperative worker's lane goes on calling the ticker right through them.

# %%
fixed_job, _, fixed_windows = runs["Processor(is_cooperative=False)"]
fixed_start, fixed_end = fixed_windows[0]
fixed_job.timeline(window=(fixed_start - 0.02, fixed_end + 0.02))

# %%
lanes = {lane.kind: lane for lane in fixed_job.trace().lanes}
assert set(lanes) == {"cooperative", "blocking"}
assert any(e.vertex == "slow-lookup" and e.duration_ns >= 0.9 * BLOCK_S * 1e9 for e in lanes["blocking"].events)
# some blocking call had ticker calls start inside it (the worker was free), where the
# cooperative map's had none
fixed_gaps = quick_gaps(fixed_job, fixed_windows)
assert min(fixed_gaps) < 0.9 * BLOCK_S, fixed_gaps


# %% [markdown]
# Between items a dedicated thread has nothing to do. Jet's threads poll: they park for 25 µs,
# then twice as long after each empty call, up to 5 ms, so an item that arrives mid-park waits
# for the park to end. jetbench's default (`ExecutionService(noncooperative_idle="timer")`)
# parks a thread whose processor only reacts to input until a producer offers to one of its
# queues, which wakes it at once (5 ms stays the cap); `noncooperative_idle="backoff"` is
# Jet's way. `benchmarks/blocking_hop.py` measures the difference on a slow stream through a
# `map_using_service`: the hop's latency, and how often the thread woke for nothing.

# %% [markdown]
# ## 4. Work stealing on and off
#
# The deal at submission is blind to how long tasklets will live. Jet's historical rule
# (the old reference manual's TaskletExecutionService), kept in jetbench as a switch: when a worker finishes a tasklet, it looks for a
# colleague with at least two more tasklets and **steals** one. Here the deal gives worker 0
# four long-running sources and their sinks and worker 1 only short-lived ones. We sample
# where each tasklet runs and look half-way through the job.

# %%
def uneven_dag():
    """Dealt in turn over 2 workers: worker 0 gets the long-running tasklets, worker 1 the quick ones."""
    dag = DAG()
    for k in range(4):
        slow = dag.new_vertex(f"long{k}", generator_source(RATE / 2, timestamped=False, count=COUNT // 2), 1)
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

# %%
off, on = stealing.to_dict("records")
assert off["steals"] == 0 and off["... on worker 1 half-way"] == 0, off  # worker 1 went idle
assert on["steals"] > 0 and on["... on worker 1 half-way"] >= 1, on    # worker 1 took some over
assert on["worker 1 rounds"] > off["worker 1 rounds"]


# %% [markdown]
# The rule is blunt. Each finished tasklet triggers one steal attempt, and a tasklet already
# marked for stealing still counts on its old worker's list until it is handed over; when many
# tasklets finish together, as the short ones do here, the thief keeps marking and can end
# up with most of the long-running work (compare the two half-way columns).
#
# Moving tasklets changes *where* the work runs; whether that makes the job faster is the
# next question.
#
# ## 5. More threads and the GIL
#
# In CPython only one thread runs Python bytecode at a time (the global interpreter lock).
# Two cooperative workers running pure-Python maps take turns holding the lock, so the job
# takes about as long as on one worker. (Time spent sleeping or in C code that releases the
# GIL does overlap, which is why section 3's dedicated thread helped.)
#
# Wall times are noisy on a busy machine, so the measurement runs `GIL_ROUNDS` rounds of
# *1 thread, 2 threads, 1 thread* back to back; each round's speedup compares the 2-thread
# run with the mean of the 1-thread runs around it, and the median round counts.

# %%
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
print(f"2 threads vs 1: {speedup:.2f}x (median of {len(gil)} rounds, on this machine, now)")
gil.round(3)

# %% [markdown]
# Each round's wall times side by side: on an otherwise quiet machine the two bars are about
# the same height. How the times compare on a busy machine is noise, so the notebook shows
# them and leaves claims about speed to the benchmarks. What the machine's load cannot change
# is the CPU: with the GIL, the process burns at most about one core's worth of CPU per wall
# second even with two workers (a busy machine only lowers that figure).

# %%
ax = gil[["1 thread (s)", "2 threads (s)"]].plot.bar(figsize=(8, 3), title="pure-Python map: wall time per round")
ax.set_xlabel("round")
ax.set_ylabel("s")
plt.show()

# %%
assert gil["CPU / wall, 2 threads"].median() < 1.4, gil

# %% [markdown]
# Next: [03 · backpressure and queues](03-backpressure-and-queues.ipynb).
