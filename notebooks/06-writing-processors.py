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
# # 06 · Writing processors
#
# Pipelines are convenient, but everything runs as **processors** (Jet's reference manual,
# "Processor"). A processor
# receives batches in an **inbox** and emits into an **outbox** whose buckets are bounded and
# *refuse* items when full. Because a cooperative processor must never block, it has to
# handle a refusal by saving its place and returning; the engine calls it again once the
# outbox has drained.
#
# The lifecycle: `init(outbox, context)` once; `process(ordinal, inbox)` while input
# arrives; `try_process()` whenever the inbox is empty; `complete_edge(ordinal)` when one
# input is exhausted; `complete()` at the end (sources emit from here); `close()` always last.
# The boolean methods return `True` when done and are called again otherwise.
#
# `jetbench.testing.verify_processor` checks a processor against that contract the way
# Jet's `TestSupport` does: with an outbox that holds **one** item, so nearly every second
# offer is refused.

# %% tags=["parameters"]
ENGINE_LINES = 2_000   # lines for the runs on the real engine

# %%
import contextlib

from jetbench import DAG, Edge, ExecutionService, Inbox, JobCancelled, MockClock, Outbox, Processor
from jetbench.datasets import corpus
from jetbench.processors import collect_sink, items_source
from jetbench.testing import verify_processor

# %% [markdown]
# ## 1. Inbox and outbox
#
# Remove an item from the inbox only once it is fully handled; `offer` returns `False`
# (accepting nothing) when the bucket is full.

# %%
inbox = Inbox(["a", "b", "c"])
print("peek:", inbox.peek(), "| left:", len(inbox))      # look at the head without taking it
print("remove:", inbox.remove(), "| left:", len(inbox))  # take it, once handled

outbox = Outbox(ordinal_count=1, capacity=2)
offers = [outbox.offer(x) for x in "xyz"]
print("offers:", offers, "|", outbox)
assert offers == [True, True, False]


# %% [markdown]
# ## 2. A processor that handles refusals
#
# A flat-map: each line becomes its words. One line can yield more words than the outbox
# has room for, so the processor remembers which words of the head line are still to go,
# returns when refused, and removes the line from the inbox only after its last word went
# out.

# %%
class SplitWordsP(Processor):
    """One line in, its words out; keeps its place when the outbox refuses."""

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


# %% [markdown]
# `verify_processor` ran it twice (inbox limit 1 and 1024), each time with a one-item
# outbox, re-calling while full, and compared the output. It passes.
#
# ## 3. A processor that drops items
#
# The tempting version ignores what `offer` returns. With room to spare it even looks right;
# as soon as the outbox fills, words silently vanish.

# %%
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


# %% [markdown]
# The harness names the processor, the mode, and the item offered after a refusal. On the
# real engine the same bug loses data whenever a batch of lines yields more words than the
# outbox's capacity (1024 by default). On one worker thread that is certain, not a matter of
# timing: the source fills the queue with a whole batch of lines before the split runs.

# %%
def split_on_engine(supplier, lines):
    dag = DAG()
    source = dag.new_vertex("lines", items_source(lines), 1)
    split = dag.new_vertex("split", supplier, 1)
    sink = dag.new_vertex("sink", collect_sink(), 1)
    dag.edge(Edge.between(source, split)).edge(Edge.between(split, sink))
    return ExecutionService(cooperative_threads=1).run(dag, timeout=60)

text = corpus(ENGINE_LINES, vocabulary_size=300, seed=6)
words = [w for line in text for w in line.split()]
good, lossy = split_on_engine(SplitWordsP, text), split_on_engine(LossySplitWordsP, text)
print(f"{len(words)} words in; SplitWordsP emitted {len(good)}, LossySplitWordsP {len(lossy)}")
assert good == words
assert len(lossy) < len(words)


