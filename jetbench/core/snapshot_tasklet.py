"""Snapshots in the tasklet: Jet's barrier-aligned ``ProcessorTasklet`` states.

Only a job with a processing guarantee (or restoring a snapshot) is planned with these classes;
any other job runs the plain `ProcessorTasklet` and `InboundStream`, so the hot path of a job
without a guarantee is the very code it was before.

Barrier flow. The coordinator asks for snapshot *n* (`SnapshotContext.requested_id`). A tasklet
with no input left (a source, or a processor whose inputs are all done) notices it between two
``complete()`` calls; any other tasklet waits for the `SnapshotBarrier` *n* on every active
input: a `BarrierInboundStream` reports it once all of its live queues delivered it, the
tasklet once all of its live ordinals did. With exactly-once an input (queue, then ordinal)
that delivered the barrier is not drained again until all have (alignment); with at-least-once
it is. Then, at an empty inbox::

    SAVE_SNAPSHOT (save_to_snapshot() until True) -> SNAPSHOT_COMMIT_PREPARE -> EMIT_BARRIER
        -> back to PROCESS / COMPLETE;  phase 1 reported to the coordinator with the entries

Once the coordinator has stored snapshot *n* it opens phase 2 (`SnapshotContext.phase2_id`);
each tasklet that took part runs SNAPSHOT_COMMIT_FINISH (``snapshot_commit_finish(success)``)
at its next empty inbox (or completion step). A tasklet whose processor completed waits for a
pending phase 2 (WAIT_FOR_SNAPSHOT_COMPLETED), saves its final state (reported as finished:
it is part of every later snapshot) and only then emits DONE. A processor with a phase 2 of its
own for its last output (``commits_after_completion``: a transactional sink, whose
``complete()`` prepared it) then waits, before it closes, for the first snapshot stored after it
finished, the one holding its final state, and runs that snapshot's phase 2: what it prepared
at completion is committed only once a restore can no longer take it back. Once every instance
has finished, the coordinator stores that snapshot at once (`SnapshotCoordinator.terminal_due`).

Restore: a tasklet planned with entries starts INIT -> RESTORE_SNAPSHOT (its entries through
``restore_from_snapshot(inbox)``) -> FINISH_RESTORE -> PROCESS / COMPLETE, or straight to
EMIT_DONE if the instance had finished in the snapshot restored.

Seen from a sampler (``statistics()``, through `SnapshotTasklet.snapshot_statistics`): the instance's ``snapshot_state`` and, per
inbound ordinal, in how many queues the barrier in flight is still travelling, held or passed.
To tell "still travelling", a tasklet that emits barrier *n* notes, per outbound queue, how many
items that queue had been offered with the barrier (``SnapshotSetup.barrier_marks``): the
barrier is still in the queue while the consumer has polled fewer. That is the only cost, once
per barrier; everything else is read when a sampler asks.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any, Protocol

from .errors import JetbenchError
from .inbox import Inbox
from .items import SnapshotBarrier, Watermark
from .metrics import InboundBarrier
from .processor import Processor, ProcessorContext
from .queues import InboundStream, SPSCQueue
from .routing import Collector
from .tasklet import _STATE_OF_STEP, ProcessorTasklet, TaskletState


class SnapshotContext(Protocol):
    """What a tasklet sees of the job's snapshot coordinator (`jetbench.core.snapshot`)."""

    exactly_once: bool
    #: the newest snapshot id the coordinator asked for (phase 1)
    requested_id: int
    #: the newest snapshot id whose phase 2 is open, and whether it was stored
    phase2_id: int
    phase2_success: bool

    def phase1_done(self, tasklet: ProcessorTasklet, snapshot_id: int, entries: bytes) -> None: ...

    def phase2_done(self, tasklet: ProcessorTasklet, snapshot_id: int) -> None: ...

    def finished(self, tasklet: ProcessorTasklet, entries: bytes) -> None: ...


