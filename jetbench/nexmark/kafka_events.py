"""Nexmark over Kafka: the generator's events written to a topic as JSON (Beam's format, one
record an event, the record's timestamp the event's time) and read back by the queries
(``jetbench nexmark --to-kafka TOPIC`` and ``--from-kafka TOPIC``); needs the ``kafka`` extra.

Each partition holds its events in time order (they are written in time order; a record without
a key goes to a partition of librdkafka's choosing, in the order written), so the Kafka source's
per-partition watermarks drop nothing as late, and a query gives the results it gives over the
same events in memory.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from ..core.errors import JetbenchError
from .config import NexmarkConfig
from .json_events import from_json, to_json
from .model import Event
from .suite import QueryRun, check_query


def write_events_to_kafka(pairs: Iterable[tuple[int, Event]], topic: str, bootstrap_servers: str,
                          partitions: int = 3) -> int:
    """Write ``(timestamp, event)`` pairs to ``topic`` (made with ``partitions`` partitions when the
    broker lacks it) as JSON records timestamped with the event's time; returns how many."""
    from confluent_kafka import Producer

    from ..kafka.client import check_reachable, client_config
    from ..kafka.local_broker import create_topic

    check_reachable(bootstrap_servers, who="nexmark --to-kafka")
    create_topic(bootstrap_servers, topic, partitions, exist_ok=True)
    producer = Producer(client_config(bootstrap_servers, None, **{"linger.ms": 20}))
    n = 0
    for ts, event in pairs:
        while True:
            try:
                producer.produce(topic, value=to_json(event).encode(), timestamp=ts)
                break
            except BufferError:  # the producer's queue is full: let it send
                producer.poll(0.05)
        n += 1
    left = producer.flush(60)
    if left:
        raise JetbenchError(f"nexmark --to-kafka: {left:,} of {n:,} events were not acknowledged by {bootstrap_servers} "
                            f"within 60 s (topic {topic!r})")
    return n


def _event(_key: Any, value: bytes | None) -> Event:
    return from_json((value or b"").decode())


def kafka_events_source(topic: str, bootstrap_servers: str) -> Any:
    """The events of ``topic`` as a bounded, timestamped source (read to the partitions' ends)."""
    from .. import sources

    return sources.kafka(topic, bootstrap_servers, projection=_event, bounded=True)


def run_query_from_kafka(query: int, topic: str, bootstrap_servers: str,
                         config: NexmarkConfig | None = None) -> QueryRun:
    """Query ``query`` over the events of ``topic``, on the local executor; timed from submission
    to the last result (reading and parsing the records included)."""
    from ..core import ExecutionService
    from .digest import digest
    from .queries import pipeline

    check_query(query)
    p = pipeline(query, kafka_events_source(topic, bootstrap_servers), config)
    started = time.perf_counter()
    job = ExecutionService().submit(p.to_dag(), name=f"nexmark-q{query}-{topic}")
    results = job.join()
    seconds = time.perf_counter() - started
    events = sum(t.processor_metrics.get("records_read", 0) for t in job.metrics().tasklets)
    return QueryRun(query, events, None, "local", len(results), digest(results), seconds,
                    events / max(seconds, 1e-9), None)


__all__ = ["kafka_events_source", "run_query_from_kafka", "write_events_to_kafka"]
