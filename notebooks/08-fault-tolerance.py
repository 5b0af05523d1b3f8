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
# # 08 · Fault tolerance: snapshots, restarts, exactly-once
#
# A job that keeps state (a running count, open windows, a source's position) loses it when
# a processor fails — unless the state was saved somewhere first. Jet saves it in
# **snapshots**, taken while the job runs, and restarts a failed job from the last good one
# (Jet's reference manual, "Fault Tolerance" and "Processing Guarantees"). jetbench does the
# same, in-process, with an SQLite file as the store.
#
# How a snapshot is taken without stopping the job is the distributed-snapshot algorithm of
# Chandy and Lamport ("Distributed Snapshots: Determining Global States of Distributed
# Systems", ACM TOCS, 1985), as Jet adapts it (Carbone et al. describe the same scheme for
# Flink in "Lightweight Asynchronous Snapshots for Distributed Dataflows", 2015):
#
# 1. the coordinator starts snapshot *n*; each **source** saves its position (an offset) at a
#    point between two items and sends a **barrier** `n` downstream on every output: a control
#    item, like a watermark, that splits the stream into "before snapshot *n*" and "after";
# 2. a processor saves its state once the barrier has come **on every one of its inputs**,
#    then forwards the barrier. With **exactly-once** it *aligns*: an input that has delivered
#    the barrier is not read again until all inputs have, so the saved state holds exactly
#    the items before the barrier. With **at-least-once** it does not wait: items after the
#    barrier on one input may already be counted when the state is saved, and are counted
#    again when a restarted source replays them;
# 3. **two-phase commit**: phase 1 is the save (`save_to_snapshot`, `snapshot_commit_prepare`:
#    a transactional sink prepares its pending output); once every processor has saved and
#    the snapshot is stored, phase 2 (`snapshot_commit_finish`) lets the sinks commit.
#
# After a failure the job restarts: each processor gets its saved entries back
# (`restore_from_snapshot`), the sources rewind to their saved offsets, and the stream
# resumes as if the failure had not happened.

# %% tags=["parameters"]
THREADS = 2              # cooperative worker threads
ITEMS = 12_000           # items in the stream (keys 0..KEYS-1)
KEYS = 7                 # distinct keys of the keyed count
RATE = 6_000             # items per second from the source (so a job runs about two seconds)
INTERVAL_MS = 200        # time between snapshots
FAIL_AT = 6_000          # the item on which the map raises, once

# %%
import os
import sqlite3
import tempfile
import time
from collections import Counter
from pathlib import Path

import graphviz
import pandas as pd

from jetbench import (
    ExecutionService,
    JobConfig,
    JobError,
    Pipeline,
    SnapshotStore,
    aggregate,
    sinks,
    sources,
)
from jetbench.notebook import FittedDrawing

# the snapshots of this notebook go to a file of their own, in a temporary directory
STORE_DIR = tempfile.mkdtemp(prefix="jetbench-08-")
store = SnapshotStore(os.path.join(STORE_DIR, "snapshots.sqlite"))
store

# %% [markdown]
# ## 1. What a snapshot is
#
# A source `A` and a source `B` feed a keyed count, which feeds a sink. The coordinator has
# started snapshot *n*: both sources saved their offsets and emitted the barrier `‖n`. The
# barrier from `A` has reached the count; the one from `B` is still two items away. With
# exactly-once the count stops reading `A` (items `a5`, `a6` wait) until `‖n` comes from `B`
# too; then it saves its counts, forwards `‖n` and reports to the coordinator, which writes
# the snapshot to the store and opens phase 2.

# %%
diagram = graphviz.Digraph("snapshot", graph_attr={"rankdir": "LR", "fontsize": "11"},
                           node_attr={"shape": "box", "style": "rounded", "fontname": "Helvetica", "fontsize": "11"},
                           edge_attr={"fontname": "Helvetica", "fontsize": "10"})
