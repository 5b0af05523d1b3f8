"""Event-time window aggregation: Jet's ``SlidingWindowP`` (tumbling and sliding) and
``SessionWindowP``, single stage.

Input items are ``(ts, item)`` pairs (event time in ms); watermarks arrive through
``try_process_watermark``. Output items are ``(end, WindowResult(start, end, key, value))`` with
``value = op.finish_fn(acc)`` and ``key = key_fn(item)`` (None without ``key_fn``).

Lateness. A window ``[end - size, end)`` is emitted by the first watermark ``>= end``. An event
is added to the windows that contain it and have not been emitted yet; if all of them have
been emitted, it is dropped and counted in ``late_events_dropped``. A session event at ``ts``
is dropped when ``ts + gap <= `` the last watermark.

>>> from jetbench.core.inbox import Inbox
>>> from jetbench.core.items import Watermark
>>> from jetbench.core.outbox import Outbox
>>> from jetbench.core.processor import ProcessorContext
>>> from jetbench.processors.aggregate_operation import counting
>>> from jetbench.processors.window_definition import tumbling
>>> p = SlidingWindowP(key_fn=None, op=counting(), window_def=tumbling(10))
>>> box = Outbox(ordinal_count=1)
>>> p.init(box, ProcessorContext("window", 0, 0, 1, 1))
>>> p.process(0, Inbox([(1, "a"), (12, "b"), (5, "c")]))
>>> p.try_process_watermark(Watermark(10)), box.take_bucket(0)
(False, [(10, WindowResult(start=0, end=10, key=None, value=2))])
>>> p.try_process_watermark(Watermark(10)), box.pending_watermark
(True, Watermark(10))
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from typing import Any, ClassVar

from ..core.dag import Routing
from ..core.errors import JetbenchError
from ..core.inbox import Inbox
from ..core.items import Watermark
from ..core.outbox import Outbox
from ..core.processor import Processor, ProcessorContext
from .aggregate_operation import (
    AggregateOperation,
    _identity,
    adds_one,
    is_identity,
    require_operation,
)
from .builder_kind import (
    AGGREGATE_IMPORT,
    OP,
    VALUE,
    BuilderError,
    Kind,
    Param,
    Reader,
    operation,
    operation_code,
    read_operation,
    value_fn,
)
from .due_keys import DueKeys
from .emitter import Emitter
from .planning import EventKey, Output, Planner, PlanNode, StageSpec
from .snapshotting import EntrySaver, instance_key, own_values
from .supplier import ProcessorSupplier, made_by
from .window_definition import WindowDefinition, WindowResult, session, sliding, tumbling

_MISSING = object()
#: a result made as ``_new(WindowResult, (start, end, key, value))``: the named tuple's own
#: ``__new__`` is Python code (a frame and keyword parsing per result), tuple's is C
_new = tuple.__new__
_first = itemgetter(0)
_second = itemgetter(1)
_INF = math.inf
#: Accumulator types that cannot change after they were emitted (no defensive copy needed).
_IMMUTABLE = frozenset({int, float, bool, str, bytes, complex, frozenset, type(None)})


def _get_key_fn(key_fn: Callable[[Any], Hashable] | None) -> Callable[[Any], Hashable] | None:
    if key_fn is not None and not callable(key_fn):
        raise JetbenchError(f"window aggregation: key_fn must be callable or None, got {key_fn!r}")
    return key_fn


class SlidingWindowP(Processor):
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
        _check_sliding(op, window_def)
        self.key_fn = _get_key_fn(key_fn)
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

    @property
    def folds_batches(self) -> bool:
        """True when an input batch within one frame is folded at once (``op.accumulate_all``, keyed:
        ``op.accumulate_groups``), not item by item (in running mode: a frame the running window
        does not hold yet)."""
        return self._fold_batches

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        self._emitter = Emitter(outbox)

    def _copy_of(self, acc: Any) -> Any:
        """A mutable accumulator copied through ``combine(create(), acc)``; others as they are."""
        if type(acc) in _IMMUTABLE:
            return acc
        combine = self.op.combine
        assert combine is not None  # only running mode copies: sliding windows have combine (_check_sliding)
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
            assert combine is not None and deduct is not None  # running mode needs both (_check_sliding, __init__)
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
        # recombine all frames of the window
        create, combine = op.create, op.combine
        assert combine is not None  # sliding windows have combine (_check_sliding)
        window: dict[Hashable, Any] = {}
        get = window.get
        for fs in range(start, end, slide):
            frame = frames.get(fs)
            if frame:
                for k, a in frame.items():
                    acc = get(k, _MISSING)
                    window[k] = combine(create() if acc is _MISSING else acc, a)
        frames.pop(start, None)
        out += [(end, _new(WindowResult, (start, end, k, finish(a)))) for k, a in window.items()]


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


def _check_sliding(op: AggregateOperation, window_def: WindowDefinition) -> None:
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


class SessionWindowP(Processor):
    """Session windows per key: an event at ``ts`` opens ``[ts, ts + gap)``; overlapping or
    touching sessions merge (``op.combine``). A watermark emits every session with
    ``end <= wm``, ordered by end, then is forwarded. Input comes as ``(ts, item)`` pairs or as
    a stamped chunk's columns (``accepts_stamped``), zipped as they are read.

    Snapshots: each key's sessions under the key (back to the instance owning it), and the
    instance's last watermark, late-event counter and deadline heap under a broadcast key. A
    restored instance takes its own (at another parallelism, the lowest last watermark saved);
    sessions of one key from two instances are merged where they overlap or touch.
    """

    snapshot_support: ClassVar[str] = "supported"

    def __init__(
        self, key_fn: Callable[[Any], Hashable] | None, op: AggregateOperation, gap: int | float
    ):
        _check_session(op, gap)
        self.key_fn = _get_key_fn(key_fn)
        self.op = op
        self.gap = gap
        #: key -> sessions ``[start, end, acc]`` sorted by start, disjoint and not touching.
        self.sessions: dict[Hashable, list[list[Any]]] = {}
        #: key -> its last session (``sessions[key][-1]``, the same list): the in-order path
        #: reads it with one lookup and no hop through the key's list of sessions
        self._last: dict[Hashable, list[Any]] = {}
        #: each key filed under a time at or before its earliest session's end (at least once)
        self._deadlines = DueKeys()
        self._last_wm: float = -_INF
        #: at or after every timestamp taken so far (so after every session's events): a batch
        #: in order from here on takes the in-order loop (`_in_order`)
        self._latest: Any = -_INF
        self.late_events_dropped = 0
        self.accepts_stamped = True  # a stamped chunk is read as its columns (and pairs as pairs)
        self._saver = EntrySaver()
        self._restored: list[list[Any]] = [[], []]  # instance entries restored: this instance's, every one's
        self._merged: set[Hashable] = set()  # keys whose sessions came from two instances

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        self._emitter = Emitter(outbox)

    # -- snapshots ------------------------------------------------------------------------------

    def _state(self) -> Iterator[tuple[Any, Any]]:
        deadlines = self._deadlines
        yield instance_key("SessionWindowP", self.context), (self._last_wm, self.late_events_dropped,
                                                             deadlines.times, deadlines.due)
        yield from self.sessions.items()

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():  # sessions closed before the barrier go first
            return False
        return self._saver.save(self.outbox, self._state)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        mine, every, rest = own_values(inbox, "SessionWindowP", self.context)
        self._restored[0] += mine
        self._restored[1] += every
        sessions = self.sessions
        for key, ss in rest:
            current = sessions.get(key)
            if current is None:
                sessions[key] = ss
            else:
                sessions[key] = ss = self._merge_sessions(sorted(current + ss, key=_start))
                self._merged.add(key)
            self._last[key] = ss[-1]

    def _merge_sessions(self, ss: list[list[Any]]) -> list[list[Any]]:
        combine = self.op.combine
        assert combine is not None  # _check_session requires it
        merged: list[list[Any]] = []
        for s in ss:
            if merged and s[0] <= merged[-1][1]:
                last = merged[-1]
                last[1] = max(last[1], s[1])
                last[2] = combine(last[2], s[2])
            else:
                merged.append(s)
        return merged

    def finish_snapshot_restore(self) -> bool:
        mine, every = self._restored
        self._restored = [[], []]
        if mine and len(mine) == 1:  # this very instance: its deadlines, so ties close in the same order
            self._last_wm, self.late_events_dropped, self._deadlines.times, self._deadlines.due = mine[0]
        elif mine or every:
            self._last_wm = min(v[0] for v in (mine or every))
            self.late_events_dropped = sum(v[1] for v in mine)
        covered = set(self._deadlines.keys())
        # a session's end is after each of its events' timestamps
        self._latest = max((ss[-1][1] for ss in self.sessions.values()), default=-_INF)
        for key, ss in self.sessions.items():
            if key not in covered or key in self._merged:
                self._deadlines.file(ss[0][1], key)
        self._merged = set()
        return True

    # -- input ----------------------------------------------------------------------------------

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if inbox.stamped:
            # columns: (ts, key, item) per event made in C, the keys by map over the items column
            # (a C-level key function, such as an attribute getter, then costs no call per event)
            stamps, items = inbox.take_stamped()
            if not stamps:
                return
            key_fn = self.key_fn
            keys: Iterable[Any] = repeat(None) if key_fn is None else map(key_fn, items)
            if adds_one(self.op):  # counting looks at no item: (ts, key) pairs are enough
                if self._in_order(stamps):
                    self._count_in_order(zip(stamps, keys))  # noqa: B905 - as long (Stamped)
                else:
                    self._count_keyed(zip(stamps, keys))  # noqa: B905 - as long (Stamped)
            else:  # (no in-order loop for other operations: `_latest` is not kept for them)
                self._add_keyed(zip(stamps, keys, items))  # noqa: B905 - as long (Stamped)
        else:
            pairs = inbox.take()
            if pairs:
                if adds_one(self.op):  # counting: a later stamped batch may take the in-order loop
                    self._note_latest(max(map(_first, pairs)))
                self._add_pairs(pairs)

    def _note_latest(self, top: Any) -> None:
        if top > self._latest:
            self._latest = top

    def _in_order(self, stamps: list[Any]) -> bool:
        """Whether a batch's timestamps never decrease, from at or after every timestamp taken
        before and with none late (noting its latest timestamp either way). Each event of such a
        batch is at or after every event of its key's sessions: it joins the key's last session
        or opens one after it, and its end is the session's new end."""
        first, top = stamps[0], stamps[-1]
        if first >= self._latest and first + self.gap > self._last_wm and sorted(stamps) == stamps:
            self._latest = top
            return True
        self._note_latest(max(stamps))
        return False

    # The loops below are one loop over the input forms, kept apart because either form costs
    # more through the other's (measured on Q11: pairs made into triples by map, or columns
    # zipped into pairs and keyed in the loop, 2.5-8 % more instructions for the job), and
    # counting over columns (`_count_keyed`) apart again, as it reads no item: a change to one
    # goes into the others. What is rare (a new key, an out-of-order event) is
    # in `_first_session` and `_insert`.

    def _add_keyed(self, events: Iterable[tuple[Any, Hashable, Any]]) -> None:
        """Each ``(ts, key, item)`` into its key's sessions (the in-order path inline)."""
        tail = self._last.get
        gap = self.gap
        last_wm = self._last_wm
        create = self.op.create
        accumulate = self.op.accumulate
        counts = adds_one(self.op)  # counting: an in-order event adds one in place, no call
        late = 0
        for ts, key, item in events:
            end = ts + gap
            if end <= last_wm:
                late += 1
                continue
            last = tail(key)
            if last is None:
                self._first_session(key, ts, end, item)
            elif ts >= last[0]:  # in-order fast path: only the last session can be touched
                last_end = last[1]
                if ts <= last_end:
                    if end > last_end:
                        last[1] = end
                    if counts:
                        last[2] += 1
                    else:
                        last[2] = accumulate(last[2], item)
                else:  # not the earliest session: the key's deadline entry already covers it
                    self._last[key] = last = [ts, end, accumulate(create(), item)]
                    self.sessions[key].append(last)
            else:
                self._insert(key, ts, end, item)
        if late:
            self.late_events_dropped += late

    def _count_keyed(self, events: Iterable[tuple[Any, Hashable]]) -> None:
        """`_add_keyed` for counting (`adds_one`: the item is never looked at), over ``(ts,
        key)`` pairs: an in-order event adds one to its key's last session in place."""
        lasts = self._last
        gap = self.gap
        last_wm = self._last_wm
        late = 0
        for ts, key in events:
            end = ts + gap
            if end <= last_wm:
                late += 1
                continue
            try:  # a subscript the interpreter specialises, where .get is a call
                last = lasts[key]
            except KeyError:  # a new key (or all its sessions closed)
                self._first_session(key, ts, end, None)
                continue
            if ts >= last[0]:  # in-order fast path: only the last session can be touched
                last_end = last[1]
                if ts <= last_end:
                    if end > last_end:
                        last[1] = end
                    last[2] += 1
                else:  # not the earliest session: the key's deadline entry already covers it
                    lasts[key] = last = [ts, end, self.op.accumulate(self.op.create(), None)]
                    self.sessions[key].append(last)
            else:
                self._insert(key, ts, end, None)
        if late:
            self.late_events_dropped += late

    def _count_in_order(self, events: Iterable[tuple[Any, Hashable]]) -> None:
        """`_count_keyed` for a batch `_in_order` found in order: no late check, no start
        check, no compare of ends."""
        lasts = self._last
        gap = self.gap
        for ts, key in events:
            try:
                last = lasts[key]
            except KeyError:
                self._first_session(key, ts, ts + gap, None)
                continue
            if ts <= last[1]:
                last[1] = ts + gap
                last[2] += 1
            else:  # after the last session: a new one (the key's deadline entry covers it)
                lasts[key] = last = [ts, ts + gap, self.op.accumulate(self.op.create(), None)]
                self.sessions[key].append(last)

    def _add_pairs(self, pairs: list[tuple[Any, Any]]) -> None:
        """`_add_keyed` over ``(ts, item)`` pairs, the key of each item made in the loop."""
        tail = self._last.get
        gap = self.gap
        last_wm = self._last_wm
        key_fn = self.key_fn
        create = self.op.create
        accumulate = self.op.accumulate
        counts = adds_one(self.op)
        late = 0
        for ts, item in pairs:
            end = ts + gap
            if end <= last_wm:
                late += 1
                continue
            key = None if key_fn is None else key_fn(item)
            last = tail(key)
            if last is None:
                self._first_session(key, ts, end, item)
            elif ts >= last[0]:
                last_end = last[1]
                if ts <= last_end:
                    if end > last_end:
                        last[1] = end
                    if counts:
                        last[2] += 1
                    else:
                        last[2] = accumulate(last[2], item)
                else:
                    self._last[key] = last = [ts, end, accumulate(create(), item)]
                    self.sessions[key].append(last)
            else:
                self._insert(key, ts, end, item)
        if late:
            self.late_events_dropped += late

    def _first_session(self, key: Hashable, ts: Any, end: Any, item: Any) -> None:
        """The first session of a key (new, or all its sessions closed)."""
        op = self.op
        self._last[key] = last = [ts, end, op.accumulate(op.create(), item)]
        self.sessions[key] = [last]
        self._deadlines.file(end, key)

    def _insert(self, key: Hashable, ts: Any, end: Any, item: Any) -> None:
        """Out-of-order event: merge with every session it overlaps or touches."""
        ss = self.sessions[key]
        self._insert_into(key, ss, ts, end, item)
        self._last[key] = ss[-1]

    def _insert_into(self, key: Hashable, ss: list[list[Any]], ts: Any, end: Any, item: Any) -> None:
        op = self.op
        hi = bisect_right(ss, end, key=_start)  # ss[:hi] start at or before the new end
        lo = hi
        while lo > 0 and ss[lo - 1][1] >= ts:
            lo -= 1
        if lo == hi:
            ss.insert(lo, [ts, end, op.accumulate(op.create(), item)])
            if lo == 0:  # the new earliest session: it ends before the key's deadline entry
                self._deadlines.file(end, key)
            return
        merged = ss[lo]
        acc = merged[2]
        combine = op.combine
        assert combine is not None  # sessions merge: _check_session requires combine
        for other in ss[lo + 1 : hi]:
            acc = combine(acc, other[2])
        merged[0] = min(merged[0], ts)
        merged[1] = max(ss[hi - 1][1], end)
        merged[2] = op.accumulate(acc, item)
        del ss[lo + 1 : hi]

    def try_process_watermark(self, watermark: Watermark) -> bool:
        wm = watermark.timestamp
        if wm > self._last_wm:
            self._last_wm = wm
            self._close(wm)
        if not self._emitter.flush():
            return False
        return self.outbox.offer(watermark)

    def complete(self) -> bool:
        if self.sessions:
            self._close(_INF)
        return self._emitter.flush()

    def _close(self, wm: float) -> None:
        """Remove every session with end <= ``wm`` and hand its result to the emitter."""
        deadlines = self._deadlines
        sessions = self.sessions
        finish = self.op.finish_fn
        closed: list[tuple[Any, Hashable, list[Any]]] = []
        seen: set[Hashable] = set()
        times, due = deadlines.times, deadlines.due
        while times and times[0] <= wm:
            for key in due.pop(heapq.heappop(times)):  # the earliest time's keys (see `DueKeys`)
                if key in seen:
                    continue
                seen.add(key)
                ss = sessions.get(key)
                if ss is None:
                    continue
                n = 0
                for s in ss:
                    if s[1] > wm:
                        break
                    closed.append((s[1], key, s))
                    n += 1
                if n == len(ss):
                    del sessions[key]
                    del self._last[key]
                else:
                    del ss[:n]
                    deadlines.file(ss[0][1], key)
        if closed:
            closed.sort(key=_first)  # stable: ties keep the order they were collected in
            self._emitter.emit([(e, _new(WindowResult, (s[0], e, k, finish(s[2])))) for e, k, s in closed])


