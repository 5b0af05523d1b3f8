"""ProcessorTasklet: drives one processor instance through Jet's state machine.

    INIT -> PROCESS (inbox / watermark / try_process) -> COMPLETE_EDGE -> ... -> COMPLETE
         -> EMIT_DONE -> CLOSE -> END

Each `call()` runs one state step, then flushes the outbox into the outbound queues, and returns
a `ProgressState`-like int: bit ``PROGRESS`` if anything moved or a state changed, bit ``DONE`` on
reaching END. Snapshot states (save, barrier) are meant to slot in at empty-inbox points.

The state is kept once, as the bound step method the next `call()` runs; `ProcessorTasklet.state`
names it as a `TaskletState`. PROCESS, the state of almost every call, is also flagged
(``_processing``, set by every transition) so that `call()` runs `_step_process` directly: compiled,
a native call, where calling the bound method costs a Python-level call.
"""

from __future__ import annotations

import enum
import math
from collections import deque
from collections.abc import Callable
from typing import Final, Protocol

from .inbox import Inbox
from .items import DONE, Chunk, Stamped, Watermark, chunk_len
from .metrics import InboundBarrier, TaskletStatistics
from .outbox import BlockingOutbox, Outbox
from .processor import Processor, ProcessorContext
from .queues import InboundStream
from .routing import Collector
from .watermarks import WatermarkCoalescer

# Final: compiled, a name that is not Final is looked up in the module's dict at every use
NO_PROGRESS: Final = 0
PROGRESS: Final = 1
DONE_STATE: Final = 2


class TaskletState(enum.Enum):
    """Where a tasklet is in Jet's processor state machine."""

    INIT = "INIT"
    PROCESS = "PROCESS"
    COMPLETE_EDGE = "COMPLETE_EDGE"
    COMPLETE = "COMPLETE"
    EMIT_DONE = "EMIT_DONE"
    CLOSE = "CLOSE"
    END = "END"
    # snapshots (only in a job with a processing guarantee: `jetbench.core.snapshot_tasklet`)
    RESTORE_SNAPSHOT = "RESTORE_SNAPSHOT"  # restore_from_snapshot(inbox) with this instance's entries
    FINISH_RESTORE = "FINISH_RESTORE"  # finish_snapshot_restore()
    SAVE_SNAPSHOT = "SAVE_SNAPSHOT"  # phase 1: save_to_snapshot() (also the final save at completion)
    SNAPSHOT_COMMIT_PREPARE = "SNAPSHOT_COMMIT_PREPARE"  # phase 1: snapshot_commit_prepare()
    EMIT_BARRIER = "EMIT_BARRIER"  # the barrier to every outbound edge
    WAIT_FOR_SNAPSHOT_COMPLETED = "WAIT_FOR_SNAPSHOT_COMPLETED"  # done, but phase 2 not yet come
    SNAPSHOT_COMMIT_FINISH = "SNAPSHOT_COMMIT_FINISH"  # phase 2: snapshot_commit_finish(success)


class Thief(Protocol):
    """A worker that marked a tasklet for stealing (``execution.CooperativeWorker``)."""

    expected: int
    incoming: deque[ProcessorTasklet]


class TaskletAborted(Exception):
    """Raised inside a blocking outbox wait when the job is being torn down."""