diagram.node("coord", "coordinator\n(starts snapshot n)", shape="ellipse")
diagram.node("A", "source A\noffset saved")
diagram.node("B", "source B\noffset saved")
diagram.node("count", "keyed count\n(saves its counts once ‖n\nhas come on every input)")
diagram.node("sink", "collect sink\n(prepare in phase 1,\ncommit in phase 2)")
diagram.node("store", "SnapshotStore\n(SQLite: 2 slots,\nverification last)", shape="cylinder")
diagram.edge("coord", "A", "1. start n", style="dashed")
diagram.edge("coord", "B", "1. start n", style="dashed")
diagram.edge("A", "count", "a6 a5 (held back)  ‖n  ▶")
diagram.edge("B", "count", "b6 b5  ‖n  b4 b3 ▶")
diagram.edge("count", "sink", "‖n-1 … ▶")
diagram.edge("count", "coord", "2. saved n", style="dashed", constraint="false")
diagram.edge("coord", "store", "3. write n", style="dashed")
diagram.edge("coord", "sink", "4. phase 2: commit", style="dashed", constraint="false")
FittedDrawing(diagram)  # fitted to the cell's width, as jetbench draws its DAGs: click for full size

# %% [markdown]
# ## 2. Barriers flowing: a job with snapshots every few hundred milliseconds
#
# The job of this notebook: a paced source of `ITEMS` numbers, a `map`, and a count per key
# (`x % KEYS`). `JobConfig` asks for exactly-once snapshots every `INTERVAL_MS` ms into our
# store; `submit` then returns a `FaultTolerantJob`. While it runs we look into the store
# now and then; afterwards its `snapshot_history` lists every snapshot: id, how long it took
# from the barrier's start to the stored snapshot, and the bytes each vertex saved.

# %%
class FailOnce:
    """Passes items through, but raises once, on the item ``at`` (None: never)."""

    def __init__(self, at=None):
        self.at = at
        self.armed = at is not None

    def __call__(self, x):
        if self.armed and x == self.at:
            self.armed = False
            raise ValueError(f"injected failure at item {x}")
        return x


def keyed_count(fail, items=ITEMS, rate=RATE):
    p = Pipeline()
    (p.read_from(sources.generator(rate, timestamped=False, count=items))
        .map(fail)
        .group_by(lambda x: x % KEYS)
        .aggregate(aggregate.counting())
        .write_to(sinks.collect()))
    return p


def config(guarantee, **kw):
    return JobConfig(processing_guarantee=guarantee, snapshot_interval_ms=INTERVAL_MS, snapshot_store=store, **kw)


EXPECTED = Counter(x % KEYS for x in range(ITEMS))

job = ExecutionService(cooperative_threads=THREADS).submit(keyed_count(FailOnce()), name="flowing",
                                                           config=config("exactly_once"))
seen_in_store = set()
while not job.is_done:
    seen_in_store.add(store.owners().get("job/flowing", 0))
    time.sleep(INTERVAL_MS / 2000)
flowing = Counter(dict(job.join(timeout=60)))
job

# %%
def history_table(job):
    rows = []
    for r in job.snapshot_history:
        rows.append({"snapshot": r.snapshot_id, "stored": r.success,
                     "started (s into the job)": round(r.started - job.snapshot_history[0].started, 3),
                     "duration (ms)": round(r.duration_s * 1000, 2), "bytes": sum(r.sizes.values()),
                     **{f"{vertex} (bytes)": size for vertex, size in sorted(r.sizes.items())}})
    return pd.DataFrame(rows).set_index("snapshot")

history_table(job)

# %%
ids = [r.snapshot_id for r in job.snapshot_history]
assert flowing == EXPECTED, flowing
assert len(ids) >= 3 and ids == list(range(1, len(ids) + 1)), ids  # one after the other, none skipped
assert all(r.success for r in job.snapshot_history)
assert job.last_snapshot.snapshot_id == ids[-1]
assert job.restarts == 0 and job.restored_from == 0
assert len(seen_in_store - {0}) >= 2, seen_in_store  # we saw snapshots land in the store while it ran
assert "job/flowing" not in store.owners()  # a job that ends forgets its snapshots

# %% [markdown]
# The source saves its next sequence number, the first aggregation stage its per-key
# accumulators, the collect sink the items it has committed: that is why their sizes grow
# a little and then stay put. A snapshot of this job takes a few milliseconds, and the job
# keeps running while it is written.
#
# ## 3. A processor fails mid-stream, and the job restarts from its last snapshot
#
# The same job, but the `map` raises a `ValueError` on item `FAIL_AT` — once, as a crashed
# lookup or a bad record would. Without a guarantee the job would fail. With one, the
# coordinator lets the failed execution end, loads the last good snapshot from the store,
# plans the DAG again, restores every processor and starts new workers (the warning below
# is jetbench's log of the restart). The result is still exact.

# %%
job = ExecutionService(cooperative_threads=THREADS).submit(keyed_count(FailOnce(FAIL_AT)), name="failing",
                                                           config=config("exactly_once"))
