"""What the Kafka source and sink share with the broker: the client settings jetbench adds to the
user's, reachability within a bounded wait, and the partitions of the topics read.

librdkafka retries a broker it cannot reach forever; a cell must not hang, so every client first
asks for metadata within `CONNECT_TIMEOUT_S` and a silent broker is a `KafkaUnreachable`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from .errors import KafkaUnknownTopic, KafkaUnreachable, require_client

#: how long a client waits for the broker's first answer before `KafkaUnreachable`
CONNECT_TIMEOUT_S = 10.0

_logger = logging.getLogger("jetbench.kafka.client")


def client_config(bootstrap_servers: str, properties: Mapping[str, Any] | None, **ours: Any) -> dict[str, Any]:
    """``ours`` (jetbench's defaults) under the user's ``properties`` (which win), with the bootstrap
    servers, and librdkafka's log going to the ``jetbench.kafka.client`` logger, not stderr."""
    config: dict[str, Any] = {"bootstrap.servers": bootstrap_servers, "logger": _logger, **ours}
    config.update(properties or {})
    return config


def check_reachable(bootstrap_servers: str, timeout: float = CONNECT_TIMEOUT_S,
                    properties: Mapping[str, Any] | None = None, who: str = "kafka") -> Any:
    """The cluster's metadata; a `KafkaUnreachable` naming ``who`` and the servers if no broker
    answers within ``timeout`` seconds."""
    require_client()
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(client_config(bootstrap_servers, properties))
    try:
        return admin.list_topics(timeout=timeout)
    except Exception as exc:
        raise KafkaUnreachable(f"{who}: no Kafka broker answered at bootstrap_servers={bootstrap_servers!r} "
                               f"within {timeout:g} s ({exc})") from None


def topic_partitions(bootstrap_servers: str, topics: list[str], properties: Mapping[str, Any] | None = None,
                     timeout: float = CONNECT_TIMEOUT_S, who: str = "sources.kafka") -> list[tuple[str, int]]:
    """Every ``(topic, partition)`` of ``topics``, in order; `KafkaUnknownTopic` naming a topic the
    broker does not have (it is not created by reading it)."""
    metadata = check_reachable(bootstrap_servers, timeout, properties, who)
    out: list[tuple[str, int]] = []
    for topic in topics:
        meta = metadata.topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            known = sorted(t for t in metadata.topics if not t.startswith("__"))
            raise KafkaUnknownTopic(f"{who}: topic {topic!r} does not exist on {bootstrap_servers} "
                                    f"(topics there: {', '.join(known[:20]) or 'none'})")
        out.extend((topic, p) for p in sorted(meta.partitions))
    return out


__all__ = ["CONNECT_TIMEOUT_S", "check_reachable", "client_config", "topic_partitions"]