def _start(session: list[Any]) -> Any:
    return session[0]


def _check_session(op: AggregateOperation, gap: Any) -> None:
    if op.combine is None:
        raise JetbenchError(
            "session windows need an AggregateOperation with combine (sessions merge when an event bridges them)"
        )
    if isinstance(gap, bool) or not isinstance(gap, int | float) or gap <= 0:
        raise JetbenchError(f"session window gap must be a positive number (ms), got {gap!r}")


def window_processor(key_fn: Callable[[Any], Hashable] | None, op: AggregateOperation,
                     window_def: WindowDefinition) -> Processor:
    """`SessionWindowP` or `SlidingWindowP`, by ``window_def.kind``."""
    if window_def.kind == "session":
        return SessionWindowP(key_fn, op, window_def.gap)
    return SlidingWindowP(key_fn, op, window_def)


def window_aggregate(
    key_fn: Callable[[Any], Hashable] | None,
    op: AggregateOperation,
    window_def: WindowDefinition,
) -> ProcessorSupplier:
    """A vertex supplier aggregating ``(ts, item)`` pairs into windows; emits
    ``(end, WindowResult(start, end, key, value))`` as watermarks pass window ends."""
    _get_key_fn(key_fn)
    op = require_operation(op, "window_aggregate()")
    kind = getattr(window_def, "kind", None)
    if kind == "sliding":
        _check_sliding(op, window_def)
    elif kind == "session":
        _check_session(op, window_def.gap)
    else:
        raise JetbenchError(f"window_aggregate: unknown window definition {window_def!r}")
    keyed = "" if key_fn is None else ", keyed"
    return ProcessorSupplier(window_processor, key_fn, op, window_def, label=f"window_aggregate({window_def!r}{keyed})")