# %% [markdown]
# ## 4. `try_process` and `complete`
#
# A batcher gathers items into lists of at most `size`. `process` moves items from the inbox
# into the current batch (emitting it when full). When the inbox runs dry the engine calls
# `try_process`, which emits the partial batch — so batches follow how the input arrived.
# `complete` emits whatever is left at the end. Both return `False` while the outbox refuses,
# and are called again.
#
# Note `self._batch = []` after a successful offer: the outbox now owns that list.

# %%
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


# %% [markdown]
# A source has no inbox at all: it emits from `complete()`, returning `False` until it has
# emitted everything.

# %%
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


# %% [markdown]
# ## 5. The lifecycle on the engine
#
# A processor that logs its callbacks, between a small source and a sink:

# %%
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
print("\n".join(TracingP.trace))

# %%
trace = TracingP.trace
assert trace[0] == "init(traced#0)" and trace[-1] == "close()", trace
assert "process(0, 3 items)" in trace
assert trace.index("complete_edge(0)") < trace.index("complete()") < trace.index("close()"), trace

# %% [markdown]
# ## 6. Round by round with `step()`
#
# On the engine a worker calls its tasklets round after round, thousands of times a second.
# **Step mode** runs one round at a time: `ExecutionService(step=True, clock=MockClock())`
# starts nothing until `job.step()`, which lets every worker run one round and returns what
# each tasklet did, while the mock clock stands still (it moves only when a worker parks).
#
# `SplitWordsP` from section 2 between a source of lines and a sink, its outbox holding 2 items
# and the queue to the sink only 1: watch it fill its outbox, find the queue full (the report's
# "outbox full": what it emitted waits in its outbox), keep its place in the line and go on as
# the sink drains the queue, a word a round.

# %%
dag = DAG()
lines = dag.new_vertex("lines", items_source(["the cat sat on the mat", "the end"]), 1)
split = dag.new_vertex("split", SplitWordsP, 1)
words = dag.new_vertex("words", collect_sink(), 1)
dag.edge(Edge.between(lines, split).queue_size(2)).edge(Edge.between(split, words).queue_size(1))
walk = ExecutionService(step=True, clock=MockClock(), outbox_capacity=2).submit(dag, name="walkthrough")
walk.step()  # round 1: every tasklet's first call initializes its processor

# %%
walk.step()  # round 2: the lines go out; split takes them in and emits the first words

# %%
steps = [walk.step() for _ in range(4)]
steps[0]

# %% [markdown]
# A step also draws as a timeline, in call order (on the mock clock a call takes no time, so
# each is drawn 10 µs wide; the parks as long as they slept). Hover a bar for what it did:

# %%
steps[0].timeline()

# %%
split_rows = [s.row("split#0") for s in steps]
# refused: split could not hand all its words on (the queue to the sink was full) ...
assert any(row.outbox_full for row in split_rows), split_rows
# ... and lost none of them: the rest of the job, run freely, delivers every word in order
assert walk.join(timeout=30) == ["the", "cat", "sat", "on", "the", "mat", "the", "end"]

# %% [markdown]
# The same walk shows Jet's backoff: a source with nothing to do yet, stepped round after round.
# Each round without progress parks for twice as long as the one before, from the idle floor
# (`min_idle_us`) to `max_idle_us`; on the mock clock the time moves by the parks only.

# %%
class NothingYetP(Processor):
    def complete(self):
        return False  # no progress, never done

dag = DAG()
dag.new_vertex("waiting", NothingYetP, 1)
idle = ExecutionService(step=True, clock=MockClock(), min_idle_us=25, max_idle_us=500).submit(dag, name="idle")
idle.step()  # init
parks = [idle.step().parks[0] for _ in range(7)]
[(p.idle_round, p.asked_ns // 1000) for p in parks]

# %%
assert [p.asked_ns // 1000 for p in parks] == [25, 50, 100, 200, 400, 500, 500]
idle.cancel()
with contextlib.suppress(JobCancelled):  # the cancelled job's threads end here
    idle.join(timeout=30)

# %% [markdown]
# Next: [07 · event time and windows](07-event-time-and-windows.ipynb).