class ProcessorTasklet:
    """One processor instance with its inbox, outbox, inbound streams and outbound collectors."""

    def __init__(
        self,
        processor: Processor,
        context: ProcessorContext,
        inbound: list[InboundStream],
        collectors: list[Collector],
        outbox_capacity: int,
        inbox_limit: int,
        wait_for_room: Callable[[ProcessorTasklet], None] | None = None,
    ):
        self.processor = processor
        self.context = context
        self.vertex_name = context.vertex_name
        self.index = context.local_index
        self.cooperative = bool(getattr(processor, "is_cooperative", True))
        #: the processor reads timestamped batches as columns (else a stamped chunk becomes pairs)
        self.accepts_stamped = bool(getattr(processor, "accepts_stamped", False))
        self.inbox = Inbox()
        owner = f"vertex {context.vertex_name!r}#{context.local_index}"
        if self.cooperative or wait_for_room is None:
            self.outbox: Outbox = Outbox(len(collectors), outbox_capacity, owner)
        else:
            self.outbox = BlockingOutbox(len(collectors), outbox_capacity, owner, lambda: wait_for_room(self))
        self._collectors = collectors
        self._inbox_limit = inbox_limit
        self.inbound = inbound
        # (stream, ordinal, capacity) per inbound ordinal, for the per-edge queue metrics
        self._inbound_capacity = [(s, s.ordinal, s.capacity) for s in inbound]
        priorities = sorted({s.priority for s in inbound})
        self._groups = [[s for s in inbound if s.priority == p] for p in priorities]
        self._group: list[InboundStream] = self._groups.pop(0) if self._groups else []
        self._cursor = 0
        self._ordinal_coalescer = WatermarkCoalescer(max((s.ordinal for s in inbound), default=-1) + 1)
        self._pending_watermark: Watermark | None = None
        self._current_ordinal = 0
        self._edges_to_complete: list[int] = []
        self._control_done: set[int] = set()
        self._backlog = False
        self._has_try_process = type(processor).try_process is not Processor.try_process
        self._next_wake_time: Callable[[], float | None] | None = getattr(processor, "next_wake_time", None)
        self._step: Callable[[], bool] = self._step_init
        #: the state is PROCESS: `call` runs `_step_process` by a direct (compiled: native) call,
        #: not through the bound method in ``_step``, which costs a Python-level call
        self._processing = False
        self.initialized = False
        self.closed = False
        self.is_done = False
        # metrics: plain counters, written only by the thread running this tasklet
        self.received_count = 0
        self.received_batches = 0
        self.emitted_count = 0
        self.calls = 0
        self.progress_calls = 0
        self.busy_ns = 0
        self.slow_calls = 0
        self.max_call_ns = 0
        self.worker_index = -1
        self.steal_to: Thief | None = None  # a worker that marked this tasklet for stealing (work stealing on)
        self.refused = False  # last flush left data behind: downstream backpressure

    def __repr__(self) -> str:
        return f"ProcessorTasklet({self.vertex_name!r}#{self.index}, {self.state.name})"

    @property
    def name(self) -> str:
        return f"{self.vertex_name}#{self.index}"

    @property
    def state(self) -> TaskletState:
        """The state the next `call()` runs."""
        return _STATE_OF_STEP[self._step.__name__]

    def call(self) -> int:
        """Run one step and flush; return PROGRESS and/or DONE_STATE bits."""
        outbox = self.outbox
        accepted = outbox.accepted
        moved = self._flush() if self._backlog else 0
        progress = self._step_process() if self._processing else self._step()
        if self._backlog or outbox.accepted != accepted:
            moved += self._flush()
        if self.is_done:
            return DONE_STATE | PROGRESS
        return PROGRESS if (progress or moved or outbox.accepted != accepted) else NO_PROGRESS

    # -- states --------------------------------------------------------------------------------

    def _transition(self, step: Callable[[], bool]) -> bool:
        self._step = step
        self._processing = step.__name__ == _PROCESS_STEP
        return True

    def _step_init(self) -> bool:
        self.initialized = True
        self.processor.init(self.outbox, self.context)
        if self._group:
            return self._transition(self._step_process)
        return self._transition(self._step_complete)

    def _step_process(self) -> bool:
        inbox = self.inbox  # its fields are read directly: this is the hottest path of the engine
        if inbox._head >= len(inbox._items):
            if self._edges_to_complete:  # the batch just processed was the end of its stream
                return self._transition(self._step_complete_edge)
            if self._pending_watermark is not None:
                return self._process_watermark()
            if self._has_try_process and not self.processor.try_process():
                return False
            self._fill_inbox()
            if inbox._head >= len(inbox._items):
                if self._edges_to_complete:
                    return self._transition(self._step_complete_edge)
                if self._watermark_pending():
                    return self._process_watermark()
                return False
        before = len(inbox._items) - inbox._head
        self.processor.process(self._current_ordinal, inbox)
        return len(inbox._items) - inbox._head != before

    def _watermark_pending(self) -> bool:
        """Whether a coalesced watermark waits to be processed.

        A method, not the attribute test, wherever `_fill_inbox` (which sets it) ran since the
        same method last tested ``_pending_watermark is not None``: mypy keeps the attribute
        narrowed to None across the call, and mypyc, trusting that, would check it is None.
        """
        return self._pending_watermark is not None

    def _process_watermark(self) -> bool:
        wm = self._pending_watermark
        if wm is None:
            return False
        if wm.is_idle_marker:
            done = self.outbox.offer(wm)
        else:
            done = self.processor.try_process_watermark(wm)
        if done:
            self._pending_watermark = self._ordinal_coalescer.take_idle()
        return done

    def _fill_inbox(self) -> None:
        group = self._group
        n = len(group)
        limit = self._inbox_limit
        for k in range(n):
            stream = group[(self._cursor + k) % n] if n > 1 else group[0]
            items = stream.drain(limit)
            wm = stream.watermark
            if wm is not None:
                stream.watermark = None
                self._observe_watermark(stream.ordinal, wm)
            if not stream._live:
                self._stream_done(stream)
            if items is not None and (size := chunk_len(items)):
                if self._ordinal_coalescer.any_idle:
                    self._ordinal_coalescer.mark_active(stream.ordinal)
                self._load_inbox(items)
                self._current_ordinal = stream.ordinal
                self.received_count += size
                self.received_batches += 1
                if n > 1:
                    self._cursor = (self._cursor + k + 1) % max(len(self._group), 1)
                return
            if self._pending_watermark is not None or self._edges_to_complete:
                return

    def _load_inbox(self, chunk: Chunk) -> None:
        """Hand a drained chunk to the (empty) inbox: a `Stamped` chunk as its columns if the
        processor accepts them, else as the ``(ts, item)`` pairs it stands for."""
        inbox = self.inbox
        if isinstance(chunk, Stamped):
            if self.accepts_stamped:
                inbox._fill_stamped(chunk)
            else:
                inbox._fill(chunk.pairs())
        else:
            inbox._fill(chunk)

    def _observe_watermark(self, ordinal: int, wm: Watermark) -> None:
        coalesced = self._ordinal_coalescer.observe(ordinal, wm)
        if coalesced is not None:
            self._pending_watermark = coalesced

    def _stream_done(self, stream: InboundStream) -> None:
        self._group.remove(stream)
        self._edges_to_complete.append(stream.ordinal)
        coalesced = self._ordinal_coalescer.done(stream.ordinal)
        if coalesced is not None and self._pending_watermark is None:
            self._pending_watermark = coalesced
        if not self._group and self._groups:
            self._group = self._groups.pop(0)
            self._cursor = 0

    def _step_complete_edge(self) -> bool:
        while self._edges_to_complete:
            if not self.processor.complete_edge(self._edges_to_complete[0]):
                return False
            self._edges_to_complete.pop(0)
        if self._group:
            return self._transition(self._step_process)
        return self._transition(self._step_complete)

    def _step_complete(self) -> bool:
        if self.processor.complete():
            return self._transition(self._step_emit_done)
        return False

    def _step_emit_done(self) -> bool:
        if self._backlog or not self._offer_control(DONE):
            return False
        return self._transition(self._step_close)

    def _step_close(self) -> bool:
        self.close_processor()
        self.is_done = True
        return self._transition(self._step_end)

    def _step_end(self) -> bool:
        return False

    # -- outbox -> queues ----------------------------------------------------------------------

    def _flush(self) -> int:
        """Move outbox buckets and a pending watermark into the queues; return items moved."""
        moved = 0
        backlog = False
        outbox = self.outbox
        buckets = outbox._buckets
        for ordinal, collector in enumerate(self._collectors):
            if collector.pending:
                moved += collector.push()
                if collector.pending:  # the bucket waits for the remainder to go
                    backlog = True
                    continue
            bucket = buckets[ordinal]
            n = chunk_len(bucket)
            if n:
                buckets[ordinal] = []
                self.emitted_count += n
                moved += collector.route(bucket)
                if collector.pending:
                    backlog = True
        if outbox._control is not None:
            if backlog:
                pass
            elif self._offer_control(outbox._control):
                outbox._control = None
                moved += 1
            else:
                backlog = True
        self._backlog = backlog
        self.refused = backlog
        return moved

    def _offer_control(self, item: object) -> bool:
        """Offer a control item (watermark, DONE) to every outbound edge, remembering which took
        it; True once all have."""
        done = self._control_done
        for ordinal, collector in enumerate(self._collectors):
            if ordinal not in done and collector.offer_control(item):
                done.add(ordinal)
        if len(done) < len(self._collectors):
            return False
        done.clear()
        return True

    # -- idling -------------------------------------------------------------------------------

    def wake_time(self) -> float | None:
        """When this tasklet can next make progress, for a timer-aware idle strategy.

        A ``clock.monotonic()`` deadline (the context's clock), +inf if only input from another tasklet can make it
        progress, or None if it cannot tell. A processor tells through an optional
        ``next_wake_time()`` method; without one, a processor that only reacts to input (no
        ``try_process``) is input-driven, and anything else cannot tell.
        """
        if self.is_done:
            return math.inf
        inbox = self.inbox
        if (inbox._head < len(inbox._items) or self._backlog or self._pending_watermark is not None
                or self._edges_to_complete):
            return None
        for stream in self._group:
            for q in stream.queues:
                if q.chunks:
                    return 0.0  # input arrived after this round's call: go again now
        if self._next_wake_time is not None:
            return self._next_wake_time()
        if self._processing and not self._has_try_process:
            return math.inf
        return None

    # -- teardown ------------------------------------------------------------------------------

    def close_processor(self) -> None:
        """Call ``close()`` once; errors propagate to the caller, which records them."""
        if not self.closed:
            self.closed = True
            self.processor.close()

    def abort(self) -> None:
        """Leave at once (job failed or cancelled): close the processor and mark the tasklet done."""
        self._step = self._step_end
        self._processing = False
        self.is_done = True
        self.close_processor()

    def queues_size(self) -> int:
        """Items waiting in the inbound queues of the priority group being drained now."""
        return sum(s.size for s in self._group)

    def queues_capacity(self) -> int:
        """Capacity of the live inbound streams of the priority group being drained now."""
        return sum(s.capacity for s in self._group)

    def inbound_queues(self) -> tuple[tuple[int, int, int], ...]:
        """``(ordinal, size, capacity)`` of every inbound ordinal (one DAG edge each), finished or not.

        Read by metrics samplers only: one size read per queue, nothing on the hot path.
        """
        return tuple((ordinal, stream.size, capacity) for stream, ordinal, capacity in self._inbound_capacity)

    def snapshot_statistics(self) -> tuple[str, int, tuple[InboundBarrier, ...]]:
        """Where this instance is in the snapshot in flight: its state word, the snapshot's id and
        its inbound barriers (`jetbench.core.snapshot_tasklet`); nothing without a guarantee."""
        return "", 0, ()

    def statistics(self) -> TaskletStatistics:
        """A frozen record of this tasklet's counters, read without locks (see `jetbench.core.metrics`)."""
        snapshot_state, snapshot_id, inbound_barriers = self.snapshot_statistics()
        return TaskletStatistics(
            vertex=self.vertex_name,
            index=self.index,
            worker=self.worker_index,
            cooperative=self.cooperative,
            state=self.state.name,
            received_count=self.received_count,
            received_batches=self.received_batches,
            emitted_count=self.emitted_count,
            queues_size=self.queues_size(),
            queues_capacity=self.queues_capacity(),
            calls=self.calls,
            progress_calls=self.progress_calls,
            busy_ms=self.busy_ns / 1e6,
            slow_calls=self.slow_calls,
            max_call_ms=self.max_call_ns / 1e6,
            backpressure=self.refused,
            processor_metrics=self.processor.metrics(),
            inbound_queues=self.inbound_queues(),
            snapshot_state=snapshot_state,
            snapshot_id=snapshot_id,
            inbound_barriers=inbound_barriers,
        )


#: the state each step method stands for, by the method's name (the bound ``_step``'s
#: ``__name__``: compiled with mypyc, a bound method has no ``__func__`` to look up)
_STATE_OF_STEP: dict[str, TaskletState] = {
    ProcessorTasklet._step_init.__name__: TaskletState.INIT,
    ProcessorTasklet._step_process.__name__: TaskletState.PROCESS,
    ProcessorTasklet._step_complete_edge.__name__: TaskletState.COMPLETE_EDGE,
    ProcessorTasklet._step_complete.__name__: TaskletState.COMPLETE,
    ProcessorTasklet._step_emit_done.__name__: TaskletState.EMIT_DONE,
    ProcessorTasklet._step_close.__name__: TaskletState.CLOSE,
    ProcessorTasklet._step_end.__name__: TaskletState.END,
}

#: the name of the PROCESS step, which `ProcessorTasklet.call` runs directly
_PROCESS_STEP: Final = ProcessorTasklet._step_process.__name__