def commits_in_phase2(processor: Processor) -> bool:
    """Whether ``processor`` commits what it prepared at completion in the phase 2 of the snapshot
    holding its final state: it says so with a true ``commits_after_completion`` attribute (the
    files sink). A processor whose ``complete()`` commits by itself (the collect sink) or that
    cannot run a phase 2 once complete (a Beam stage) does not."""
    return bool(getattr(processor, "commits_after_completion", False))


class BarrierInboundStream(InboundStream):
    """An `InboundStream` that also understands snapshot barriers.

    A queue that delivered the current barrier is recorded; with ``aligned`` (exactly-once) it
    is not drained again until every live queue has delivered it. Once all have, ``barrier`` is
    set and the drain returns at once, so the items before it are processed first.
    """

    __slots__ = ("aligned", "barrier", "_got", "_current")

    def __init__(self, ordinal: int, priority: int, queues: list[SPSCQueue], aligned: bool):
        super().__init__(ordinal, priority, queues)
        self.aligned = aligned
        self.barrier: SnapshotBarrier | None = None
        self._got: list[SPSCQueue] = []  # queues that delivered ``_current``
        self._current: SnapshotBarrier | None = None

    def _held(self, q: SPSCQueue) -> bool:
        """Exactly-once: a queue that delivered the current barrier waits for the others."""
        return self.aligned and q in self._got

    def _control(self, q: SPSCQueue, item: Any) -> Watermark | None:
        if item.__class__ is SnapshotBarrier:
            if self._current is not None and item != self._current:
                raise JetbenchError(f"inbound ordinal {self.ordinal}: {item} came while "
                                    f"{self._current} was not yet complete")
            self._current = item
            self._got.append(q)
            return None
        return super()._control(q, item)

    def _drained(self) -> None:
        self._check_barrier()

    def _retire(self, queues: list[SPSCQueue]) -> None:
        super()._retire(queues)
        self._got = [q for q in self._got if q not in queues]

    def _check_barrier(self) -> None:
        current = self._current
        if current is not None and all(q in self._got for q in self._live):
            self.barrier = current
            self._current = None
            self._got.clear()


