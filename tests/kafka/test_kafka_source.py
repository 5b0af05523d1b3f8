"""sources.kafka against a real broker: partitions spread over instances, record timestamps as
event time, per-partition watermarks with an idle partition, offsets in snapshots, bad input."""

from __future__ import annotations

import time

import pytest

from jetbench import ExecutionService, Pipeline, aggregate, run, sinks, sources, window
from jetbench.core.errors import JetbenchError
from jetbench.kafka.errors import KafkaDeserializationError, KafkaUnknownTopic, KafkaUnreachable
from jetbench.kafka.local_broker import free_port

from .helpers import produce

pytestmark = pytest.mark.kafka


def records(n: int, partitions: int = 3):
    return [(i % partitions, 1_000 + i, f"k{i % 5}", i) for i in range(n)]


@pytest.mark.parametrize("parallelism", [1, 2, 4])
def test_reads_every_record_once_with_its_timestamp(bootstrap, topic_name, parallelism):
    topic = topic_name()
    produce(bootstrap, topic, records(600), partitions=3)
    p = Pipeline()
    (p.read_from(sources.kafka(topic, bootstrap, value_deserializer=lambda b: int(b), key_deserializer=bytes.decode,
                               bounded=True))
     .set_local_parallelism(parallelism)
     .map(lambda kv: (kv[0], kv[1] * 2))
     .write_to(sinks.collect()))
    got = run(p, timeout=120, progress=False)
    assert sorted(got) == sorted((f"k{i % 5}", 2 * i) for i in range(600))


def test_windows_on_record_time_with_an_idle_partition(bootstrap, topic_name):
    """Partition 2 gets no record at all: it goes idle after idle_timeout_ms and then does not hold
    back the watermark, so the windows of the two live partitions close while the job still runs
    (an unbounded source: only watermarks can close them). Each partition's records are in time
    order, the two partitions interleaved."""
    topic, seen, job = windowed_count_of_two_partitions_of_three(bootstrap, topic_name(), idle_timeout_ms=1000)
    try:
        deadline = time.monotonic() + 60
        while len(seen) < 9 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # nothing more comes
        got = list(seen)
    finally:
        job.cancel()
    # partition 0's top timestamp is 10800, partition 1's 10900: the watermark reaches 10000 (both
    # floored to the 1000 ms frame) once partition 2 is idle; the window [10000, 11000) stays open
    assert [(r.start, r.end, r.value) for r in got] == [(s, s + 1000, 10) for s in range(1000, 10000, 1000)]


def test_without_the_idle_timeout_an_empty_partition_holds_the_watermark(bootstrap, topic_name):
    topic, seen, job = windowed_count_of_two_partitions_of_three(bootstrap, topic_name(), idle_timeout_ms=None)
    try:
        deadline = time.monotonic() + 60
        while records_read(job) < 100 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert records_read(job) == 100
        time.sleep(1.5)  # longer than the idle timeout of the test above
        got = list(seen)
        source = [t.processor_metrics for t in job.metrics().tasklets if "records_read" in t.processor_metrics][0]
    finally:
        job.cancel()
    assert got == []
    # the lag per partition: read to the end; partition 0's highest timestamp 10800, floored
    assert source["lag"] == 0 and source[f"offset {topic}[0]"] == source[f"high {topic}[0]"] == 50, source
    assert source[f"high {topic}[2]"] == 0 and source[f"watermark {topic}[0]"] == 10_000, source


def windowed_count_of_two_partitions_of_three(bootstrap, topic, idle_timeout_ms):
    """100 records in time order on partitions 0 and 1 (interleaved), none on partition 2; a job
    counting them in tumbling windows of 1000 ms into a list: (topic, the list, the job)."""
    produce(bootstrap, topic, [(i % 2, 1000 + i * 100, None, i) for i in range(100)], partitions=3)
    seen: list = []
    p = Pipeline()
    (p.read_from(sources.kafka(topic, bootstrap, value_deserializer=int, idle_timeout_ms=idle_timeout_ms))
     .set_local_parallelism(1)
     .window(window.tumbling(1000)).aggregate(aggregate.counting())
     .write_to(sinks.callback(seen.append)))
    return topic, seen, ExecutionService().submit(p.to_dag())


def records_read(job) -> int:
    return sum(t.processor_metrics.get("records_read", 0) for t in job.metrics().tasklets)


def test_unreachable_broker_is_a_clear_error_after_a_bounded_wait(topic_name):
    p = Pipeline()
    p.read_from(sources.kafka("t", f"127.0.0.1:{free_port()}", bounded=True)).write_to(sinks.collect())
    with pytest.raises(JetbenchError) as info:
        run(p, timeout=60, progress=False)
    assert isinstance(info.value, KafkaUnreachable) or isinstance(info.value.__cause__, KafkaUnreachable), info.value
    assert "no Kafka broker answered" in str(info.value)


def test_unknown_topic(bootstrap, topic_name):
    p = Pipeline()
    p.read_from(sources.kafka("no-such-topic-here", bootstrap, bounded=True)).write_to(sinks.collect())
    with pytest.raises(JetbenchError, match="no-such-topic-here") as info:
        run(p, timeout=60, progress=False)
    assert isinstance(info.value, KafkaUnknownTopic) or isinstance(info.value.__cause__, KafkaUnknownTopic)


def test_a_record_that_fails_to_deserialize_names_topic_partition_offset(bootstrap, topic_name):
    topic = topic_name()
    produce(bootstrap, topic, [(0, 1, None, "1"), (0, 2, None, "2"), (0, 3, None, "three")], partitions=1)
    p = Pipeline()
    p.read_from(sources.kafka(topic, bootstrap, value_deserializer=int, bounded=True)).write_to(sinks.collect())
    with pytest.raises(JetbenchError) as info:
        run(p, timeout=60, progress=False)
    text = str(info.value)
    assert f"topic {topic!r} partition 0 offset 2" in text, text
    cause = info.value if isinstance(info.value, KafkaDeserializationError) else info.value.__cause__
    assert isinstance(cause, KafkaDeserializationError) and (cause.partition, cause.offset) == (0, 2)


def test_a_job_without_a_snapshot_starts_at_the_groups_committed_offsets(bootstrap, topic_name):
    from confluent_kafka import Consumer, TopicPartition

    topic, group = topic_name(), topic_name("group")
    produce(bootstrap, topic, records(60), partitions=3)
    committer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    committer.commit(offsets=[TopicPartition(topic, p, 15) for p in range(2)], asynchronous=False)
    committer.close()
    p = Pipeline()
    p.read_from(sources.kafka(topic, bootstrap, group_id=group, value_deserializer=int, bounded=True)) \
        .map(lambda kv: kv[1]).write_to(sinks.collect())
    got = sorted(run(p, timeout=60, progress=False))
    # partitions 0 and 1 from offset 15 (record 3 * 15 + p on), partition 2 (no committed offset) from the start
    assert got == sorted([i for i in range(60) if i % 3 == 2 or i // 3 >= 15])


def test_start_at_a_timestamp(bootstrap, topic_name):
    topic = topic_name()
    produce(bootstrap, topic, records(60), partitions=3)  # record i at 1000 + i ms
    p = Pipeline()
    p.read_from(sources.kafka(topic, bootstrap, value_deserializer=int, bounded=True, start=1_040)) \
        .map(lambda kv: kv[1]).write_to(sinks.collect())
    assert sorted(run(p, timeout=60, progress=False)) == list(range(40, 60))
