"""Tumbling and sliding windows: Jet's ``SlidingWindowP``, single stage (see
`jetbench.processors.window_aggregate` for the kind, its lateness rule and an example).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Iterator
from operator import itemgetter
from typing import Any, ClassVar

from ..core.errors import JetbenchError
from ..core.inbox import Inbox
from ..core.items import Watermark
from ..core.outbox import Outbox
from ..core.processor import ProcessorContext
from .aggregate_operation import AggregateOperation, _identity, is_identity
from .early_results import EarlyResults, EarlyResultsProcessor, check_early_results
from .emitter import Emitter
from .snapshotting import EntrySaver, instance_key, own_values
from .window_definition import WindowDefinition, WindowResult, check_window_key

#: a result made as ``_new(WindowResult, (start, end, key, value))``: the named tuple's own
#: ``__new__`` is Python code (a frame and keyword parsing per result), tuple's is C
_new = tuple.__new__
_first = itemgetter(0)
_INF = math.inf
_MISSING = object()
_second = itemgetter(1)
#: Accumulator types that cannot change after they were emitted (no defensive copy needed).
_IMMUTABLE = frozenset({int, float, bool, str, bytes, complex, frozenset, type(None)})


class SlidingWindowP(EarlyResultsProcessor):
    """Tumbling and sliding windows over frames of ``window_def.slide`` ms.

    State: ``frames`` maps a frame start to ``{key: acc}``. On a watermark every window whose end
    is ``<= wm`` is emitted in order of end (empty windows are skipped), keys in the order of
    the window's accumulator map. Tumbling windows emit a frame as is; sliding windows either
    keep one running accumulator per key (``op.deduct`` available: combine the leading frame,
    deduct the trailing one) or recombine all frames of each window. Frames no longer part of
    a future window are evicted. The watermark is forwarded after all its results went out.
    Unkeyed windows whose operation has ``accumulate_all``, and keyed ones whose operation has
    ``accumulate_groups``, fold a whole batch at once when its events all fall in one frame
    (`folds_batches`; in running mode only into a frame not yet part of the running window, as
    the leading frame of an ordered stream is).

    Early results (``window_def.early_results_ms``, `jetbench.processors.early_results`): every
    period, the current result of each window not closed yet that holds data, recombined from
    its frames.

    Input comes as ``(ts, item)`` pairs or, from a producer that emits them, as a stamped
    chunk's columns (``accepts_stamped``): the batch path then folds the items column as it is,
    the per-item path zips the two; no form is converted into the other.

    Snapshots: one entry per (frame, key) accumulator and per running accumulator, under the
    window key (so each goes back to the instance that owns the key), and the instance's
    progress (next window end, the late and running bounds, the late-event counter) under a
    broadcast key. A restored instance takes its own progress (at another parallelism, the
    lowest next window end saved: windows are emitted again rather than lost); accumulators of
    one key and frame from two instances are combined.
    """

    snapshot_support: ClassVar[str] = "supported"

    def __init__(
        self,
        key_fn: Callable[[Any], Hashable] | None,
        op: AggregateOperation,
        window_def: WindowDefinition,
    ):
        check_sliding(op, window_def)
        self.key_fn = check_window_key(key_fn)
        self.op = op
        self.window_def = window_def
        self.size = window_def.size
        self.slide = window_def.slide
        self._tumbling = window_def.size == window_def.slide
        self._running_mode = not self._tumbling and op.deduct is not None
        self.frames: dict[int | float, dict[Hashable, Any]] = {}
        #: end of the next window to emit (None before the first watermark with data).
        self._next_end: int | None = None
        #: frames below ``_low`` only belong to emitted windows: their events are late.
        self._low: float = -_INF
        #: frames below ``_mid`` (and >= ``_low``) are already part of the running window.
        self._mid: float = -_INF
        #: running mode: key -> [acc, number of the window's frames holding the key]; it covers
        #: frames [next_end - size, next_end - slide), the next window minus its leading frame.
        self._running: dict[Hashable, list[Any]] = {}
        # An identity finish would hand the running accumulator out while we keep mutating it.
        self._running_value = self._copy_of if op.finish is None else op.finish
        # whole-batch folding: global (no key) windows through accumulate_all, keyed ones through
        # accumulate_groups (an identity key is not called); in running mode only into a frame
        # the running accumulators do not hold yet (`_one_frame`)
        batch_path = op.accumulate_all if key_fn is None else op.accumulate_groups
        self._fold_batches = batch_path is not None
        self._group_key = _identity if is_identity(key_fn) else key_fn
        self.late_events_dropped = 0
        self.accepts_stamped = True  # a stamped chunk is read as its columns (and pairs as pairs)
        self._saver = EntrySaver()
        self._restored: list[list[Any]] = [[], []]  # progress entries restored: this instance's, every one's
        self._recount = False  # running accumulators of one key came from two instances
        self._early = EarlyResults(window_def.early_results_ms)

    @property
    def folds_batches(self) -> bool:
        """True when an input batch within one frame is folded at once (``op.accumulate_all``, keyed:
        ``op.accumulate_groups``), not item by item (in running mode: a frame the running window
        does not hold yet)."""
        return self._fold_batches

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        self._emitter = Emitter(outbox)
        self._early.start(context.clock)

    def _copy_of(self, acc: Any) -> Any:
        """A mutable accumulator copied through ``combine(create(), acc)``; others as they are."""
        if type(acc) in _IMMUTABLE:
            return acc
        combine = self.op.combine
        assert combine is not None  # only running mode copies: sliding windows have combine (check_sliding)
        return combine(self.op.create(), acc)

    # -- input ----------------------------------------------------------------------------------

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if inbox.stamped:  # columns (a producer that emits them): no (ts, item) tuple is built
            ts, items = inbox.take_stamped()
            if self._fold_batches and self._fold_columns(ts, items):
                return
            self._accumulate(zip(ts, items))  # noqa: B905 - the columns are as long (Stamped)
            return
        batch = inbox.take()
        if self._fold_batches and self._fold_whole(batch):
            return
        self._accumulate(batch)

    def _accumulate(self, pairs: Iterable[tuple[Any, Any]]) -> None:
        """The per-item path: each ``(ts, item)`` pair into its frame (and the running window)."""
        frames = self.frames
        slide = self.slide
        low, mid = self._low, self._mid
        key_fn = self.key_fn
        create = self.op.create
        accumulate = self.op.accumulate
        late = 0
        for ts, item in pairs:
            fs = ts - ts % slide
            if fs < low:
                late += 1
                continue
            key = None if key_fn is None else key_fn(item)
            frame = frames.get(fs)
            if frame is None:
                frame = frames[fs] = {}
            acc = frame.get(key, _MISSING)
            if fs < mid:  # a frame the running window already holds: update it too
                self._add_to_running(key, item, acc is _MISSING)
            frame[key] = accumulate(create() if acc is _MISSING else acc, item)
        if late:
            self.late_events_dropped += late

    def _fold_whole(self, batch: list[Any]) -> bool:
        """Fast path over ``(ts, item)`` pairs: `_fold_columns` on the pairs' columns (the items
        column made only when the batch folds)."""
        frame = self._one_frame(list(map(_first, batch)))
        if frame is None:
            return False
        self._fold_into(frame, list(map(_second, batch)))
        return True

    def _fold_columns(self, ts: list[Any], items: list[Any]) -> bool:
        """Fast path: a batch whose events all fall in one frame not yet emitted is folded in one
        ``accumulate_all`` (keyed: ``accumulate_groups``) call (the common case for ordered
        streams); False to go item by item."""
        frame = self._one_frame(ts)
        if frame is None:
            return False
        self._fold_into(frame, items)
        return True

    def _one_frame(self, stamps: list[Any]) -> dict[Hashable, Any] | None:
        """The frame every timestamp of ``stamps`` falls in (made if new), None if they span
        several frames, or the frame's windows were all emitted, or (running mode) the running
        window already holds the frame, so each item must update its accumulator too."""
        slide = self.slide
        lo = min(stamps)
        hi = max(stamps)
        fs = lo - lo % slide
        if fs != hi - hi % slide or fs < self._mid:  # _mid is _low but in running mode
            return None
        frame = self.frames.get(fs)
        if frame is None:
            frame = self.frames[fs] = {}
        return frame

    def _fold_into(self, frame: dict[Hashable, Any], items: list[Any]) -> None:
        group_key = self._group_key
        if group_key is not None:
            accumulate_groups = self.op.accumulate_groups
            assert accumulate_groups is not None  # _fold_batches requires it
            accumulate_groups(frame, group_key, items)
            return
        acc = frame.get(None, _MISSING)
        accumulate_all = self.op.accumulate_all
        assert accumulate_all is not None  # _fold_batches requires it
        frame[None] = accumulate_all(self.op.create() if acc is _MISSING else acc, items)

    def _add_to_running(self, key: Hashable, item: Any, new_in_frame: bool) -> None:
        entry = self._running.get(key)
        if entry is None:
            self._running[key] = [self.op.accumulate(self.op.create(), item), 1]
        else:
            entry[0] = self.op.accumulate(entry[0], item)
            if new_in_frame:
                entry[1] += 1

    # -- output ---------------------------------------------------------------------------------

    def try_process_watermark(self, watermark: Watermark) -> bool:
        wm = watermark.timestamp
        if not self._emit_until(wm):
            return False
        # Every window ending at or before wm is done (emitted or empty). Any window skipped
        # as empty leaves the running window empty, so it covers the new range as well.
        slide = self.slide
        next_end = int(wm // slide + 1) * slide
        self._next_end = next_end
        self._low = next_end - self.size
        self._mid = next_end - slide if self._running_mode else self._low
        return self.outbox.offer(watermark)

    def complete(self) -> bool:
        return self._emit_until(_INF)

    def _emit_until(self, wm: float) -> bool:
        """Emit the windows with end <= ``wm``; True once all of them went out."""
        emitter = self._emitter
        if not emitter.flush():
            return False
        budget = emitter.room()
        frames = self.frames
        slide = self.slide
        out: list[Any] = []
        end = self._next_end
        finished = False
        while True:
            if not self._window_has_data(end):
                if not frames:
                    finished = True
                    break
                # skip empty windows: the next one with data ends right after the lowest frame
                first = int(min(frames)) + slide
                end = first if end is None or first > end else end
            assert end is not None  # _window_has_data(None) is False
            if end > wm:
                finished = True
                break
            if len(out) >= budget:
                self._next_end = end  # resume here (a skip over empty windows, or a no-op)
                break
            self._window(end, out)
            end += slide
            self._next_end = end
        if out:
            emitter.emit(out)
        return finished and not emitter.pending

    def _window_has_data(self, end: int | None) -> bool:
        if end is None:
            return False
        if self._running_mode:
            return bool(self._running) or (end - self.slide) in self.frames
        frames = self.frames
        if self._tumbling:
            return (end - self.slide) in frames
        return any(fs in frames for fs in range(end - self.size, end, self.slide))

    def _window(self, end: int, out: list[Any]) -> None:
        """Append the results of window [end - size, end) to ``out`` and advance the state."""
        frames = self.frames
        start = end - self.size
        finish = self.op.finish_fn
        if self._tumbling:
            frame = frames.pop(start, None)
            if frame:
                out += [(end, _new(WindowResult, (start, end, k, finish(a)))) for k, a in frame.items()]
            return
        slide = self.slide
        op = self.op
        if self._running_mode:
            running = self._running
            create, combine, deduct = op.create, op.combine, op.deduct
            assert combine is not None and deduct is not None  # running mode needs both (check_sliding, __init__)
            leading = frames.get(end - slide)
            if leading:
                for k, a in leading.items():
                    entry = running.get(k)
                    if entry is None:
                        running[k] = [combine(create(), a), 1]
                    else:
                        entry[0] = combine(entry[0], a)
                        entry[1] += 1
            value = self._running_value
            out += [(end, _new(WindowResult, (start, end, k, value(e[0])))) for k, e in running.items()]
            trailing = frames.pop(start, None)
            if trailing:
                for k, a in trailing.items():
                    entry = running[k]
                    if entry[1] == 1:
                        del running[k]
                    else:
                        entry[0] = deduct(entry[0], a)
                        entry[1] -= 1
            return
        window = self._recombined(start, end)
        frames.pop(start, None)
        out += [(end, _new(WindowResult, (start, end, k, finish(a)))) for k, a in window.items()]

    def _recombined(self, start: int, end: int) -> dict[Hashable, Any]:
        """Window [start, end) recombined from its frames: key -> a new accumulator (the
        frames' accumulators are left as they are)."""
        frames = self.frames
        create, combine = self.op.create, self.op.combine
        assert combine is not None  # sliding windows and early results have combine (check_sliding)
        window: dict[Hashable, Any] = {}
        get = window.get
        for fs in range(start, end, self.slide):
            frame = frames.get(fs)
            if frame:
                for k, a in frame.items():
                    acc = get(k, _MISSING)
                    window[k] = combine(create() if acc is _MISSING else acc, a)
        return window

    # -- early results ----------------------------------------------------------------------------

    def _early_results(self) -> list[Any]:
        """The current result of every window not closed yet that holds data, in order of end;
        the state is left as it is (each made from a copy, `_recombined`)."""
        frames = self.frames
        if not frames:
            return []
        slide, size, finish = self.slide, self.size, self.op.finish_fn
        end = int(min(frames)) + slide  # the first window end holding the lowest frame
        if self._next_end is not None and self._next_end > end:
            end = self._next_end  # windows ending before were emitted
        last = int(max(frames)) + size
        out: list[Any] = []
        while end <= last:
            start = end - size
            out += [(end, _new(WindowResult, (start, end, k, finish(a)))) for k, a in self._recombined(start, end).items()]
            end += slide
        return out

    # -- snapshots ------------------------------------------------------------------------------

    def _state(self) -> Iterator[tuple[Any, Any]]:
        yield instance_key("SlidingWindowP", self.context), (self._next_end, self._low, self._mid,
                                                             self.late_events_dropped)
        for fs, frame in self.frames.items():
            for key, acc in frame.items():
                yield key, (_FRAME, fs, acc)
        for key, entry in self._running.items():
            yield key, (_RUNNING, entry[0], entry[1])

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():  # results of watermarks before the barrier go first
            return False
        return self._saver.save(self.outbox, self._state)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        mine, every, rest = own_values(inbox, "SlidingWindowP", self.context)
        self._restored[0] += mine
        self._restored[1] += every
        frames, running = self.frames, self._running
        for key, value in rest:
            if value[0] == _FRAME:
                frame = frames.get(value[1])
                if frame is None:
                    frame = frames[value[1]] = {}
                acc = frame.get(key, _MISSING)
                frame[key] = value[2] if acc is _MISSING else self._combined(key, acc, value[2])
            else:
                entry = running.get(key)
                if entry is None:
                    running[key] = [value[1], value[2]]
                else:
                    entry[0] = self._combined(key, entry[0], value[1])
                    self._recount = True

    def _combined(self, key: Hashable, a: Any, b: Any) -> Any:
        combine = self.op.combine
        if combine is None:
            raise JetbenchError(f"vertex {self.context.vertex_name!r}: key {key!r} was restored from two instances "
                                "and the operation has no combine")
        return combine(a, b)

    def finish_snapshot_restore(self) -> bool:
        mine, every = self._restored
        self._restored = [[], []]
        progress = mine or every
        if progress:
            lowest = min(progress, key=_progress_order)
            self._next_end, self._low, self._mid = lowest[0], lowest[1], lowest[2]
            self.late_events_dropped = sum(v[3] for v in mine)
        if self._recount:  # the running window's frame counts, from the frames restored
            self._recount = False
            end = self._next_end
            for key, entry in self._running.items():
                entry[1] = 0 if end is None else sum(
                    1 for fs in range(end - self.size, end - self.slide, self.slide) if key in self.frames.get(fs, ()))
        return True


_FRAME = "frame"
_RUNNING = "running"


def _progress_order(value: list[Any] | tuple[Any, ...]) -> float:
    """Saved window progress by next window end (none yet: lowest)."""
    return -_INF if value[0] is None else float(value[0])


def check_sliding(op: AggregateOperation, window_def: WindowDefinition) -> None:
    if not isinstance(window_def, WindowDefinition) or window_def.kind != "sliding":
        raise JetbenchError(
            f"SlidingWindowP needs a tumbling or sliding window definition, got {window_def!r}"
        )
    if window_def.size <= 0 or window_def.slide <= 0 or window_def.size % window_def.slide:
        raise JetbenchError(
            f"invalid window definition {window_def!r}: size must be a positive multiple of slide"
        )
    if window_def.size != window_def.slide and op.combine is None:
        raise JetbenchError(
            f"{window_def!r} needs an AggregateOperation with combine (a window spans several frames); "
            "only tumbling windows work without it"
        )
    check_early_results(op, window_def)