restarted = Counter(dict(job.join(timeout=60)))
pd.DataFrame([{"restarts": job.restarts, "restored from snapshot": job.restored_from,
               "snapshots taken": len(job.snapshot_history), "failure": str(f).splitlines()[0]}
              for f in job.failures])

# %%
assert job.restarts == 1 and len(job.failures) == 1, job.failures
assert "injected failure at item" in str(job.failures[0])
assert job.restored_from > 0, "the restart restored a snapshot, not the start"
assert restarted == EXPECTED, restarted

# %% [markdown]
# `restored_from` is the id of the snapshot the running execution started from; snapshots
# taken after the restart go on from that id. A job that keeps failing stops after
# `max_restarts` restarts (3 by default) with the history of its failures.
#
# ## 4. Exactly-once against at-least-once
#
# The same failure under both guarantees, beside a run with no failure and no guarantee.
# Exactly-once must give the failure-free counts exactly. At-least-once promises only that
# nothing is lost: every key is counted at least as often, and items that were counted after
# the barrier on one input and replayed after the restart are counted twice. Whether any are
# depends on timing (a vertex must have gone on reading one input while another's barrier
# was still on its way, just before a snapshot the restart then used), so the extra counts
# may well be zero on a given run; the assertion is the guarantee itself.

# %%
def counts(guarantee, fail_at):
    cfg = config(guarantee) if guarantee != "none" else None
    job = ExecutionService(cooperative_threads=THREADS).submit(keyed_count(FailOnce(fail_at)),
                                                               name=f"compare-{guarantee}", config=cfg)
    return Counter(dict(job.join(timeout=60))), job

baseline, _ = counts("none", None)
exactly, exactly_job = counts("exactly_once", FAIL_AT)
at_least, at_least_job = counts("at_least_once", FAIL_AT)
comparison = pd.DataFrame({
    "failure-free": pd.Series(baseline),
    "exactly-once (1 failure)": pd.Series(exactly),
    "at-least-once (1 failure)": pd.Series(at_least),
}).rename_axis("key")
comparison["at-least-once extra"] = comparison["at-least-once (1 failure)"] - comparison["failure-free"]
comparison.loc["total"] = comparison.sum()
comparison

# %%
assert baseline == EXPECTED
assert exactly_job.restarts == 1 and at_least_job.restarts == 1
assert exactly == baseline, (exactly, baseline)
assert set(at_least) == set(baseline) and all(at_least[k] >= baseline[k] for k in baseline), (at_least, baseline)

# %% [markdown]
# ## 5. The store, looked at
#
# The store is one SQLite file (WAL mode), two tables. Each owner — a running job is
# `job/<name>` — has **two slots**: snapshot *n* goes to slot `n % 2`, so writing snapshot
# *n* never touches *n − 1*, the last good one. A snapshot is one transaction: the slot's old
# rows go, the state goes in as `chunk` rows (one or more per processor instance), and the
# `verification` row goes in **last**, with the number of chunks, their bytes and a digest.
# A reader takes the newest slot whose verification matches its chunks; a half-written or
# torn snapshot is skipped with a `SnapshotWarning`, and the other slot is used (Jet keeps
# its snapshots in two alternating maps with a verification record for the same reason).
#
# A job's snapshots leave the store when it ends, so we look while one runs: a slower
# source, a few snapshots in, then we read the tables directly.

# %%
SLOW_RATE = RATE // 3
slow = ExecutionService(cooperative_threads=THREADS).submit(keyed_count(FailOnce(), rate=SLOW_RATE),
                                                            name="looked-at", config=config("exactly_once"))
deadline = time.monotonic() + 30
while store.owners().get("job/looked-at", 0) < 3 and time.monotonic() < deadline:
    time.sleep(0.05)

with sqlite3.connect(store.path) as db:
    verification = pd.read_sql_query(
        "SELECT owner, slot, snapshot_id, chunks, bytes, substr(digest, 1, 12) AS digest "
        "FROM verification WHERE owner = 'job/looked-at' ORDER BY slot", db)
    chunks = pd.read_sql_query(
        "SELECT slot, snapshot_id, vertex, instance, seq, length(data) AS bytes "
        "FROM chunk WHERE owner = 'job/looked-at' ORDER BY slot, vertex, instance", db)
verification

# %%
chunks

