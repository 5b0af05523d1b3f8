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
# # 10 · Beam pipelines on jetbench
#
# Hazelcast Jet had a runner for **Apache Beam**: a Beam pipeline, written once against Beam's
# model, became a Jet DAG. `jetbench.beam.JetbenchRunner` does the same for Beam's **Python**
# SDK (`pip install jetbench[beam]`, which pins Beam 2.77.0). This notebook runs a Beam
# pipeline on it, draws the DAG the pipeline became, watches it on the dashboard, reads Beam's
# metrics back, checks the results against Beam's own runner, shows what a failing DoFn
# reports, and runs one of Beam's own Nexmark queries.

# %% tags=["parameters"]
LINES = 20_000       # lines of the word count's corpus
THREADS = 2          # cooperative worker threads
NEXMARK_EVENTS = 10_000

# %%
import random
import tempfile
from collections import Counter
from pathlib import Path

import apache_beam as beam
import pandas as pd
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that, equal_to

from jetbench import JobError
from jetbench.beam import BeamStageError, JetbenchRunner

# %% [markdown]
# ## A Beam pipeline, run by jetbench
#
# A word count in Beam's own API. Only the runner is jetbench's; `assert_that` (Beam's) fails
# the pipeline if a single count is wrong. The counter and the distribution are Beam metrics.

# %%
rng = random.Random(7)
vocabulary = [f"w{i}" for i in range(2000)]
corpus = [" ".join(rng.choice(vocabulary) for _ in range(8)) for _ in range(LINES)]
expected = Counter(word for line in corpus for word in line.split())


class Words(beam.DoFn):
    """Splits a line, counting lines and measuring their lengths in Beam metrics."""

    def __init__(self):
        self.lines = Metrics.counter("wordcount", "lines")
        self.sizes = Metrics.distribution("wordcount", "words per line")

    def process(self, line):
        words = line.split()
        self.lines.inc()
        self.sizes.update(len(words))
        yield from words


def word_count(runner):
    p = beam.Pipeline(runner=runner)
    counts = p | beam.Create(corpus) | "Split" >> beam.ParDo(Words()) | "Count" >> beam.combiners.Count.PerElement()
    assert_that(counts, equal_to(list(expected.items())))
    return p


# %% [markdown]
# ## The DAG a pipeline becomes
#
# Beam's optimizer fuses the pipeline into stages; `JetbenchRunner.explain` shows the jetbench
# DAG they become, as Jet's runner did it: each **Impulse** a source, each fused **stage** a
# vertex running its bundles in an in-process Beam SDK harness (non-cooperative: a DoFn may
# block, so it gets a thread of its own), each **GroupByKey** a vertex behind an edge
# partitioned on the encoded key bytes, each **Flatten** a vertex with one input per
# PCollection. The count is lifted by Beam into a two-stage aggregation: a precombine in the
# stage before the partitioned edge, the merge after it.

# %%
plan = JetbenchRunner.explain(word_count(JetbenchRunner()))
print(plan)

# %%
plan

# %% [markdown]
# ## Watched live
#
# `run()` returns a Beam `PipelineResult` at once; its `job` is the jetbench job, so the
# dashboard shows the Beam stages as they run.

# %%
result = word_count(JetbenchRunner(cooperative_threads=THREADS)).run()
dashboard = result.job.dashboard(interval_s=0.2)
dashboard

# %%
state = result.wait_until_finish()
dashboard.join(5)
assert state == "DONE", state
print(state, result.job)

# %% [markdown]
# ## Beam's metrics, and jetbench's
#
# `result.metrics().query()` answers as every Beam runner does, from the MonitoringInfos each
# bundle reported (merged over the bundles of every instance). `result.job.metrics()` has
# jetbench's own counters per vertex instance.

# %%
metrics = result.metrics().query(MetricsFilter().with_namespace("wordcount"))
(lines,) = metrics["counters"]
(sizes,) = metrics["distributions"]
assert lines.committed == LINES and sizes.committed.sum == sum(expected.values())
pd.DataFrame([
    {"metric": lines.key.metric.name, "step": lines.key.step, "value": lines.committed},
    {"metric": sizes.key.metric.name, "step": sizes.key.step, "value": sizes.committed.mean},
])

# %%
per_vertex = pd.DataFrame([{"vertex": t.vertex.split(" ")[0], "instance": t.index, "cooperative": t.cooperative,
                            "chunks in": t.received_count, "chunks out": t.emitted_count,
                            **t.processor_metrics} for t in result.job.metrics().tasklets])
per_vertex

# %% [markdown]
# Items on jetbench's edges are chunks of encoded Beam elements (what a bundle reads and
# writes), so the counts above are chunks, not words.
#
# ## The same results as Beam's own runner
#
# Beam's FnApiRunner on the same pipeline: both runs pass the same `assert_that`.

# %%
with word_count(FnApiRunner()):
    pass
print("FnApiRunner and JetbenchRunner: both counts equal the plain-Python Counter")

# %% [markdown]
# ## When a DoFn fails
#
# The job fails with a `JobError` naming the jetbench vertex; its cause, a `BeamStageError`,
# names the Beam step (not the others fused with it) and carries Beam's report.

# %%
def explode(word):
    raise ValueError(f"cannot take {word!r}")


p = beam.Pipeline(runner=JetbenchRunner())
_ = p | beam.Create(["a"]) | "Upper" >> beam.Map(str.upper) | "Explode" >> beam.Map(explode)
try:
    p.run().wait_until_finish()
