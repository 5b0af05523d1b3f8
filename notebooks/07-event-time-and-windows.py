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
# # 07 · Event time and windows
#
# Streams carry their own clock: each event has an **event-time timestamp** (here in
# milliseconds), and events arrive somewhat out of order. A windowed aggregation cannot emit
# the window `[0, 1000)` as soon as it sees an event at 1000 — a straggler at 950 may still
# come. **Watermarks** settle it: a watermark `W` in the stream promises that no event with
# a timestamp below `W` follows. jetbench's watermarks trail the highest timestamp seen by an
# **allowed lag**; an event that arrives after a watermark has passed all of its windows is
# **late**: dropped, and counted.
#
# Everything below uses `sources.test_stream`, a scripted list of `(timestamp, item)` events.

# %% tags=["parameters"]
ALLOWED_LAG = 200      # ms a watermark trails the highest timestamp seen
GENEROUS_LAG = 2_000   # a lag long enough that nothing is late

# %%
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


# %% [markdown]
# ## 1. Watermarks in the stream
#
# To see the watermarks themselves, send the events through the watermark-inserting
# processor into a sink that records everything it gets, watermarks included
# (`try_process_watermark`). Watermarks are throttled to 1-second frames here, so they move
# in whole seconds.

# %%
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

# %%
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

# %% [markdown]
# Each watermark is the highest timestamp so far minus `ALLOWED_LAG`, rounded down to the
# frame: the first event (100) gives `100 - 200 = -100`, hence -1000. `(900, "view")`
# arrives after the watermark 2000 (raised by the event at 2600): it is late for every
# window that could hold it.
#
# ## 2. Tumbling windows
#
# Back-to-back windows of one second, collecting the events of each window. The late event
# is dropped, and the window processor counts it in `late_events_dropped`, which
# `job.metrics()` reports per processor.

# %%
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

# %%
assert tumbled == [
    WindowResult(0, 1000, None, ["click", "view", "click"]),
    WindowResult(1000, 2000, None, ["view", "click"]),
    WindowResult(2000, 3000, None, ["click"]),
    WindowResult(3000, 4000, None, ["view"]),
], tumbled
assert dropped == 1

# %% [markdown]
# ## 3. Sliding windows
#
# Two-second windows that start every second, counted per event type (`group_by` before
# `window`). Every event falls into two windows; the late one is dropped from both.

# %%
p = Pipeline()
(p.read_from(sources.test_stream(EVENTS, allowed_lag=ALLOWED_LAG))
    .group_by(lambda event: event)
    .window(sliding(2000, 1000))
    .aggregate(aggregate.counting())
    .write_to(sinks.pandas()))
slid = run(p).sort_values(["start", "key"]).reset_index(drop=True)
slid


# %%
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

# %% [markdown]
# ## 4. Session windows
#
# A session is a burst of activity: it grows while events for its key keep coming less
# than `gap` ms apart and closes after a quiet gap. With a 500 ms gap and a generous lag (so
# no event is late), the clicks form three sessions and the views three:

# %%
p = Pipeline()
(p.read_from(sources.test_stream(EVENTS, allowed_lag=GENEROUS_LAG))
    .group_by(lambda event: event)
    .window(session(500))
    .aggregate(aggregate.counting())
    .write_to(sinks.pandas()))
sessions = run(p).sort_values(["key", "start"]).reset_index(drop=True)
sessions

# %%
got = [(r.key, r.start, r.end, r.value) for r in sessions.itertuples()]
assert got == [
    ("click", 100, 680, 2), ("click", 1020, 1520, 1), ("click", 2600, 3100, 1),
    ("view", 250, 750, 1), ("view", 900, 1700, 2), ("view", 3100, 3600, 1),
], got


# %% [markdown]
# A session ends at its last event plus the gap: the views at 900 and 1200 form one session
# `[900, 1700)`.
#
# ## 5. Allowed lag: completeness against latency
#
# A longer allowed lag waits longer before closing windows (more latency on a real
# stream), and in exchange accepts more stragglers. The same tumbling count with both lags:

# %%
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

# %%
tight, generous = lags.to_dict("records")
assert (tight["events counted"], tight["late events dropped"]) == (len(EVENTS) - 1, 1)
assert (generous["events counted"], generous["late events dropped"]) == (len(EVENTS), 0)
assert generous["[0, 1000)"] == 4  # the straggler at 900 made it into its window
