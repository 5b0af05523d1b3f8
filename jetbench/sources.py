"""Pipeline sources: functions returning `Source` descriptors for `Pipeline.read_from`.

>>> from jetbench import sources
>>> sources.items([1, 2, 3])
Source('items')
>>> sources.generator(1000, count=10).streaming, sources.generator(1000).streaming
(False, True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .pipeline.connectors import Source
from .processors.event_stream_source import event_stream_source
from .processors.files_source import files_source
from .processors.generator_source import generator_source
from .processors.items_source import items_source

__all__ = ["files", "generator", "items", "kafka", "test_stream"]


def items(iterable: Iterable[Any], name: str = "items") -> Source:
    """The items of ``iterable`` (a sequence is split over the instances by stride)."""
    return Source(name, items_source(iterable))


def files(glob_pattern: str, encoding: str = "utf-8") -> Source:
    """The lines (without newline) of the files matching ``glob_pattern``, sorted by path.

    File i is read by instance ``i % total_parallelism``, on a dedicated thread (blocking
    I/O). Raises `JetbenchError` here if no file matches.
    """
    return Source(f"files({glob_pattern})", files_source(glob_pattern, encoding))


def generator(
    rate_per_s: float,
    item_fn: Callable[[int], Any] | None = None,
    timestamped: bool = True,
    count: int | None = None,
) -> Source:
    """``item_fn(seq)`` (default ``seq``) at ``rate_per_s`` items per second over all instances.

    Timestamped by default: items are ``(time.time_ns() / 1e6, item)``. Unbounded unless
    ``count`` (the total over all instances) is given.
    """
    supplier = generator_source(rate_per_s, item_fn, timestamped, count)
    return Source("generator", supplier, timestamped=timestamped, streaming=count is None)


def test_stream(events: Iterable[tuple[float, Any]], allowed_lag: float = 0) -> Source:
    """Scripted ``(timestamp, item)`` events, emitted in the given order by a single instance.

    Watermarks trail the highest timestamp seen by ``allowed_lag`` ms: an event more than that
    behind may be late (dropped by windows).
    """
    return Source("test_stream", event_stream_source(events), local_parallelism=1, timestamped=True,
                  streaming=False, allowed_lag=allowed_lag)


test_stream.__dict__["__test__"] = False  # not a pytest test (in __dict__: mypy knows no such function attribute)


def kafka(
    topics: str | Iterable[str],
    bootstrap_servers: str,
    *,
    group_id: str | None = None,
    properties: Mapping[str, Any] | None = None,
    key_deserializer: Callable[[bytes | None], Any] | None = None,
    value_deserializer: Callable[[bytes | None], Any] | None = None,
    start: str | int = "earliest",
    allowed_lag: float = 0,
    idle_timeout_ms: float | None = 60_000,
    bounded: bool = False,
    connect_timeout: float = 10.0,
    projection: Callable[[Any, Any], Any] | None = None,
) -> Source:
    """The records of Kafka ``topics`` as ``(key, value)`` items (or ``projection(key, value)``,
    Jet's projection function: ``projection=lambda key, value: value`` for the values alone),
    timestamped with each record's timestamp (event time, ms); needs the ``kafka`` extra
    (confluent-kafka).

    As Jet's Kafka source: the topics' partitions are spread over the source's instances (each
    ``assign()``\\s its own; no group rebalancing), watermarks are kept per partition and coalesced
    (``allowed_lag`` ms behind each partition's highest timestamp; a partition without records for
    ``idle_timeout_ms`` does not hold them back), and the offsets are saved in the job's snapshots
    and restored from them. ``group_id``: a job without a snapshot starts from the group's committed
    offsets where it has them, and each stored snapshot's offsets are committed to it. ``start``:
    where a partition with no such offset starts: ``"earliest"``, ``"latest"`` or a timestamp (ms).
    ``properties``: librdkafka settings (they win over jetbench's). ``bounded``: stop at the end of
    every partition (as it is when reached) instead of reading forever.

    Bad input: no broker answering within ``connect_timeout`` seconds is a
    `jetbench.kafka.KafkaUnreachable` (librdkafka would retry forever), a topic the
    broker lacks a `KafkaUnknownTopic`, a record the deserializer refuses a
    `KafkaDeserializationError` naming topic, partition and offset.
    """
    from .kafka.errors import KafkaError, require_client
    from .kafka.source import KafkaSourceP, KafkaSourceSupplier

    require_client()
    names = [topics] if isinstance(topics, str) else list(topics)
    if not names or not all(isinstance(t, str) and t for t in names):
        raise KafkaError(f"sources.kafka: topics must be a topic name or a list of them, got {topics!r}")
    if not (start in ("earliest", "latest") or (isinstance(start, int) and not isinstance(start, bool))):
        raise KafkaError(f"sources.kafka: start must be 'earliest', 'latest' or a timestamp in ms, got {start!r}")
    supplier = KafkaSourceSupplier(
        KafkaSourceP, names, bootstrap_servers, group_id=group_id, properties=dict(properties or {}),
        key_deserializer=key_deserializer, value_deserializer=value_deserializer, start=start,
        bounded=bounded, allowed_lag=allowed_lag, idle_timeout_ms=idle_timeout_ms,
        connect_timeout=connect_timeout, projection=projection, label=f"kafka({', '.join(names)})")
    return Source(f"kafka({', '.join(names)})", supplier, timestamped=True, streaming=not bounded,
                  allowed_lag=allowed_lag, own_watermarks=True)