# -- in the Pipeline API ------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowAggregateSpec(StageSpec):
    """``stage.window(w).aggregate(op)`` (or grouped first): `WindowResult` items per window.

    Planning: keyed, one vertex behind an edge partitioned by the item's key; global, one
    vertex of parallelism 1 behind an all-to-one edge. Watermarks are throttled to the window's
    frame (`frame_size`).
    """

    key_fn: Callable[[Any], Hashable] | None
    op: AggregateOperation
    window: WindowDefinition
    kind: ClassVar[str] = "window_aggregate"
    uses_watermarks: ClassVar[bool] = True

    @property
    def frame_size(self) -> int | None:
        return self.window.frame_size

    def plan(self, planner: Planner, node: PlanNode) -> None:
        supplier = window_aggregate(self.key_fn, self.op, self.window)
        if self.key_fn is None:
            vertex = planner.vertex(node.name, supplier, 1)
            planner.connect(node.upstream[0], vertex, routing=Routing.ALL_TO_ONE)
        else:
            vertex = planner.vertex(node.name, supplier, node.local_parallelism)
            planner.connect(node.upstream[0], vertex, routing=Routing.PARTITIONED, key_fn=EventKey(self.key_fn))
        planner.produce(node, Output(vertex, True))


# -- in the DAG builder ---------------------------------------------------------------------------