# %%
assert sorted(verification["slot"]) == [0, 1]  # two slots, no more
assert (verification["snapshot_id"] % 2 == verification["slot"]).all()  # snapshot n in slot n % 2
assert verification["snapshot_id"].max() - verification["snapshot_id"].min() == 1  # the newest two
for row in verification.itertuples():  # each verification record counts its slot's chunks
    mine = chunks[(chunks["slot"] == row.slot) & (chunks["snapshot_id"] == row.snapshot_id)]
    assert len(mine) == row.chunks and mine["bytes"].sum() == row.bytes, (row, mine)

# %% [markdown]
# ## 6. Exporting a snapshot, and a new job started from it
#
# `job.export_snapshot(name)` takes a snapshot now and keeps a copy under `name`, which
# outlives the job (Jet's `exportSnapshot`). `JobConfig(initial_snapshot=name)` starts a new
# job from it — here in this process, but the store is a file, so another process could do
# the same (as it can with `initial_snapshot="job/<name>"` after a process was killed). We
# export from the still-running job of section 5, cancel it, and let a new job finish the
# count from the export.

# %%
exported = slow.export_snapshot("half-way")
slow.cancel()
try:
    slow.join(timeout=30)
except JobError as exc:
    print("cancelled:", str(exc).splitlines()[0])
saved = store.load("half-way")
position = {vertex: state.entry_count for vertex, state in saved.vertices.items()}
print(f"exported snapshot {exported.snapshot_id}; entries per vertex: {position}")

resumed = ExecutionService(cooperative_threads=THREADS).submit(
    keyed_count(FailOnce()), name="from-export", config=config("exactly_once", initial_snapshot="half-way"))
from_export = Counter(dict(resumed.join(timeout=60)))
print(f"the new job started from snapshot {resumed.restored_from}")
sorted(from_export.items())

# %%
assert saved is not None and saved.snapshot_id == exported.snapshot_id
assert resumed.restored_from == exported.snapshot_id
assert from_export == EXPECTED, from_export  # the cancelled job's counts, finished by the new one
assert "half-way" in store.owners() and "job/looked-at" not in store.owners()

# %% [markdown]
# ## 7. Suspend and resume
#
# Jet's `job.suspend()` takes a terminal snapshot and stops the job: no thread of it is left
# running, and its status is `suspended`. `job.resume()` plans the same job again from that
# snapshot, on the same handle. The count below is suspended half-way, checked while it is
# suspended, resumed, and finishes exactly as the failure-free run does. (The dashboard of a
# job with a guarantee has Suspend and Resume buttons doing the same.)

# %%
import threading

paused = ExecutionService(cooperative_threads=THREADS).submit(
    keyed_count(FailOnce()), name="paused", config=config("exactly_once"))
time.sleep(ITEMS / RATE / 2)
paused.suspend()
left_running = [t.name for t in threading.enumerate() if t.name.startswith("jetbench.paused")]
print(f"status {paused.status.value}; snapshot #{paused.metrics().snapshots.last_snapshot_id} kept; "
      f"threads of the job still running: {left_running}")
time.sleep(0.5)  # nothing moves while suspended
paused.resume()
after_resume = Counter(dict(paused.join(timeout=60)))
print(f"resumed from snapshot #{paused.restored_from}, status {paused.status.value}")

# %%
assert left_running == []
assert after_resume == EXPECTED, after_resume

# %% [markdown]
# ## 8. Barriers seen in the dashboard
#
# The dashboard of a job with a guarantee shows where the barrier of the snapshot in flight
# is. Here a slow stage (2 ms an item, on a thread of its own) merges a *trickle* (50 items/s)
# and a *flood* (1,000 items/s, more than the stage takes, so its queue stays full). When
# snapshot *n* starts, the trickle's barrier reaches the stage at once and is **held**: with
# exactly-once the stage reads only the flood until that input's barrier, still **in the
# queue** behind a full queue of items, arrives too. Each edge row of the queue view carries
# a marker (‖ in queue, held or passed, with the snapshot's id; hover it for what it
# means), each tasklet row its snapshot state (`aligning #n`, `saving #n`, `emitting barrier
# #n` ...). Run the cell and watch a few snapshots go by (the job runs about six seconds):
#
# ![the dashboard with barrier #3 held on the trickle's edge and in the queue on the flood's](images/dashboard-barrier.png)

# %%
from jetbench import DAG, Edge, Processor
from jetbench.processors import noop_sink
from jetbench.processors.generator_source import generator_source


class SlowMerge(Processor):
    """Its two inputs to one output, 2 ms an item: on a thread of its own, since it sleeps."""

    is_cooperative = False

    def process(self, ordinal, inbox):
        for x in inbox.take(50):
            time.sleep(0.002)
            self.outbox.offer(x)


