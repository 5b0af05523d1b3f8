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
# # 03 · Backpressure and queues
#
# Tasklets talk through **bounded** single-producer/single-consumer queues (the ringbuffers
# of Jet's reference manual, "Cooperative Multithreading"). When a consumer falls behind, its inbound queue fills; the producer's outbox
# then refuses items, the producer stops taking input, its own inbound queue fills, and so on
# up to the source. Nothing grows without bound: this is **backpressure**.
#
# This notebook runs a fast source into a slow sink, shows the queues filling from the sink
# upstream, checks that memory stays bounded however much data flows, and measures what the
# queue size does to throughput and latency.

# %% tags=["parameters"]
ITEMS = 20_000                          # items through the pipeline
PAYLOAD_BYTES = 1_000                   # size of each item
QUEUE = 128                             # queue size of every edge (and the outbox capacity)
SINK_US_PER_ITEM = 20                   # the slow sink's cost per item (a sleep)
QUEUE_SIZES = [4, 16, 128, 1024, 4096]  # queue sizes for the throughput/latency table
REPEATS = 2                             # runs per queue size (the best one counts)
SAMPLE_S = 0.02                         # metrics sampling interval
TRACE_ITEMS = 3_000                     # items through the traced run (section 1's timeline)

# %%
# %matplotlib inline
import time
import tracemalloc

import matplotlib.pyplot as plt
import pandas as pd

from jetbench import DAG, Edge, ExecutionService, Processor
from jetbench.processors import items_source, map_processor

# %% [markdown]
# ## 1. A slow sink
#
# The sink writes to a slow external system: it sleeps `SINK_US_PER_ITEM` µs per item.
# Because it blocks, it is declared non-cooperative (notebook 02). The source produces
# `ITEMS` payloads lazily from a generator, as fast as it is allowed to.

# %%
class SlowSinkP(Processor):
    """Takes up to 64 items at a time and sleeps SINK_US_PER_ITEM µs for each."""

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

# %%
service = ExecutionService(outbox_capacity=QUEUE, metrics_interval_s=SAMPLE_S)
job = service.submit(dag, name="slow-sink")
latencies = job.join(timeout=120)
print(job.metrics().table())
job.plot_metrics()

# %% [markdown]
# The *inbound queue fill* panel shows every queue pinned at its capacity while the sink
# works through the backlog. Per vertex, over all samples: the largest inbound queue size
# seen, the capacity, and how often the vertex found its outbound queue full (backpressure).

# %%
frame = job.metrics_frame()
queues = frame.groupby("vertex", sort=False).agg(
    max_queue=("queues_size", "max"),
    capacity=("queues_capacity", "max"),
    backpressured=("backpressure", "mean"),
)
queues

# %%
assert len(latencies) == ITEMS
# queues never exceed their capacity ...
assert (frame["queues_size"] <= frame["queues_capacity"]).all()
# ... and the slow sink filled its own queue and, through backpressure, every queue upstream
for vertex in ["slow-sink", "enrich", "stamp"]:
    assert queues.loc[vertex, "max_queue"] == QUEUE, queues
# (the share of samples in which each producer met a full queue is in the table: most of them)
for vertex in ["source", "stamp", "enrich"]:
    assert queues.loc[vertex, "backpressured"] > 0, queues

# %% [markdown]
# ### Backpressure, call by call
#
# What does a refused producer do? It is called again, round after round, and each call
# returns at once without moving anything: a call **without progress**. Recorded with
# `ExecutionService(trace=True)` (a shorter run: `TRACE_ITEMS`), the timeline shows them
# faded: while the dedicated thread sleeps through a batch, the cooperative worker's lane is
# faded calls of all three producers, then parks growing from the idle floor; a batch taken by
# the sink frees room and one round of solid bars moves it on.

# %%
bp_job = ExecutionService(outbox_capacity=QUEUE, trace=True).submit(slow_sink_dag(TRACE_ITEMS, QUEUE),
                                                                    name="slow-sink-traced")
bp_job.join(timeout=120)
bp_trace = bp_job.trace()
bp_job.timeline(window=(0.05, 0.06))

# %%
bp_calls = bp_trace.frame().query("kind == 'call'")
bp_share = bp_calls.groupby("vertex", sort=False).agg(calls=("progress", "size"), with_progress=("progress", "sum"))
bp_share["without progress"] = bp_share["calls"] - bp_share["with_progress"]
bp_share