def _window_def(p: dict[str, Any]) -> WindowDefinition:
    kind = p.get("window")
    if kind == "tumbling":
        return tumbling(p["size"])
    if kind == "sliding":
        return sliding(p["size"], p["slide"])
    if kind == "session":
        return session(p["gap"])
    raise BuilderError(f"unknown window kind {kind!r}")


def _window_code(p: dict[str, Any]) -> str:
    if p.get("window") == "sliding":
        return f"window.sliding({p['size']}, {p['slide']})"
    if p.get("window") == "session":
        return f"window.session({p['gap']})"
    return f"window.tumbling({p['size']})"


def _read(supplier: Any, reader: Reader) -> dict[str, Any] | None:
    if not made_by(supplier, window_processor):
        return None
    wd: WindowDefinition = supplier.window_def
    params = read_operation(supplier.op, reader)
    params["key"] = reader.optional(supplier.key_fn, "key")
    if wd.kind == "session":
        params.update(window="session", gap=wd.gap)
    else:
        params.update(window="tumbling" if wd.is_tumbling else "sliding", size=wd.size, slide=wd.slide)
    return params


BUILDER_KINDS = (
    Kind("window", "window aggregate", "window", True, True,
         (Param("window", "choice", "tumbling", choices=("tumbling", "sliding", "session")),
          Param("size", "int", 1000, minimum=0, strict=True, when=("window", ("tumbling", "sliding")), help="ms"),
          Param("slide", "int", 1000, minimum=0, strict=True, when=("window", ("sliding",)), help="ms (sliding)"),
          Param("gap", "int", 1000, minimum=0, strict=True, when=("window", ("session",)), help="ms (session)"),
          Param("key", "code", "", optional=True, help="grouping key (empty: one global window)"), OP, VALUE),
         lambda p, f, ns: window_aggregate(f.get("key"), operation(p["op"], value_fn(p, f)), _window_def(p)),
         lambda p, f: (f"window_aggregate({f.get('key')}, {operation_code(p['op'], value_fn(p, f))}, {_window_code(p)})",
                       {"from jetbench.processors.window_aggregate import window_aggregate", AGGREGATE_IMPORT,
                        "from jetbench import window"}),
         "aggregates (ts, item) pairs per window", read=_read),
)