def trickle_and_flood(seconds=3):
    dag = DAG()
    trickle = dag.new_vertex("trickle", generator_source(50, timestamped=False, count=50 * seconds), local_parallelism=1)
    flood = dag.new_vertex("flood", generator_source(1_000, timestamped=False, count=1_000 * seconds), local_parallelism=1)
    slow = dag.new_vertex("slow", SlowMerge, local_parallelism=1)
    sink = dag.new_vertex("sink", noop_sink(), local_parallelism=1)
    dag.edge(Edge.from_(trickle).to(slow, 0)).edge(Edge.from_(flood).to(slow, 1).queue_size(200))
    dag.edge(Edge.between(slow, sink))
    return dag


watched = ExecutionService(cooperative_threads=THREADS, outbox_capacity=64).submit(
    trickle_and_flood(), name="watched",
    config=JobConfig("exactly_once", snapshot_interval_ms=500, snapshot_store=store))
watched.dashboard(interval_s=0.1)

# %% [markdown]
# The same figures are in `job.metrics()`, for a program: `snapshot_state` per tasklet, and
# per edge (`by_edge()`, also `job.metrics_frame(kind="queue")`) the barrier's snapshot id,
# where it is, and in how many of the edge's queues. One moment with a barrier held:

# %%
while True:
    moment = watched.metrics()
    barriers = {q.edge: q.barrier for q in moment.by_edge()}
    if barriers["trickle → slow #0"] == "held" or watched.is_done:
        break
    time.sleep(0.01)
print({t.vertex: f"{t.snapshot_state} #{t.snapshot_id}" if t.snapshot_state else "" for t in moment.tasklets})
pd.DataFrame([{"edge": q.edge, "barrier": q.barrier_id, "where": q.barrier, "in queue": q.barrier_in_queue,
               "held": q.barrier_held, "passed": q.barrier_passed, "queue fill": round(q.fill, 2)}
              for q in moment.by_edge()]).set_index("edge")

# %%
watched.join(timeout=60)
held_moment = moment.tasklet("slow")
assert barriers["trickle → slow #0"] == "held", barriers
assert held_moment.snapshot_state == "aligning", held_moment.snapshot_state  # waits for the flood's barrier
assert watched.metrics().snapshots.snapshots_taken >= 2

# %% [markdown]
# ## 9. What the store records, and why it is trusted like code
#
# **A snapshot store holds pickles: reading a snapshot unpickles the processors' state, and
# unpickling runs code that the file names. Trust a store file, and an exported snapshot, as
# you trust code: open only stores your own jobs wrote.** jetbench opens no store by itself:
# a job uses the store its `JobConfig` names, and a job that names none keeps its snapshots
# in a temporary store of its own, deleted when it ends (it restarts within its process, but
# cannot be resumed, exported from or started from).
#
# Beside the snapshots, the store keeps a **record of each job**: running (with the id of its
# newest snapshot, from its first one on), then completed, failed or cancelled, written in the same
# transaction that deletes the job's snapshots, so no kill can leave neither. `resume=True`
# reads it: a job the store records as completed is **not run again** (the job returned is
# already completed, with a `SnapshotWarning` saying when), and a store that lost snapshots
# the record says were taken (its WAL file deleted, the file emptied or truncated, every
# snapshot torn) says so before the job starts from the beginning.
#
# Each snapshot also keeps a **fingerprint of every vertex's code** (its processor and the
# functions it was given, from their bytecode). A job started from a snapshot taken with
# other code is warned about, naming the vertex; `on_code_change="refuse"` refuses it and
# `"allow"` lets it through without a word: Jet's job upgrade, a snapshot started into a
# changed pipeline on purpose. Here: the job of section 2 resumed (it completed), and the
# export of section 6 started into a pipeline whose `map` is another function.

# %%
import warnings

from jetbench import CodeChangedError, SnapshotWarning


