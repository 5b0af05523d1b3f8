"""The local broker the Kafka tests and notebook use: starts from the installed package, answers
the Kafka protocol, and leaves no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from jetbench.kafka.errors import KafkaError, KafkaUnreachable
from jetbench.kafka.local_broker import LocalBroker, create_topic

from .conftest import _alive

pytestmark = pytest.mark.kafka


def test_produce_and_read_back_by_assigning_partitions(bootstrap, topic_name):
    topic = topic_name()
    create_topic(bootstrap, topic, partitions=3)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(30):
        producer.produce(topic, value=str(i).encode(), partition=i % 3, timestamp=1000 + i)
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "enable.partition.eof": True,
                         "fetch.wait.max.ms": 10})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
    got, ends = [], set()
    deadline = time.monotonic() + 30
    while len(ends) < 3 and time.monotonic() < deadline:
        for m in consumer.consume(100, 0.5):
            if m.error():
                ends.add(m.partition())
            else:
                got.append((m.partition(), m.timestamp()[1], int(m.value())))
    consumer.close()
    assert sorted(v for _, _, v in got) == list(range(30))
    assert all(p == v % 3 and ts == 1000 + v for p, ts, v in got)


def test_a_second_topic_of_the_same_name_is_refused(bootstrap, topic_name):
    topic = topic_name()
    create_topic(bootstrap, topic)
    with pytest.raises(KafkaError, match=topic):
        create_topic(bootstrap, topic)


def test_stop_leaves_no_process_and_the_port_refuses():
    broker = LocalBroker().start()
    pid, servers = broker.pid, broker.bootstrap_servers
    broker.stop()
    broker.stop()  # idempotent
    assert not _alive(pid)
    with pytest.raises(KafkaUnreachable, match=servers):
        from jetbench.kafka.client import check_reachable
        check_reachable(servers, timeout=2.0)


def test_a_killed_owner_takes_its_broker_with_it(tmp_path):
    """A notebook kernel killed with SIGKILL has no chance to stop its broker: the broker dies with it."""
    code = textwrap.dedent("""
        import sys, time
        from jetbench.kafka.local_broker import LocalBroker
        b = LocalBroker().start()
        print(b.pid, flush=True)
        time.sleep(600)
    """)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=os.getcwd())
    try:
        broker_pid = int(child.stdout.readline())
        assert _alive(broker_pid)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    deadline = time.monotonic() + 10
    while _alive(broker_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(broker_pid)
