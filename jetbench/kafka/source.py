"""The Kafka source (``jetbench.sources.kafka``): Jet's model of it on ``confluent-kafka``.

* The partitions of the topics read are spread over the source's instances: partition i of the
  list of every ``(topic, partition)`` goes to the instance with global index
  ``i % total_parallelism``, which ``assign()``\\s them (no group rebalancing: the job decides).
* Each record's timestamp is its event time: items go out as ``(timestamp ms, (key, value))``.
* In a pipeline with event-time stages the source makes its own watermarks, per partition,
  coalesced with an idle timeout (`jetbench.kafka.partition_watermarks`).
* Snapshots save each partition's next offset (and watermark) under a broadcast key; a restored
  job goes on from them, whatever the consumer group says. A group's committed offset is only
  where a job without a snapshot starts (if ``group_id`` is given and the group has one); the
  offsets of each snapshot are committed to the group once it is stored (phase 2).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from ..core.inbox import Inbox
from ..core.items import BroadcastKey, Watermark
from ..core.outbox import Outbox
from ..core.processor import ProcessorContext
from ..processors.emitter import EmittingProcessor
from ..processors.snapshotting import instance_key, own_values
from ..processors.supplier import ProcessorSupplier
from .client import CONNECT_TIMEOUT_S, client_config, topic_partitions
from .errors import KafkaDeserializationError, KafkaError
from .partition_watermarks import PartitionWatermarks

#: records taken from the consumer per call (then the call returns)
BATCH = 2048
#: how long one call waits for records (a blocking processor returns about this often)
POLL_S = 0.1
#: how often the lag's high watermarks are refreshed from the consumer's cache
HIGH_OFFSETS_EVERY_S = 0.5
#: how long to wait for the broker's answer for a partition with no high watermark cached yet
HIGH_OFFSETS_WAIT_S = 0.5
_KIND = "KafkaSourceP"
_OFFSET_TAG = "KafkaSourceP.offset"


class KafkaSourceP(EmittingProcessor):
    """Reads its share of the partitions of ``topics`` (see the module); non-cooperative."""

    snapshot_support: ClassVar[str] = "supported"
    is_cooperative = False

    def __init__(self, topics: list[str], bootstrap_servers: str, group_id: str | None = None,
                 properties: Mapping[str, Any] | None = None,
                 key_deserializer: Callable[[bytes | None], Any] | None = None,
                 value_deserializer: Callable[[bytes | None], Any] | None = None,
                 start: str | int = "earliest", bounded: bool = False, allowed_lag: float = 0,
                 idle_timeout_ms: float | None = 60_000, throttle_frame: int | None = None,
                 connect_timeout: float = CONNECT_TIMEOUT_S, projection: Callable[[Any, Any], Any] | None = None):
        self.topics = topics
        self.bootstrap_servers = bootstrap_servers
        self.group_id = group_id
        self.properties = dict(properties or {})
        self.key_deserializer = key_deserializer
        self.value_deserializer = value_deserializer
        #: the item of a record from its deserialized key and value (Jet's projectionFn); None: the pair
        self.projection = projection
        self.start = start
        self.bounded = bounded
        self.allowed_lag = allowed_lag
        self.idle_timeout_ms = idle_timeout_ms
        #: the watermark frame the planner sets in a pipeline with event-time stages; None: no watermarks
        self.throttle_frame = throttle_frame
        self.connect_timeout = connect_timeout
        self._mine: list[tuple[str, int]] = []
        self._index: dict[tuple[str, int], int] = {}
        self._next: dict[tuple[str, int], int] = {}  # restored or read: the next offset per partition
        self._ended: set[tuple[str, int]] = set()
        self._wm: PartitionWatermarks | None = None
        self._consumer: Any = None
        self._snapshot_offsets: dict[tuple[str, int], int] = {}
        self.records_read = 0
        #: per partition, the broker's high watermark last seen (for the lag)
        self.high_offsets: dict[tuple[str, int], int] = {}
        self._high_at = -math.inf
        self._assigned: list[Any] = []  # the TopicPartitions assigned
        #: partitions started at the timestamp ``start``, until their first record at or after it
        self._seeking: dict[tuple[str, int], int] = {}

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        who = f"sources.kafka (vertex {context.vertex_name!r})"
        every = topic_partitions(self.bootstrap_servers, self.topics, self.properties, self.connect_timeout, who)
        self._mine = every[context.global_index :: context.total_parallelism]
        self._index = {tp: i for i, tp in enumerate(self._mine)}
        if self.throttle_frame is not None:
            self._wm = PartitionWatermarks(len(self._mine), self.allowed_lag, self.throttle_frame,
                                           self.idle_timeout_ms, context.clock.monotonic())

    # -- reading -----------------------------------------------------------------------------------

    def _open(self) -> Any:
        from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, TopicPartition

        config = client_config(
            self.bootstrap_servers, self.properties,
            **{"group.id": self.group_id or f"jetbench-{self.context.vertex_name}",
               "enable.auto.commit": False, "enable.partition.eof": True, "fetch.wait.max.ms": 50,
               "isolation.level": "read_committed"})
        consumer = Consumer(config)
        unknown = [tp for tp in self._mine if tp not in self._next]
        if unknown and self.group_id is not None:  # no snapshot: the group's offset is the hint
            for tp in consumer.committed([TopicPartition(t, p) for t, p in unknown], timeout=self.connect_timeout):
                if tp.offset >= 0:
                    self._next[(tp.topic, tp.partition)] = tp.offset
            unknown = [tp for tp in self._mine if tp not in self._next]
        starts: dict[tuple[str, int], int] = {}
        if unknown and isinstance(self.start, int):
            found = consumer.offsets_for_times([TopicPartition(t, p, self.start) for t, p in unknown],
                                               timeout=self.connect_timeout)
            starts = {(tp.topic, tp.partition): tp.offset if tp.offset >= 0 else OFFSET_END for tp in found}
            # a broker that answers the timestamp look-up with an earlier offset (the Tansu of the
            # tests answers 0): the records before the first one at or after it are skipped here
            self._seeking = {tp: self.start for tp in unknown}
        default = OFFSET_END if self.start == "latest" else OFFSET_BEGINNING
        consumer.assign([TopicPartition(t, p, self._next.get((t, p), starts.get((t, p), default)))
                         for t, p in self._mine])
        self._assigned = [TopicPartition(t, p) for t, p in self._mine]
        return consumer

    def complete(self) -> bool:
        emitter = self._emitter
        if not emitter.flush():
            return False
        if not self._mine:
            self._poll_watermarks()
            if self.bounded:
                return True
            self.context.clock.sleep(POLL_S)
            return False
        if self._consumer is None:
            self._consumer = self._open()
            if self._wm is not None:  # a partition's idle time counts from when reading begins
                self._wm.restart_clock(self.context.clock.monotonic())
        messages = self._consumer.consume(BATCH, POLL_S)
        stamps: list[Any] = []
        items: list[Any] = []
        wm_state = self._wm
        now = self.context.clock.monotonic()
        # before emitting: a source that a full queue holds back in emit still shows its lag
        if now - self._high_at >= HIGH_OFFSETS_EVERY_S:
            self._refresh_high_offsets(now)
        for m in messages:
            error = m.error()
            if error is not None:
                if error.code() == -191:  # _PARTITION_EOF: caught up with this partition
                    self._ended.add((m.topic(), m.partition()))
                    self.high_offsets[(m.topic(), m.partition())] = m.offset()
                    continue
                raise KafkaError(f"sources.kafka (vertex {self.context.vertex_name!r}): reading topic "
                                 f"{m.topic()!r} partition {m.partition()}: {error.str()}")
            tp = (m.topic(), m.partition())
            offset = m.offset()
            if offset < self._next.get(tp, 0):
                continue  # before the restored position (a fetch that began earlier)
            kind, ts = m.timestamp()
            if kind == 0:  # TIMESTAMP_NOT_AVAILABLE
                ts = int(time.time() * 1000)
            if self._seeking:
                seek = self._seeking.get(tp)
                if seek is not None:
                    if ts < seek:
                        self._next[tp] = offset + 1
                        continue
                    del self._seeking[tp]
            item = (self._deserialize(self.key_deserializer, m.key(), m, "key"),
                    self._deserialize(self.value_deserializer, m.value(), m, "value"))
            if self.projection is not None:
                item = self.projection(*item)
            self._next[tp] = offset + 1
            self.records_read += 1
            self._ended.discard(tp)
            stamps.append(ts)
            items.append(item)
            if wm_state is not None:
                wm = wm_state.observe(self._index[tp], ts, now)
                if wm is not None:
                    emitter.emit_stamped(stamps, items)
                    stamps, items = [], []
                    self._offer_watermark(wm)
        if items:
            emitter.emit_stamped(stamps, items)
        self._poll_watermarks()
        return self.bounded and len(self._ended) == len(self._mine) and not emitter.pending

    def _refresh_high_offsets(self, now: float) -> None:
        """The partitions' high watermarks as the last fetches reported them; a partition not
        fetched yet (a source held back by a full queue after reading another) is asked of the
        broker, briefly (an unanswered one is asked again at the next refresh, not sooner: a
        slow broker does not slow every call)."""
        self._high_at = now
        consumer = self._consumer
        for tp in self._assigned:
            _, high = consumer.get_watermark_offsets(tp, cached=True)
            if high < 0:
                try:
                    _, high = consumer.get_watermark_offsets(tp, timeout=HIGH_OFFSETS_WAIT_S)
                except Exception:  # noqa: BLE001 - the broker did not answer in time: ask at the next refresh
                    continue
            if high >= 0:
                self.high_offsets[(tp.topic, tp.partition)] = high

    def _offer_watermark(self, wm: Watermark) -> None:
        # a non-cooperative source's outbox blocks rather than refuse (jetbench.core.processor)
        self._emitter.flush()
        self.outbox.offer(wm)

    def _poll_watermarks(self) -> None:
        if self._wm is not None:
            for wm in self._wm.poll(self.context.clock.monotonic()):
                self._offer_watermark(wm)

    def _deserialize(self, fn: Callable[[bytes | None], Any] | None, data: bytes | None, m: Any, what: str) -> Any:
        if fn is None:
            return data
        try:
            return fn(data)
        except Exception as exc:
            raise KafkaDeserializationError(
                f"sources.kafka (vertex {self.context.vertex_name!r}): the {what} of the record at topic "
                f"{m.topic()!r} partition {m.partition()} offset {m.offset()} failed to deserialize with "
                f"{getattr(fn, '__name__', fn)!r}: {type(exc).__name__}: {exc}",
                m.topic(), m.partition(), m.offset()) from exc

    # -- snapshots ----------------------------------------------------------------------------------

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():
            return False
        outbox = self.outbox
        wm = self._wm
        saved = {}
        for tp in self._mine:
            if tp in self._next:
                saved[tp] = self._next[tp]
                part_wm = wm.state(self._index[tp]) if wm is not None else None
                outbox.offer_to_snapshot(BroadcastKey((_OFFSET_TAG, tp[0], tp[1])),
                                         (self._next[tp], None if part_wm == -math.inf else part_wm))
        self._snapshot_offsets = saved
        last = wm.last_emitted if wm is not None and wm.last_emitted != -math.inf else None
        return outbox.offer_to_snapshot(instance_key(_KIND, self.context), last)

    def snapshot_commit_finish(self, success: bool) -> bool:
        if success and self.group_id is not None and self._consumer is not None and self._snapshot_offsets:
            from confluent_kafka import TopicPartition

            offsets = [TopicPartition(t, p, o) for (t, p), o in self._snapshot_offsets.items()]
            try:
                self._consumer.commit(offsets=offsets, asynchronous=True)
            except Exception:  # a hint only: the snapshot holds the offsets that count
                self.context.logger.warning("sources.kafka: committing offsets to group %r failed", self.group_id)
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        mine, every, rest = own_values(inbox, _KIND, self.context)
        lasts = [v for v in (mine or every) if v is not None]
        for key, (offset, part_wm) in rest:
            tag = key.key if isinstance(key, BroadcastKey) else None
            if type(tag) is not tuple or tag[0] != _OFFSET_TAG:
                continue
            tp = (tag[1], tag[2])
            if tp in self._index:
                self._next[tp] = offset
                if self._wm is not None:
                    self._wm.restore(self._index[tp], part_wm, min(lasts) if lasts else None)

    def metrics(self) -> dict[str, int]:
        """``records_read``, ``partitions``, the total ``lag`` (records between the offset read and
        the high watermark), and per partition ``offset``, ``high``, ``lag`` and ``watermark``
        (``"lag topic[2]"``...) as far as known."""
        out = {"records_read": self.records_read, "partitions": len(self._mine), "lag": 0}
        wm = self._wm
        for tp in self._mine:
            name = f"{tp[0]}[{tp[1]}]"
            offset, high = self._next.get(tp), self.high_offsets.get(tp)
            if offset is not None:
                out[f"offset {name}"] = offset
            if high is not None:
                out[f"high {name}"] = high
                lag = max(0, high - (offset or 0))
                out[f"lag {name}"] = lag
                out["lag"] += lag
            if wm is not None and wm.state(self._index[tp]) != -math.inf:
                out[f"watermark {name}"] = int(wm.state(self._index[tp]))
        return out

    def close(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.close()


class KafkaSourceSupplier(ProcessorSupplier):
    """The Kafka source's vertex supplier; the planner gives it the watermark frame
    (`for_watermark_frame`) when the pipeline has event-time stages."""

    def for_watermark_frame(self, frame: int) -> KafkaSourceSupplier:
        return KafkaSourceSupplier(self.processor, label=self.label, **{**self.params, "throttle_frame": frame})


__all__ = ["BATCH", "KafkaSourceP", "KafkaSourceSupplier"]