def said(run):
    """What ``run()`` returns, and the SnapshotWarnings it gave."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        value = run()
    return value, [str(w.message) for w in seen if issubclass(w.category, SnapshotWarning)]


record = store.record("job/flowing")
print(f"the store's record of 'flowing': {record.state} at {record.when}")
again, words = said(lambda: ExecutionService(cooperative_threads=THREADS).submit(
    keyed_count(FailOnce()), name="flowing", config=config("exactly_once", resume=True)))
print(f"resumed: {again.status.value}, result {again.join()}\n{words[0]}\n")

upgraded, words = said(lambda: ExecutionService(cooperative_threads=THREADS).submit(
    keyed_count(lambda x: x), name="upgraded", config=config("exactly_once", initial_snapshot="half-way")))
upgraded_counts = Counter(dict(upgraded.join(timeout=60)))
print(words[0], "\n")
try:
    ExecutionService(cooperative_threads=THREADS).submit(
        keyed_count(lambda x: x), name="refused",
        config=config("exactly_once", initial_snapshot="half-way", on_code_change="refuse"))
except CodeChangedError as exc:
    refused = exc
    print(f"{type(exc).__name__}: {exc}")

# %%
assert record.state == "completed" and again.status.value == "completed" and again.join() is None
assert upgraded_counts == EXPECTED  # the new map passes items as the old one did: a fitting upgrade
assert "vertex 'fused(map, group-aggregate-key)'" in words[0] and "fused(map" in str(refused), (words, refused)

# %% [markdown]
# ## 10. How a sink commits, and what a reader of its output sees
#
# A sink is where a restore could go wrong in public: lines written after the snapshot a job
# restarts from are written again. So under a guarantee the files sink commits with the
# snapshot, as Flink's `FileSink` does: each instance writes the lines of a snapshot epoch to a
# hidden in-progress file (`.part-00000-000000003.inprogress`), makes it pending at the barrier
# (phase 1), and renames it to `part-00000-000000003` once the snapshot is stored (phase 2).
# A rename is atomic, so a file appears whole; a restore commits what its snapshot left pending
# and deletes what came later, hidden files only. Below, the failing job of section 3 writes its
# counts' input to files, while a reader lists the directory every few milliseconds: every
# committed file it saw is there at the end, unchanged, and the lines are the failure-free
# run's. (Without a guarantee the sink writes one `part-00000` per instance as items come, and
# a failed job leaves what it had written.) The collect and pandas sinks hold their items the
# same way: the job's result is only ever committed items.

# %%
def lines_job(fail, out):
    p = Pipeline()
    (p.read_from(sources.generator(RATE, timestamped=False, count=ITEMS))
        .map(fail)
        .map(lambda x: f"item {x}")
        .write_to(sinks.files(out)))
    return p


out_dir = os.path.join(STORE_DIR, "lines")
job = ExecutionService(cooperative_threads=THREADS).submit(lines_job(FailOnce(FAIL_AT), out_dir), name="lines",
                                                           config=config("exactly_once"))
read = {}  # what a reader saw: committed file -> its text
hidden = set()
while not job.is_done:
    if os.path.isdir(out_dir):
        for name in os.listdir(out_dir):
            if name.startswith("."):
                hidden.add(name.rsplit(".", 1)[1])
            elif name not in read:
                try:
                    read[name] = Path(out_dir, name).read_text()
                except FileNotFoundError:  # never: a committed file stays
                    read[name] = None
    time.sleep(0.005)
job.join(timeout=60)
final = {path.name: path.read_text() for path in sorted(Path(out_dir).iterdir())}
pd.DataFrame({"committed files": [len(final)], "seen by the reader while it ran": [len(read)],
              "hidden kinds seen": [", ".join(sorted(hidden))], "restarts": [job.restarts],
              "first files": [", ".join(list(final)[:3])]})

# %%
written = Counter(line for text in final.values() for line in text.splitlines())
assert job.restarts == 1 and written == Counter(f"item {x}" for x in range(ITEMS)), job.restarts
assert all(name.startswith("part-") for name in final)  # no hidden file is left
assert all(final.get(name) == text for name, text in read.items()), "a reader saw a line a restore took back"
assert len(read) >= 2, read  # files appeared while the job ran

# %% [markdown]
#
# ## Further reading
#
# - Hazelcast Jet reference manual: "Fault Tolerance", "Processing Guarantees", "Job
#   Management" (suspend, resume, exported snapshots) and the Processor API's snapshot
#   methods.
# - K. M. Chandy and L. Lamport, "Distributed Snapshots: Determining Global States of
#   Distributed Systems", ACM Transactions on Computer Systems 3(1), 1985.
# - P. Carbone et al., "Lightweight Asynchronous Snapshots for Distributed Dataflows",
#   arXiv:1506.08603, 2015.
# - `jetbench/core/snapshot.py` (the coordinator and restarts) and
#   `jetbench/core/snapshot_store.py` (the SQLite store).

# %%
import shutil

shutil.rmtree(STORE_DIR, ignore_errors=True)