# %%
# every producer upstream of the full queues made calls that moved nothing, and after each
# round of them only (no tasklet of the worker progressed) the worker parked
for vertex in ["source", "stamp", "enrich"]:
    assert bp_share.loc[vertex, "without progress"] > 0, bp_share
cooperative = next(lane for lane in bp_trace.lanes if lane.kind == "cooperative")
assert any(e.kind == "park" and e.idle_round >= 1 for e in cooperative.events)


# %% [markdown]
# ## 2. Memory stays bounded
#
# Since every queue and outbox is bounded, the items in flight are bounded too, whatever the
# length of the input. `tracemalloc` measures the peak memory Python allocated while the job
# ran, for `ITEMS` and for twice as many items: the peak stays a small fraction of the data
# that flowed, and twice the input adds only what the sink keeps per item (one latency, a
# float of a few dozen bytes, against a payload of `PAYLOAD_BYTES`).

# %%
def peak_memory(items):
    tracemalloc.start()
    try:
        # progress=False: the job's memory, not the progress line's (in JupyterLab a run longer
        # than half a second shows one, and its first display allocates a few MB of its own)
        ExecutionService(outbox_capacity=QUEUE).run(slow_sink_dag(items, QUEUE), timeout=120, progress=False)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

memory = pd.DataFrame([
    {"items": n, "data through the job (MB)": n * PAYLOAD_BYTES / 1e6, "peak traced (MB)": peak_memory(n) / 1e6}
    for n in (ITEMS, 2 * ITEMS)
])
memory.round(2)

# %%
# Memory, unlike time, does not depend on how busy the machine is: what is in flight is
# bounded by the queues and outboxes, whatever the input's length.
small, large = memory.to_dict("records")
for row in (small, large):
    assert row["peak traced (MB)"] < 0.25 * row["data through the job (MB)"], row
extra_data = large["data through the job (MB)"] - small["data through the job (MB)"]
extra_peak = large["peak traced (MB)"] - small["peak traced (MB)"]
assert extra_peak < 0.1 * extra_data, memory  # not the payloads: only the sink's per-item result


# %% [markdown]
# ## 3. Queue size, throughput and latency
#
# How big should the queues be? Run the same job with each size in `QUEUE_SIZES` (the
# outbox capacity, which is also the most a tasklet emits per call, follows the queue size
# up to 1024). Latency is measured per item from the `stamp` vertex to the sink.
#
# Little's law predicts the latency of a saturated pipeline: items in flight divided by
# throughput. With three full queues and three full outboxes between `stamp` and the sink,
# that is roughly `(3 × queue + 3 × outbox) / throughput`.

# %%
def measure(queue):
    outbox = min(queue, 1024)
    start = time.perf_counter()
    lat = ExecutionService(outbox_capacity=outbox).run(slow_sink_dag(ITEMS, queue), timeout=120)
    throughput = ITEMS / (time.perf_counter() - start)
    lat = sorted(lat)
    return {
        "queue size": queue,
        "delivered": len(lat),
        "items/s": round(throughput),
        "p50 latency (ms)": 1000 * lat[len(lat) // 2],
        "p99 latency (ms)": 1000 * lat[int(0.99 * (len(lat) - 1))],
        "Little's law estimate (ms)": 1000 * 3 * (queue + outbox) / throughput,
    }

runs = pd.DataFrame([measure(queue) for _ in range(REPEATS) for queue in QUEUE_SIZES])
# the least disturbed run of each size: the highest throughput
sizes = runs.loc[runs.groupby("queue size")["items/s"].idxmax()].set_index("queue size")
sizes.round(1)

# %%
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

# %% [markdown]
# Tiny queues cost throughput (each hand-over moves only a few items, so per-batch overhead
# dominates); past a few hundred items the sink is the bottleneck and bigger queues only
# hold more items waiting, which is pure latency.
#
# The throughput curve is a measurement of this machine at this moment (on a busy machine
# its shape wobbles; `jetbench bench` and `benchmarks/` are where speed is claimed). Two
# things hold on any machine: every run delivers every item, and latency grows with the queue
# size, by orders of magnitude across `QUEUE_SIZES`, since a full queue is items waiting.

# %%
smallest, largest = sizes.index[0], sizes.index[-1]
assert (runs["delivered"] == ITEMS).all(), runs
assert sizes.loc[largest, "p50 latency (ms)"] > sizes.loc[smallest, "p50 latency (ms)"], sizes

# %% [markdown]
# Next: [04 · the idle-CPU experiment](04-idle-cpu-experiment.ipynb).