except JobError as error:
    cause = error.__cause__
    # in a notebook Beam prefixes each step's label with its cell's number, as in "[12]: Explode"
    assert isinstance(cause, BeamStageError) and cause.step.endswith("Explode"), cause.step
    print("step:", cause.step)
    print("vertex:", cause.vertex)
    print(str(error).splitlines()[0][:200])
else:
    raise AssertionError("the failing DoFn did not fail the pipeline")

# %% [markdown]
# ## A failure the job recovers from: a processing guarantee
#
# With `processing_guarantee="exactly_once"` the job takes jetbench's snapshots (every
# `snapshot_interval_ms`): the grouping saves its groups, each stage its state between two
# bundles, the impulse its progress. Here a DoFn fails the first time it sees one word (a marker
# file remembers that it did): the job restarts from its last snapshot and the counts equal the
# failure-free run's. What a DoFn does outside Beam's model (writing a file, calling a service)
# is not undone: a bundle run after the last snapshot runs again.

# %%
marker = Path(tempfile.mkdtemp()) / "failed-once"


class FailOnce(beam.DoFn):
    def process(self, kv):
        if kv[0] == "jet" and not marker.exists():
            marker.touch()
            raise RuntimeError("a failure in the middle of the run")
        yield kv


recovering = JetbenchRunner(cooperative_threads=THREADS, processing_guarantee="exactly_once",
                            snapshot_interval_ms=50, max_restarts=2,
                            snapshot_store=str(Path(tempfile.mkdtemp()) / "snapshots.sqlite"))
words = ["beam", "jet", "tasklet", "beam", "barrier"] * 2000
p = beam.Pipeline(runner=recovering)
counts = (p | beam.Create(words) | beam.Map(lambda w: (w, 1)) | beam.GroupByKey() | beam.ParDo(FailOnce())
          | beam.MapTuple(lambda w, ones: (w, sum(ones))))
assert_that(counts, equal_to(list(Counter(words).items())))
result = p.run()
assert result.wait_until_finish() == "DONE" and result.job.restarts == 1
print(f"restarted {result.job.restarts} time(s), from snapshot {result.job.restored_from} "
      f"(0: from the start), {len(result.job.snapshot_history)} snapshots taken; the counts are exact")

# %% [markdown]
# ## One of Beam's own Nexmark queries
#
# Beam ships its Python Nexmark queries. Q9, the winning bid of each auction, joins auctions
# and bids in a **custom merging window**, which the grouping vertex merges per key with
# Beam's trigger driver. Here it runs over jetbench's port of Beam's event generator written as
# Beam's JSON lines, and is checked against jetbench's plain-Python reference
# (`jetbench nexmark --query 9 --runner beam-jetbench` does the same from a shell). Not against
# Beam's direct runner: its merging of these windows keeps only some of an auction's bids, so
# most of the winners it names are not the highest valid bid (an example is in the runner's
# capability page, `jetbench/beam/capability.md`, shown at the end of this notebook).

# %%
from apache_beam.testing.benchmarks.nexmark import nexmark_util
from apache_beam.testing.benchmarks.nexmark.queries import query9
from apache_beam.transforms import window

from jetbench.nexmark import NexmarkConfig, events, reference
from jetbench.nexmark.beam_queries import LAUNCHER_QUERY_ARGS
from jetbench.nexmark.json_events import write_events

config = NexmarkConfig(num_events=NEXMARK_EVENTS, num_event_generators=1)
folder = Path(tempfile.mkdtemp())
write_events(events(config), folder / "events.json")
nexmark_util.setup_coder()
with beam.Pipeline(runner=JetbenchRunner(cooperative_threads=THREADS)) as p:
    bids = (p | beam.io.ReadFromText(str(folder / "events.json")) | beam.ParDo(nexmark_util.ParseJsonEventFn())
            | beam.Map(lambda e: window.TimestampedValue(e, e.date_time)))
    _ = (query9.load(bids, LAUNCHER_QUERY_ARGS, None)
         | beam.Map(lambda ab: f"{ab.auction.id},{ab.bid.bidder},{ab.bid.price}")
         | beam.io.WriteToText(str(folder / "q9")))
ours = sorted(line for f in folder.glob("q9*") for line in f.read_text().splitlines())
theirs = sorted(f"{w.auction.id},{w.bid.bidder},{w.bid.price}" for w in reference.q9(events(config), config))
assert ours == theirs
print(f"Q9: {len(ours)} winning bids, equal to the reference")

# %% [markdown]
# ## Where it stands
#
# The runner is batch: groupings, windows, triggers and timers fire when their input is
# exhausted; with a processing guarantee it snapshots and restarts (at-least-once or
# exactly-once; DoFn side effects excepted). Beam's `FnApiRunnerTest` passes 70 of its 75 tests on
# it (Beam skips the other five for every runner), Beam's ValidatesRunner tests 36, and the
# runner's capability page, `capability.md`, which ships in the package `jetbench.beam`, answers
# Beam's capability matrix row by row, beside Jet's published column.
# Its tables, read from that page (each row names the tests that back it there):

# %%
from importlib.resources import files

from IPython.display import Markdown, display


def capability_tables(page: str) -> str:
    """The capability matrix's sections of the markdown ``page``: each ``##`` heading, then its table."""
    out: list[str] = []
    heading = ""
    for line in page.splitlines():
        if line.startswith("## "):
            heading = line
        elif line.startswith("|"):
            if heading:
                out += ["", "#" + heading, ""]
                heading = ""
            out.append(line)
    return "\n".join(out)


tables = capability_tables(files("jetbench.beam").joinpath("capability.md").read_text())
assert "| ParDo |" in tables and "| GroupByKey |" in tables
display(Markdown(tables))
