"""The Kafka sink (``jetbench.sinks.kafka``): ``(key_fn(item), value_fn(item))`` records to a topic.

Without a guarantee, and under at-least-once, records go out as they come (an idempotent
producer, ``acks=all``); under at-least-once each snapshot's phase 1 waits until the broker has
acknowledged every record sent before the barrier, so a restored job can only write a record
again, never lose one.

Under exactly-once each instance is a two-phase sink with a transactional producer of its own
(Jet's Kafka sink), whose ``transactional.id`` is ``{transactional_id}-{vertex}-{index}``: the
same in every run of the job, so a new process fences off the one it replaces. librdkafka
cannot take over a transaction a killed process left open (Jet's Java client resumes it), so:

* the records of a snapshot epoch (between two barriers) are kept by the instance, and saved
  in the snapshot with it;
* phase 2 (``snapshot_commit_finish(True)``, once the snapshot is stored) writes them in one
  transaction and commits it, together with a marker: the epoch, committed as the offset of
  the group ``{transactional.id}-commits`` in the same transaction (atomic with the records);
* restored, an instance first fences (``init_transactions`` aborts what a killed process left
  open), reads the marker, and writes in new transactions the epochs of the snapshot that are
  above it (phase 2 had not committed them).

So a ``read_committed`` consumer sees every record once. (The Tansu broker of the tests shows
an aborted transaction's records to ``read_committed`` consumers, a broker defect: the test of
this guarantee kills the process at moments when no transaction is open.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from ..core.inbox import Inbox
from ..core.outbox import Outbox
from ..core.processor import Processor, ProcessorContext
from ..processors.snapshotting import instance_key, own_values
from .client import CONNECT_TIMEOUT_S, check_reachable, client_config
from .errors import KafkaProduceError

_KIND = "KafkaSinkP"
#: how long a transaction step (init, commit) may take before `KafkaProduceError`
TXN_TIMEOUT_S = 30.0


def _encode(data: Any, what: str, item: Any) -> bytes | None:
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode()
    raise KafkaProduceError(f"sinks.kafka: {what} of {item!r} is {type(data).__name__}, not bytes, str or None")


class KafkaSinkP(Processor):
    """Writes its items to ``topic`` (see the module); non-cooperative (blocking producer calls)."""

    snapshot_support: ClassVar[str] = "supported"
    commits_after_completion: ClassVar[bool] = True
    is_cooperative = False

    def __init__(self, topic: str, bootstrap_servers: str, key_fn: Callable[[Any], Any] | None = None,
                 value_fn: Callable[[Any], Any] = str, properties: Mapping[str, Any] | None = None,
                 transactional_id: str | None = None, connect_timeout: float = CONNECT_TIMEOUT_S):
        self.topic = topic
        self.bootstrap_servers = bootstrap_servers
        self.key_fn = key_fn
        self.value_fn = value_fn
        self.properties = dict(properties or {})
        self.transactional_id = transactional_id or f"jetbench-{topic}"
        self.connect_timeout = connect_timeout
        self._producer: Any = None
        self._error: BaseException | None = None
        self._transactional = False
        self._tid = ""
        self._epoch = 1
        self._buffer: list[tuple[bytes | None, bytes | None]] = []
        self._pending: list[tuple[int, list[tuple[bytes | None, bytes | None]]]] = []
        self._restored: list[tuple[int, list[tuple[bytes | None, bytes | None]]]] | None = None
        self._started = False
        self._marker: Any = None  # the consumer whose group holds the committed-epoch marker
        self.records_written = 0

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        who = f"sinks.kafka (vertex {context.vertex_name!r})"
        check_reachable(self.bootstrap_servers, self.connect_timeout, self.properties, who)
        from confluent_kafka import Producer

        self._transactional = context.processing_guarantee == "exactly_once"
        self._tid = f"{self.transactional_id}-{context.vertex_name}-{context.global_index}"
        # delivery reports only for failures: a Python call per record delivered costs more than
        # the rest of the record's way through the sink
        ours: dict[str, Any] = {"enable.idempotence": True, "acks": "all", "linger.ms": 5,
                                "error_cb": self._on_error, "delivery.report.only.error": True}
        if self._transactional:
            ours["transactional.id"] = self._tid
        self._producer = Producer(client_config(self.bootstrap_servers, self.properties, **ours))

    def _on_error(self, error: Any) -> None:
        if error.fatal() and self._error is None:
            self._error = KafkaProduceError(f"sinks.kafka (vertex {self.context.vertex_name!r}): {error.str()}")

    def _on_delivery(self, error: Any, message: Any) -> None:
        if error is not None and self._error is None:
            self._error = KafkaProduceError(
                f"sinks.kafka (vertex {self.context.vertex_name!r}): a record to topic {self.topic!r} was not "
                f"written: {error.str()}")

    def _check(self) -> None:
        if self._error is not None:
            raise self._error

    # -- processing -----------------------------------------------------------------------------

    def process(self, ordinal: int, inbox: Inbox) -> None:
        key_fn, value_fn = self.key_fn, self.value_fn
        records = []
        for item in inbox.take():
            records.append((_encode(key_fn(item), "key_fn", item) if key_fn is not None else None,
                            _encode(value_fn(item), "value_fn", item)))
        if self._transactional:
            self._buffer.extend(records)
        else:
            self._send(records)

    def _send(self, records: list[tuple[bytes | None, bytes | None]]) -> None:
        producer, topic, delivered = self._producer, self.topic, self._on_delivery
        for key, value in records:
            while True:
                try:
                    producer.produce(topic, value=value, key=key, on_delivery=delivered)
                    break
                except BufferError:  # the producer's queue is full: let it drain
                    producer.poll(0.05)
                except Exception as exc:
                    raise KafkaProduceError(
                        f"sinks.kafka (vertex {self.context.vertex_name!r}): a record to topic {self.topic!r} "
                        f"(key {key[:40] if key else key!r}, {len(value or b'')} bytes) was refused: {exc}") from None
        producer.poll(0)
        self.records_written += len(records)
        self._check()

    def _flush(self) -> None:
        remaining = self._producer.flush(TXN_TIMEOUT_S)
        self._check()
        if remaining:
            raise KafkaProduceError(f"sinks.kafka (vertex {self.context.vertex_name!r}): {remaining} records to "
                                    f"topic {self.topic!r} not acknowledged within {TXN_TIMEOUT_S:g} s")

    def complete(self) -> bool:
        if self._transactional:
            self._prepare()  # the last epoch: committed in the phase 2 of the final state's snapshot
        else:
            self._flush()
        return True

    # -- the two phases --------------------------------------------------------------------------

    def _start(self) -> None:
        """Before the first transaction: fence off an earlier process's producer (aborting what it
        left open), then commit the restored epochs that the marker says were not committed."""
        from confluent_kafka import Consumer, TopicPartition

        self._started = True
        self._producer.init_transactions(TXN_TIMEOUT_S)
        self._marker = Consumer(client_config(self.bootstrap_servers, self.properties,
                                              **{"group.id": f"{self._tid}-commits", "enable.auto.commit": False}))
        restored, self._restored = self._restored or [], None
        if restored:
            found = self._marker.committed([TopicPartition(self.topic, 0)], timeout=TXN_TIMEOUT_S)
            done = found[0].offset if found and found[0].offset >= 0 else 0
            for epoch, records in sorted(restored):
                if epoch > done:
                    self._transact(epoch, records)
        else:  # a new job: an earlier run's marker must not count for this one's epochs
            self._transact(0, [])

    def _transact(self, epoch: int, records: list[tuple[bytes | None, bytes | None]]) -> None:
        from confluent_kafka import TopicPartition

        producer = self._producer
        try:
            producer.begin_transaction()
            self._send(records)
            producer.send_offsets_to_transaction([TopicPartition(self.topic, 0, epoch)],
                                                 self._marker.consumer_group_metadata(), TXN_TIMEOUT_S)
            producer.commit_transaction(TXN_TIMEOUT_S)
        except KafkaProduceError:
            raise
        except Exception as exc:
            raise KafkaProduceError(f"sinks.kafka (vertex {self.context.vertex_name!r}): the transaction of "
                                    f"epoch {epoch} ({len(records)} records to {self.topic!r}) failed: {exc}") from None

    def _prepare(self) -> None:
        if not self._started:
            self._start()
        self._pending.append((self._epoch, self._buffer))
        self._buffer = []
        self._epoch += 1

    def save_to_snapshot(self) -> bool:
        if not self._transactional:
            if self._producer is not None:
                self._flush()  # at-least-once: every record before the barrier is acknowledged
            return True
        if not self._started:
            self._start()
        pending = [*self._pending, (self._epoch, self._buffer)]
        return self.outbox.offer_to_snapshot(instance_key(_KIND, self.context),
                                             [(epoch, list(records)) for epoch, records in pending])

    def snapshot_commit_prepare(self) -> bool:
        if self._transactional:
            self._prepare()
        return True

    def snapshot_commit_finish(self, success: bool) -> bool:
        if self._transactional and success:
            for epoch, records in self._pending:
                self._transact(epoch, records)
            self._pending = []
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        mine, _, _ = own_values(inbox, _KIND, self.context)
        restored = self._restored if self._restored is not None else []
        for epochs in mine:
            restored.extend((epoch, list(records)) for epoch, records in epochs)
        self._restored = restored
        if restored:
            self._epoch = max(epoch for epoch, _ in restored) + 1

    def metrics(self) -> dict[str, int]:
        return {"records_written": self.records_written}

    def close(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None and not self._transactional:
            producer.flush(5)
        marker, self._marker = self._marker, None
        if marker is not None:
            marker.close()


__all__ = ["KafkaSinkP"]
