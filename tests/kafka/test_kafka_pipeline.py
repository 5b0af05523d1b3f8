"""A pipeline from a 3-partition topic through a map into another topic gives what the same
pipeline gives in memory, with each processing guarantee."""

from __future__ import annotations

from collections import Counter

import pytest

from jetbench import Pipeline, run, sinks, sources
from jetbench.core.job_config import JobConfig
from jetbench.kafka.errors import KafkaProduceError
from jetbench.kafka.local_broker import create_topic

from .helpers import produce, read_topic

pytestmark = pytest.mark.kafka

N = 3000


def words(i: int) -> str:
    return f"w{(i * 7919) % 101}"


def transform(kv):
    key, value = kv
    return f"{key}:{value.upper()}"


@pytest.mark.parametrize("guarantee", ["none", "at_least_once", "exactly_once"])
def test_topic_to_map_to_topic_equals_the_in_memory_run(bootstrap, topic_name, tmp_path, guarantee):
    source, target = topic_name("in"), topic_name("out")
    data = [(i % 3, 10_000 + i, f"k{i % 11}", words(i)) for i in range(N)]
    produce(bootstrap, source, data, partitions=3)
    create_topic(bootstrap, target, 2)

    memory = Pipeline()
    memory.read_from(sources.items([(f"k{i % 11}", words(i)) for i in range(N)])).map(transform) \
        .write_to(sinks.collect())
    expected = Counter(run(memory, progress=False))

    p = Pipeline()
    (p.read_from(sources.kafka(source, bootstrap, key_deserializer=bytes.decode, value_deserializer=bytes.decode,
                               bounded=True))
     .set_local_parallelism(2)
     .map(transform)
     .write_to(sinks.kafka(target, bootstrap, key_fn=lambda s: s.split(":")[0], value_fn=lambda s: s)))
    config = JobConfig(guarantee, snapshot_interval_ms=50, snapshot_store=tmp_path / "s.sqlite") \
        if guarantee != "none" else None
    run(p, timeout=120, progress=False, config=config)
    got = read_topic(bootstrap, target, 2)
    assert Counter(value for _, _, _, value in got) == expected
    assert all(key == value.split(":")[0] for _, _, key, value in got)


def test_a_record_too_large_for_the_producer_is_a_clear_error(bootstrap, topic_name):
    target = topic_name("out")
    create_topic(bootstrap, target, 1)
    p = Pipeline()
    p.read_from(sources.items(["small", "x" * 2_000_000])).write_to(sinks.kafka(target, bootstrap))
    with pytest.raises(Exception) as info:
        run(p, timeout=60, progress=False)
    err = info.value if isinstance(info.value, KafkaProduceError) else info.value.__cause__
    assert isinstance(err, KafkaProduceError), info.value
    assert target in str(info.value) and "2000000 bytes" in str(info.value)
