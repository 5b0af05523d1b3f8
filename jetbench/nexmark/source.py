"""Nexmark events as a jetbench pipeline source, with their event times.

`nexmark(config)` generates the events inside the job: with several generators (Beam's split
timelines) instance k of n runs generators k, k+n, ... and emits their events merged in
timestamp order; with one generator, instance k emits event numbers k, k+n, ... Every item is
``(timestamp ms, event)`` and the planner puts watermarks after each instance, so windows
close as the events' time passes. ``rate_limited=True`` emits each event when its time comes,
``config.event_rate`` events/s in all (Beam's ``isRateLimited``): an event is due at its
timestamp on the job clock's wall time, so with a base time in the near future (Beam's
``useWallclockEventTime``, what ``jetbench nexmark --rate`` does) ``now - timestamp`` at a sink
is the event's true latency; when the base time is already past at the start (the default
2015 base), each instance shifts the schedule to begin at its start. Otherwise events go out as
fast as the job takes them.

`from_events(pairs)` is a source over events already in memory (``(timestamp, event)`` pairs in
timestamp order, as `generator.generate` yields them), for measuring queries without the
generator's cost; it emits them as stamped chunks (a timestamps column beside an events column).
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any, ClassVar

from ..core.inbox import Inbox
from ..core.outbox import Outbox
from ..core.processor import ProcessorContext
from ..pipeline.connectors import Source
from ..processors.emitter import EmittingProcessor
from ..processors.items_source import items_source, stamped_items_source
from ..processors.snapshotting import restored_position, save_position
from ..processors.supplier import ProcessorSupplier
from .config import GeneratorConfig, NexmarkConfig
from .generator import event_at, generator_events
from .model import Event

#: events generated per call of ``complete()`` at most (a cooperative call stays short)
BATCH = 256


def _strided(gen: GeneratorConfig, k: int, n: int) -> Iterator[tuple[int, Event]]:
    for number in range(k, gen.max_events, n):
        event = event_at(gen, number)
        yield event.date_time, event


def _ts(pair: tuple[int, Event]) -> int:
    return pair[0]


class NexmarkSourceP(EmittingProcessor):
    """Generates this instance's share of the Nexmark events as ``(timestamp, event)`` items.

    Snapshots: each instance saves how many events it has emitted (with one generator, its
    next event number is ``k + emitted * n``) and its schedule's shift; a restored instance
    generates again from there (the events are a pure function of their number), so what was
    due while the job was down is due at once."""

    snapshot_support: ClassVar[str] = "supported"

    def __init__(self, config: NexmarkConfig, rate_limited: bool = False):
        self.config = config
        self.rate_limited = rate_limited
        self._it: Iterator[tuple[int, Event]] = iter(())
        self._head: tuple[int, Event] | None = None
        self._shift_ms = 0.0
        self._emitted = 0  # events of this instance emitted so far

    def _events(self, skip: int) -> Iterator[tuple[int, Event]]:
        """This instance's events, after the first ``skip`` of them."""
        n, k = self.context.total_parallelism, self.context.global_index
        gens = self.config.generator_configs()
        if len(gens) == 1:
            return _strided(gens[0], k + skip * n, n)
        merged = heapq.merge(*(generator_events(g) for g in gens[k::n]), key=_ts)
        return islice(merged, skip, None) if skip else merged

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        self._it = self._events(0)
        self._clock = context.clock
        # an event at ts is due at wall time ts + shift (no shift while the base time is ahead)
        self._shift_ms = max(0.0, context.clock.time_ns() / 1e6 - self.config.base_time)
        self._head = next(self._it, None)

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():  # events taken before the barrier go first
            return False
        return save_position(self.outbox, "NexmarkSourceP", self.context, self._emitted, self._shift_ms)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        saved = restored_position(inbox, "NexmarkSourceP", self.context)
        if saved is None:
            return
        emitted, shift_ms = saved
        self._it = self._events(emitted)
        self._head = next(self._it, None)
        self._emitted = emitted
        self._shift_ms = shift_ms

    def _due_ms(self) -> float:
        """Timestamps due by now."""
        return self._clock.time_ns() / 1e6 - self._shift_ms

    def next_wake_time(self) -> float | None:
        """When (the clock's monotonic seconds) the next event is due, when rate-limited."""
        if self._head is None or not self.rate_limited:
            return None
        return self._clock.monotonic_ns() / 1e9 + (self._head[0] - self._due_ms()) / 1000

    def complete(self) -> bool:
        emitter = self._emitter
        room = min(emitter.free_room(), BATCH)
        if room <= 0:
            return False
        head, it = self._head, self._it
        chunk: list[tuple[int, Event]] = []
        due = self._due_ms() if self.rate_limited else float("inf")
        while head is not None and len(chunk) < room and head[0] <= due:
            chunk.append(head)
            head = next(it, None)
        self._head = head
        if chunk:
            self._emitted += len(chunk)
            emitter.emit(chunk)
        return head is None and not emitter.pending


def nexmark_source(config: NexmarkConfig, rate_limited: bool = False) -> ProcessorSupplier:
    """A vertex supplier of `NexmarkSourceP`."""
    mode = "rate-limited" if rate_limited else "bounded"
    return ProcessorSupplier(NexmarkSourceP, config, rate_limited,
                             label=f"nexmark({config.num_events} events, {config.num_event_generators} generators, "
                                   f"{mode})")


def nexmark(config: NexmarkConfig | None = None, rate_limited: bool = False,
            local_parallelism: int | None = None) -> Source:
    """The events of ``config`` (default: Beam's defaults) as a timestamped pipeline source."""
    config = config or NexmarkConfig()
    # each instance emits its events in timestamp order (one generator's timeline, or several
    # merged by time), so the watermarks after it read a batch's last timestamp
    return Source("nexmark", nexmark_source(config, rate_limited), local_parallelism=local_parallelism,
                  timestamped=True, streaming=False, ordered=True)


def from_events(pairs: Sequence[tuple[int, Any]], local_parallelism: int | None = 1, stamped: bool = True) -> Source:
    """A timestamped source over ``(timestamp, event)`` pairs already in memory (in timestamp
    order; instance k of n takes pairs k, k+n, ..., still in order).

    With ``stamped`` (the default) the pairs are split here, once, into a timestamps column and
    an events column, emitted as stamped chunks (`stamped_items_source`): no tuple per event on
    the way, and a vertex that reads columns (watermarks, transforms, windows, stateful maps)
    gets them as they are. Otherwise the pairs go out as they are (`items_source`)."""
    ts = [t for t, _ in pairs]
    # in order (checked here, once): the watermarks after the source need not scan each batch
    ordered = all(map(operator.le, ts, islice(ts, 1, None)))
    if not stamped:
        return Source("nexmark-events", items_source(pairs), local_parallelism=local_parallelism, timestamped=True,
                      streaming=False, ordered=ordered)
    events = [e for _, e in pairs]
    return Source("nexmark-events", stamped_items_source(ts, events), local_parallelism=local_parallelism,
                  timestamped=True, streaming=False, ordered=ordered)