class SnapshotTasklet(ProcessorTasklet):
    """A `ProcessorTasklet` taking part in snapshots (see the module's docstring)."""

    def __init__(
        self,
        processor: Processor,
        context: ProcessorContext,
        inbound: list[InboundStream],
        collectors: list[Collector],
        outbox_capacity: int,
        inbox_limit: int,
        wait_for_room: Callable[[ProcessorTasklet], None] | None,
        snapshot: SnapshotContext,
        last_snapshot_id: int = 0,
        restore: list[tuple[Any, Any]] | None = None,
        restored_done: bool = False,
        barrier_marks: dict[int, tuple[int, int]] | None = None,
    ):
        super().__init__(processor, context, inbound, collectors, outbox_capacity, inbox_limit, wait_for_room)
        self.snapshot = snapshot
        self._exactly_once = snapshot.exactly_once
        self._next_id = last_snapshot_id + 1  # the snapshot this tasklet takes next
        self._prepared_id = last_snapshot_id  # the last snapshot whose phase 1 it did
        self._finished_id = last_snapshot_id  # the last snapshot whose phase 2 it did
        self._barrier_ordinals: set[int] = set()
        self._restore = restore
        self._restored_done = restored_done
        self._entries: list[tuple[Any, Any]] = []
        self._resume: Callable[[], bool] = self._step_process  # where a snapshot step returns to
        #: id(queue) -> (snapshot id, the queue's ``offered`` with its barrier), shared by the
        #: execution's tasklets (see the module's docstring)
        self._barrier_marks: dict[int, tuple[int, int]] = {} if barrier_marks is None else barrier_marks
        #: snapshots this instance took part in (phase 1 done)
        self.snapshots_taken = 0
        #: finished, with a phase 2 of its own: the snapshot whose phase 2 it awaits before closing
        #: (0: none); see the module's docstring
        self._final_commit_id = 0

    # -- restore -------------------------------------------------------------------------------

    def _step_init(self) -> bool:
        self.initialized = True
        self.processor.init(self.outbox, self.context)
        if self._restore is not None:
            self.inbox._fill(self._restore)
            self._restore = None
            return self._transition(self._step_restore)
        return self._transition(self._after_init())

    def _after_init(self) -> Callable[[], bool]:
        if self._restored_done:  # finished in the snapshot: report its state again, then DONE
            self._resume = self._step_emit_done
            return self._step_save_final
        return self._step_process if self._group else self._step_complete

    def _step_restore(self) -> bool:
        inbox = self.inbox
        if not inbox:
            return self._transition(self._step_finish_restore)
        before = len(inbox)
        self.processor.restore_from_snapshot(inbox)
        return len(inbox) != before

    def _step_finish_restore(self) -> bool:
        if not self.processor.finish_snapshot_restore():
            return False
        return self._transition(self._after_init())

    # -- processing, with barriers -------------------------------------------------------------

    def _step_process(self) -> bool:
        inbox = self.inbox
        if inbox._head >= len(inbox._items):
            if self._edges_to_complete:
                return self._transition(self._step_complete_edge)
            if self._pending_watermark is not None:
                return self._process_watermark()
            if self._snapshot_due():
                return True
            if self._has_try_process and not self.processor.try_process():
                return False
            self._fill_inbox()
            if inbox._head >= len(inbox._items):
                if self._edges_to_complete:
                    return self._transition(self._step_complete_edge)
                if self._watermark_pending():  # see ProcessorTasklet._watermark_pending
                    return self._process_watermark()
                return self._snapshot_due()
        before = len(inbox._items) - inbox._head
        self.processor.process(self._current_ordinal, inbox)
        return len(inbox._items) - inbox._head != before

    def _snapshot_due(self) -> bool:
        """At an empty inbox: go to phase 2 if it is open for us, or save if the barrier has come
        on every live input; True if a transition was made."""
        if self._prepared_id > self._finished_id and self.snapshot.phase2_id >= self._prepared_id:
            self._resume = self._step
            return self._transition(self._step_commit_finish)
        if self._barrier_ordinals and len(self._barrier_ordinals) >= len(self._group):
            self._resume = self._step_process
            return self._transition(self._step_save)
        return False

    def _fill_inbox(self) -> None:
        group = self._group
        if self._exactly_once and self._barrier_ordinals:
            group = [s for s in group if s.ordinal not in self._barrier_ordinals]
        n = len(group)
        limit = self._inbox_limit
        for k in range(n):
            stream = group[(self._cursor + k) % n]
            items = stream.drain(limit)
            wm = stream.watermark
            if wm is not None:
                stream.watermark = None
                self._observe_watermark(stream.ordinal, wm)
            barrier = None
            if isinstance(stream, BarrierInboundStream) and stream.barrier is not None:
                barrier, stream.barrier = stream.barrier, None
                self._observe_barrier(stream.ordinal, barrier)
            if not stream._live:
                self._stream_done(stream)
            if items:
                if self._ordinal_coalescer.any_idle:
                    self._ordinal_coalescer.mark_active(stream.ordinal)
                self._load_inbox(items)
                self._current_ordinal = stream.ordinal
                self.received_count += len(items)
                self.received_batches += 1
                self._cursor = (self._cursor + k + 1) % max(n, 1)
                return
            if self._pending_watermark is not None or self._edges_to_complete or barrier is not None:
                return

    def _observe_barrier(self, ordinal: int, barrier: SnapshotBarrier) -> None:
        if barrier.snapshot_id != self._next_id:
            raise JetbenchError(f"{self.name}: {barrier} on ordinal {ordinal}, expected snapshot {self._next_id}")
        self._barrier_ordinals.add(ordinal)

    def _stream_done(self, stream: InboundStream) -> None:
        super()._stream_done(stream)
        self._barrier_ordinals.discard(stream.ordinal)

    # -- completion ----------------------------------------------------------------------------

    def _step_complete(self) -> bool:
        snapshot = self.snapshot
        if self._prepared_id > self._finished_id:  # phase 2 first: complete() sees it committed
            self._resume = self._step_complete
            return self._transition(self._step_wait_completed)
        if snapshot.requested_id >= self._next_id:  # no input left: take the snapshot now
            self._resume = self._step_complete
            return self._transition(self._step_save)
        if self.processor.complete():
            self._resume = self._step_emit_done
            return self._transition(self._step_save_final)
        return False

    def _step_wait_completed(self) -> bool:
        if self.snapshot.phase2_id < self._prepared_id:
            return False
        return self._transition(self._step_commit_finish)

    def _step_save_final(self) -> bool:
        """The completed processor's final state, part of every later snapshot."""
        done = self.processor.save_to_snapshot()
        self._entries += self.outbox.take_snapshot()
        if not done:
            return False
        snapshot = self.snapshot
        snapshot.finished(self, self._pickled())
        if self.context.processing_guarantee != "none" and commits_in_phase2(self.processor):
            # any snapshot asked for from now on holds the final state
            self._final_commit_id = snapshot.requested_id + 1
        return self._transition(self._step_emit_done)

    def _step_emit_done(self) -> bool:
        if self._prepared_id > self._finished_id:  # restored-done instance: nothing to wait for
            self._finished_id = self._prepared_id
        if not super()._step_emit_done():
            return False
        if self._final_commit_id:
            return self._transition(self._step_final_commit)
        return True

    def _step_final_commit(self) -> bool:
        """Finished, DONE emitted: wait for the phase 2 of a snapshot holding the final state,
        run it, then close (a snapshot that could not be stored: wait for the next)."""
        snapshot = self.snapshot
        if snapshot.phase2_id < self._final_commit_id:
            return False
        success = snapshot.phase2_success
        if not self.processor.snapshot_commit_finish(success):
            return False
        if not success:
            self._final_commit_id = snapshot.phase2_id + 1
            return True
        self._final_commit_id = 0
        return self._transition(self._step_close)

    # -- the snapshot steps --------------------------------------------------------------------

    def _step_save(self) -> bool:
        done = self.processor.save_to_snapshot()
        self._entries += self.outbox.take_snapshot()
        if not done:
            return False
        return self._transition(self._step_commit_prepare)

    def _pickled(self) -> bytes:
        """The entries saved, pickled now: the snapshot holds the state as it was at the barrier,
        whatever the processor does to its objects afterwards."""
        entries, self._entries = self._entries, []
        try:
            return pickle.dumps(entries, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise JetbenchError(f"vertex {self.vertex_name!r} instance {self.index}: its snapshot state cannot be "
                                f"pickled: {type(exc).__name__}: {exc}") from exc

    def _step_commit_prepare(self) -> bool:
        if not self.processor.snapshot_commit_prepare():
            return False
        return self._transition(self._step_emit_barrier)

    def _step_emit_barrier(self) -> bool:
        outbox = self.outbox
        if self._backlog or outbox._control is not None or outbox.has_data():
            return False  # data the processor emitted goes first
        barrier = SnapshotBarrier(self._next_id)
        if not self._offer_control(barrier):
            return False
        marks = self._barrier_marks
        for collector in self._collectors:
            for q in collector.targets:
                marks[id(q)] = (self._next_id, q.offered)
        entries = self._pickled()
        self._prepared_id = self._next_id
        self._next_id += 1
        self._barrier_ordinals.clear()
        self.snapshots_taken += 1
        self.snapshot.phase1_done(self, self._prepared_id, entries)
        return self._transition(self._resume)

    def _step_commit_finish(self) -> bool:
        if not self.processor.snapshot_commit_finish(self.snapshot.phase2_success):
            return False
        self._finished_id = self._prepared_id
        self.snapshot.phase2_done(self, self._finished_id)
        return self._transition(self._resume)

    # -- what a sampler sees -------------------------------------------------------------------

    def snapshot_statistics(self) -> tuple[str, int, tuple[InboundBarrier, ...]]:
        """Where this instance is in the snapshot in flight (`snapshot_progress`) and its inbound
        barriers (`inbound_barriers`), for `ProcessorTasklet.statistics`."""
        state, snapshot_id = self.snapshot_progress()
        return state, snapshot_id, self.inbound_barriers()

    def snapshot_progress(self) -> tuple[str, int]:
        """``(word, snapshot id)``: "awaiting barrier" (asked for, no input has delivered it),
        "aligning" (exactly-once: some inputs delivered it and are held), "saving" (its state),
        "emitting barrier" (its pending output first, then the barrier downstream), "saved"
        (phase 1 done, phase 2 not open yet), "phase 2", "final save" (the completed processor's
        state), "final commit" (completed, awaiting the phase 2 of the snapshot holding its final
        state), "restoring"; ``("", 0)`` otherwise."""
        step = self._step.__name__
        prepared = self._prepared_id
        if step in _RESTORE_STEPS:
            return "restoring", prepared
        if step == _SAVE_FINAL_STEP:
            return "final save", 0
        if step == _FINAL_COMMIT_STEP:
            return "final commit", self._final_commit_id
        if step in _SAVE_STEPS:
            return "saving", self._next_id
        if step == _EMIT_BARRIER_STEP:  # waits for its data to go first, and for room downstream
            return "emitting barrier", self._next_id
        if self.is_done or step in _END_STEPS:
            return "", 0
        if prepared > self._finished_id or step in _PHASE2_STEPS:
            return ("phase 2" if self.snapshot.phase2_id >= prepared else "saved"), prepared
        if self.snapshot.requested_id >= self._next_id:
            held = bool(self._barrier_ordinals) or any(
                isinstance(s, BarrierInboundStream) and s._current is not None and s._got for s in self.inbound)
            return ("aligning" if self._exactly_once and held else "awaiting barrier"), self._next_id
        return "", 0

    def inbound_barriers(self) -> tuple[InboundBarrier, ...]:
        """Per inbound ordinal, how many of its live queues hold the barrier of the newest
        snapshot asked for, in the queue, held here, or passed (empty before the first)."""
        n = self.snapshot.requested_id
        if n <= 0:
            return ()
        passed = self._prepared_id >= n
        marks = self._barrier_marks
        out: list[InboundBarrier] = []
        for stream in self.inbound:
            live = stream._live
            if passed:
                out.append(InboundBarrier(stream.ordinal, n, 0, 0, len(live)))
                continue
            all_held = stream.ordinal in self._barrier_ordinals
            got: list[SPSCQueue] = []
            if isinstance(stream, BarrierInboundStream):
                current = stream._current
                if current is not None and current.snapshot_id == n:
                    got = stream._got
            held = in_queue = 0
            for q in live:
                if all_held or q in got:
                    held += 1
                else:
                    mark = marks.get(id(q))
                    if mark is not None and mark[0] == n and q.polled < mark[1]:
                        in_queue += 1
            out.append(InboundBarrier(stream.ordinal, n, in_queue, held, 0))
        return tuple(out)


_STATE_OF_STEP.update({
    SnapshotTasklet._step_init.__name__: TaskletState.INIT,
    SnapshotTasklet._step_restore.__name__: TaskletState.RESTORE_SNAPSHOT,
    SnapshotTasklet._step_finish_restore.__name__: TaskletState.FINISH_RESTORE,
    SnapshotTasklet._step_process.__name__: TaskletState.PROCESS,
    SnapshotTasklet._step_complete.__name__: TaskletState.COMPLETE,
    SnapshotTasklet._step_save_final.__name__: TaskletState.SAVE_SNAPSHOT,
    SnapshotTasklet._step_wait_completed.__name__: TaskletState.WAIT_FOR_SNAPSHOT_COMPLETED,
    SnapshotTasklet._step_emit_done.__name__: TaskletState.EMIT_DONE,
    SnapshotTasklet._step_save.__name__: TaskletState.SAVE_SNAPSHOT,
    SnapshotTasklet._step_commit_prepare.__name__: TaskletState.SNAPSHOT_COMMIT_PREPARE,
    SnapshotTasklet._step_emit_barrier.__name__: TaskletState.EMIT_BARRIER,
    SnapshotTasklet._step_commit_finish.__name__: TaskletState.SNAPSHOT_COMMIT_FINISH,
    SnapshotTasklet._step_final_commit.__name__: TaskletState.SNAPSHOT_COMMIT_FINISH,
})

#: the steps `SnapshotTasklet.snapshot_progress` names, by method name (as `_STATE_OF_STEP`)
_RESTORE_STEPS = frozenset({SnapshotTasklet._step_restore.__name__, SnapshotTasklet._step_finish_restore.__name__})
_SAVE_FINAL_STEP = SnapshotTasklet._step_save_final.__name__
_SAVE_STEPS = frozenset({SnapshotTasklet._step_save.__name__, SnapshotTasklet._step_commit_prepare.__name__})
_EMIT_BARRIER_STEP = SnapshotTasklet._step_emit_barrier.__name__
_PHASE2_STEPS = frozenset({SnapshotTasklet._step_wait_completed.__name__, SnapshotTasklet._step_commit_finish.__name__})
_FINAL_COMMIT_STEP = SnapshotTasklet._step_final_commit.__name__
_END_STEPS = frozenset({SnapshotTasklet._step_emit_done.__name__, SnapshotTasklet._step_close.__name__,
                        SnapshotTasklet._step_end.__name__})


def restore_inbox(entries: list[tuple[Any, Any]]) -> Inbox:
    """An inbox of snapshot entries, as ``restore_from_snapshot`` gets them (for tests)."""
    return Inbox(list(entries))


class SnapshotSetup:
    """How `jetbench.core.plan.build_plan` plans a job that takes part in snapshots: barrier-aware
    streams and `SnapshotTasklet` s, each given its share of the snapshot restored (if any).

    ``restore`` maps a vertex to one entry list per instance (already routed), ``done`` to the
    instances that had finished; ``last_snapshot_id`` is the id restored (0: none).
    """

    def __init__(self, context: SnapshotContext, last_snapshot_id: int = 0,
                 restore: dict[str, list[list[tuple[Any, Any]]]] | None = None,
                 done: dict[str, set[int]] | None = None, guarantee: str = "exactly_once"):
        self.context = context
        self.guarantee = guarantee
        self.last_snapshot_id = last_snapshot_id
        self.restore = restore
        self.done = done or {}
        #: id(queue) -> (snapshot id, offered count with its barrier): the tasklets' barrier marks
        self.barrier_marks: dict[int, tuple[int, int]] = {}

    def stream(self, ordinal: int, priority: int, queues: list[SPSCQueue]) -> InboundStream:
        return BarrierInboundStream(ordinal, priority, queues, self.context.exactly_once)

    def tasklet(self, processor: Processor, context: ProcessorContext, inbound: list[InboundStream],
                collectors: list[Collector], outbox_capacity: int, inbox_limit: int,
                wait_for_room: Callable[[ProcessorTasklet], None] | None) -> ProcessorTasklet:
        vertex, k = context.vertex_name, context.global_index
        restore = None
        if self.restore is not None:
            per_instance = self.restore.get(vertex)
            restore = list(per_instance[k]) if per_instance is not None else []
        return SnapshotTasklet(processor, context, inbound, collectors, outbox_capacity, inbox_limit, wait_for_room,
                               self.context, self.last_snapshot_id, restore, k in self.done.get(vertex, ()),
                               self.barrier_marks)
