"""What the Kafka tests share: producing a topic's records and reading a topic back."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition

from jetbench.kafka.local_broker import create_topic


def produce(bootstrap: str, topic: str, records, partitions: int | None = None) -> None:
    """Create ``topic`` (when ``partitions`` is given) and write ``records``: ``(partition, ts, key,
    value)`` tuples, keys and values as str (None stays None)."""
    if partitions is not None:
        create_topic(bootstrap, topic, partitions)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for partition, ts, key, value in records:
        producer.produce(topic, value=None if value is None else str(value).encode(),
                         key=None if key is None else str(key).encode(), partition=partition, timestamp=ts)
    assert producer.flush(30) == 0


def read_topic(bootstrap: str, topic: str, partitions: int, isolation: str = "read_committed",
               timeout: float = 30) -> list[tuple[int, int, str | None, str | None]]:
    """Every record of ``topic`` as ``(partition, offset, key, value)``, read to each partition's end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{topic}", "enable.auto.commit": False,
                         "enable.partition.eof": True, "fetch.wait.max.ms": 10, "isolation.level": isolation})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out, ended = [], set()
    deadline = time.monotonic() + timeout
    try:
        while len(ended) < partitions:
            assert time.monotonic() < deadline, f"reading {topic}: only partitions {sorted(ended)} ended"
            for m in consumer.consume(500, 0.2):
                if m.error():
                    ended.add(m.partition())
                    continue
                key, value = m.key(), m.value()
                out.append((m.partition(), m.offset(), key and key.decode(), value and value.decode()))
    finally:
        consumer.close()
    return out
