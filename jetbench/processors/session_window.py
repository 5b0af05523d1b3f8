"""Session windows: Jet's ``SessionWindowP``, single stage (see
`jetbench.processors.window_aggregate` for the kind, its lateness rule and an example).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from collections.abc import Callable, Hashable, Iterable, Iterator
from itertools import repeat
from operator import itemgetter
from typing import Any, ClassVar

from ..core.errors import JetbenchError
from ..core.inbox import Inbox
from ..core.items import Watermark
from ..core.outbox import Outbox
from ..core.processor import ProcessorContext
from .aggregate_operation import AggregateOperation, adds_one
from .due_keys import DueKeys
from .early_results import EarlyResults, EarlyResultsProcessor
from .emitter import Emitter
from .snapshotting import EntrySaver, instance_key, own_values
from .window_definition import WindowResult, check_window_key

#: a result made as ``_new(WindowResult, (start, end, key, value))``: the named tuple's own
#: ``__new__`` is Python code (a frame and keyword parsing per result), tuple's is C
_new = tuple.__new__
_first = itemgetter(0)
_INF = math.inf


class SessionWindowP(EarlyResultsProcessor):
    """Session windows per key: an event at ``ts`` opens ``[ts, ts + gap)``; overlapping or
    touching sessions merge (``op.combine``). A watermark emits every session with
    ``end <= wm``, ordered by end, then is forwarded. Input comes as ``(ts, item)`` pairs or as
    a stamped chunk's columns (``accepts_stamped``), zipped as they are read.

    Early results (``early_results_ms``, `jetbench.processors.early_results`): every period, the
    current result of each session.

    Snapshots: each key's sessions under the key (back to the instance owning it), and the
    instance's last watermark, late-event counter and deadline heap under a broadcast key. A
    restored instance takes its own (at another parallelism, the lowest last watermark saved);
    sessions of one key from two instances are merged where they overlap or touch.
    """

    snapshot_support: ClassVar[str] = "supported"

    def __init__(
        self, key_fn: Callable[[Any], Hashable] | None, op: AggregateOperation, gap: int | float,
        early_results_ms: int = 0,
    ):
        check_session(op, gap)
        self._early = EarlyResults(early_results_ms)
        self.key_fn = check_window_key(key_fn)
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
        self._early.start(context.clock)

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
                sessions[key] = current = ss
            else:  # another instance's sessions of this key: merged where they overlap or touch
                for start, end, acc in ss:
                    self._merge_into(current, start, end, acc)
                self._merged.add(key)
            self._last[key] = current[-1]

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
        op = self.op
        if self._merge_into(ss, ts, end, op.accumulate(op.create(), item)) == 0:
            # the new earliest session: it ends before the key's deadline entry
            self._deadlines.file(end, key)
        self._last[key] = ss[-1]

    def _merge_into(self, ss: list[list[Any]], start: Any, end: Any, acc: Any) -> int | None:
        """The one session-merge loop: session ``[start, end, acc]`` into a key's sessions
        ``ss`` (sorted by start, disjoint, not touching), merged with every one it overlaps or
        touches (accumulators combined in order of start, ``acc`` last). Returns the index of a
        session added on its own, None when it merged."""
        hi = bisect_right(ss, end, key=_start)  # ss[:hi] start at or before the new end
        lo = hi
        while lo > 0 and ss[lo - 1][1] >= start:
            lo -= 1
        if lo == hi:
            ss.insert(lo, [start, end, acc])
            return lo
        combine = self.op.combine
        assert combine is not None  # sessions merge: check_session requires combine
        merged = ss[lo]
        total = merged[2]
        for other in ss[lo + 1 : hi]:
            total = combine(total, other[2])
        merged[0] = min(merged[0], start)
        merged[1] = max(ss[hi - 1][1], end)
        merged[2] = combine(total, acc)
        del ss[lo + 1 : hi]
        return None

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


    # -- early results ----------------------------------------------------------------------------

    def _early_results(self) -> list[Any]:
        """The current result of every session (none is closed yet), in order of end; each made
        from a copy of its accumulator (``combine(create(), acc)``), the state left as it is. A
        later event may still extend a session or merge it with another."""
        create, combine, finish = self.op.create, self.op.combine, self.op.finish_fn
        assert combine is not None  # check_session
        out = [(s[1], _new(WindowResult, (s[0], s[1], k, finish(combine(create(), s[2])))))
               for k, ss in self.sessions.items() for s in ss]
        out.sort(key=_first)
        return out


def _start(session: list[Any]) -> Any:
    return session[0]


def check_session(op: AggregateOperation, gap: Any) -> None:
    if op.combine is None:
        raise JetbenchError(
            "session windows need an AggregateOperation with combine (sessions merge when an event bridges them)"
        )
    if isinstance(gap, bool) or not isinstance(gap, int | float) or gap <= 0:
        raise JetbenchError(f"session window gap must be a positive number (ms), got {gap!r}")
