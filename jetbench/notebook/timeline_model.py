"""What the notebook timeline draws: a job's recorded calls and parks, a lane per worker, cut to
a window of time and bounded for the browser.

A `LaneBuffer` holds one worker's events in time order (from a finished `Trace`, or appended
tick by tick from a running job's rings by `LiveFeed`) with what the drawing derives from them:
the snapshot barriers (a tasklet's call that leaves ``EMIT_BARRIER`` has sent its barrier on).
`TimelineModel.state` cuts every lane to the window asked for and sends each call and park of it
when a lane holds at most ``max_events`` there; beyond that (zoomed out over a busy worker) it
sends ``buckets`` aggregates per lane instead: calls, busy time, time in calls without progress,
parked time, slow calls and the vertex that was busiest in each. So what goes to the browser is
bounded (a few hundred kB at most) however long the recording and however busy the workers.

>>> from jetbench.core.trace import TraceEvent
>>> e = [TraceEvent("w0", "call", 0, 40_000, tasklet="src#0", vertex="src", progress=True, done=False,
...                 items_in=0, items_out=8, state="PROCESS"),
...      TraceEvent("w0", "park", 40_000, 90_000, strategy="backoff", asked_ns=50_000, idle_round=1, woken=False)]
>>> lane = LaneBuffer("w0", "cooperative"); lane.add(e, {})
>>> s = TimelineModel("demo", slow_ns=1_000_000).state([lane], (0, 100_000), origin_ns=0)
>>> s["lanes"][0]["mode"], s["lanes"][0]["calls"], s["lanes"][0]["parks"]
('events', [[0.0, 40.0, 0, 1, 0, 0, 8, 0]], [[40.0, 50.0, 50.0, 0, 1, 0, 0]])
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from typing import Any

from ..core.trace import RingReader, Trace, TracedWorker, TraceEvent

#: at most this many events of one lane in the window are sent one by one; more are aggregated
MAX_EVENTS = 1500
#: the aggregates (buckets) a lane is cut into across the window when it holds more
BUCKETS = 600
#: the states of a snapshot's phase 1 and 2 (a call moving into one of them is part of a snapshot)
SNAPSHOT_STATES = frozenset({"SAVE_SNAPSHOT", "SNAPSHOT_COMMIT_PREPARE", "EMIT_BARRIER", "SNAPSHOT_COMMIT_FINISH",
                             "WAIT_FOR_SNAPSHOT_COMPLETED"})

# the bits of a call's flags
PROGRESS, SLOW, DONE, SNAPSHOT = 1, 2, 4, 8


class LaneBuffer:
    """One worker's events in time order, with their start times (to cut a window by bisection),
    the columns the aggregates are computed from (numpy, over a window at a time) and the barrier
    marks derived from them: ``(time ns, tasklet)`` where a tasklet sent a snapshot barrier on
    (the end of its call that left ``EMIT_BARRIER``)."""

    def __init__(self, worker: str, kind: str, dropped: int = 0):
        self.worker = worker
        self.kind = kind
        self.dropped = dropped
        self.events: list[TraceEvent] = []
        self.starts: list[int] = []
        self.ends: list[int] = []
        #: per event: 1 a call (3 with progress), 0 a park, 4 a park inside a call
        self.codes: list[int] = []
        #: per event: the vertex (an index into `vertices`; -1 for a park)
        self.vertex_codes: list[int] = []
        self.vertices: list[str] = []
        self._vertex_code: dict[str, int] = {}
        self.marks: list[tuple[int, str]] = []

    def add(self, events: Iterable[TraceEvent], last_state: dict[str, str]) -> None:
        """Append ``events`` (later than those held); ``last_state`` is each tasklet's state after
        its previous call, shared by the lanes (a stolen tasklet moves between them)."""
        for e in events:
            if e.kind == "call":
                code = 3 if e.progress else 1
                vertex = e.vertex or ""
                v = self._vertex_code.get(vertex)
                if v is None:
                    v = self._vertex_code[vertex] = len(self.vertices)
                    self.vertices.append(vertex)
            else:
                code, v = (4 if e.in_call else 0), -1
            columns = (self.events, self.starts, self.ends, self.codes, self.vertex_codes)
            values = (e, e.start_ns, e.end_ns, code, v)
            if self.starts and e.start_ns < self.starts[-1]:  # a call holding the parks just before it
                k = bisect.bisect_right(self.starts, e.start_ns)
                for column, value in zip(columns, values, strict=True):
                    column.insert(k, value)  # type: ignore[attr-defined]
            else:
                for column, value in zip(columns, values, strict=True):
                    column.append(value)  # type: ignore[attr-defined]
            if e.kind == "call" and e.tasklet is not None:
                if last_state.get(e.tasklet) == "EMIT_BARRIER" and e.state != "EMIT_BARRIER":
                    self.marks.append((e.end_ns, e.tasklet))
                last_state[e.tasklet] = e.state or ""

    def trim(self, before_ns: int) -> None:
        """Forget the events that started before ``before_ns`` (a live view's horizon)."""
        k = bisect.bisect_left(self.starts, before_ns)
        if k > 0:
            del self.events[:k], self.starts[:k], self.ends[:k], self.codes[:k], self.vertex_codes[:k]
            m = bisect.bisect_left(self.marks, (before_ns, ""))
            del self.marks[:m]

    def span(self, t0: int, t1: int) -> tuple[int, int]:
        """``(i0, i1)``: the events ``i0 <= i < i1`` hold every event overlapping ``[t0, t1]``
        (those before ``i0`` ended before ``t0``; a few at the start may have too)."""
        first = bisect.bisect_left(self.starts, t0)
        i0 = first
        # before t0 and still going at t0: the event just before, or a call holding parks inside it
        for k in range(first - 1, max(-1, first - 65), -1):
            if self.ends[k] >= t0:
                i0 = k
        return i0, bisect.bisect_right(self.starts, t1)

    def window(self, t0: int, t1: int) -> Sequence[TraceEvent]:
        """The events overlapping ``[t0, t1]``."""
        i0, i1 = self.span(t0, t1)
        return [e for e in self.events[i0:i1] if e.end_ns >= t0]

    @property
    def first_ns(self) -> int | None:
        return self.starts[0] if self.starts else None

    @property
    def last_ns(self) -> int | None:
        return max(self.ends[-3:]) if self.ends else None


def buffers_of(trace: Trace) -> list[LaneBuffer]:
    """A `LaneBuffer` per lane of a finished ``trace``."""
    last_state: dict[str, str] = {}
    out = []
    for lane in trace.lanes:
        buffer = LaneBuffer(lane.worker, lane.kind, lane.dropped)
        buffer.add(lane.events, last_state)
        out.append(buffer)
    return out


class LiveFeed:
    """The lanes of a running job, read tick by tick from its workers' rings (`RingReader`), kept
    for ``keep_ns`` back from the newest event."""

    def __init__(self, workers: Sequence[TracedWorker], keep_ns: int):
        self.keep_ns = keep_ns
        self.readers = [RingReader(w) for w in workers]
        self.lanes = [LaneBuffer(w.thread.name, w.kind) for w in workers]
        self._last_state: dict[str, str] = {}

    def poll(self) -> None:
        """Take in what each worker recorded since the last poll; forget what is out of reach."""
        newest = 0
        for reader, lane in zip(self.readers, self.lanes, strict=True):
            lane.add(reader.read(), self._last_state)
            lane.dropped = reader.missed  # what this view could not read in time, not the ring's own drops
            last = lane.last_ns
            if last is not None and last > newest:
                newest = last
        if newest:
            for lane in self.lanes:
                lane.trim(newest - self.keep_ns)


def _us(ns: float) -> float:
    return round(ns / 1000, 2)


class TimelineModel:
    """Cuts lanes to a window and bounds them (see the module's docstring). Vertices, tasklets
    and states are sent as indexes into lists that only grow, so a vertex keeps its colour."""

    def __init__(self, job_name: str, slow_ns: int, vertices: Sequence[str] = (), max_events: int = MAX_EVENTS,
                 buckets: int = BUCKETS):
        self.job_name = job_name
        self.slow_ns = slow_ns
        self.max_events = max_events
        self.buckets = buckets
        self.vertices: list[str] = []
        self.tasklets: list[str] = []
        self.states: list[str] = []
        self.strategies: list[str] = []
        self._index: dict[tuple[str, str], int] = {}
        for v in vertices:
            self._of("vertex", v)

    def _of(self, table: str, name: str | None) -> int:
        key = (table, name or "")
        k = self._index.get(key)
        if k is None:
            names = {"vertex": self.vertices, "tasklet": self.tasklets, "state": self.states,
                     "strategy": self.strategies}[table]
            k = self._index[key] = len(names)
            names.append(name or "")
        return k

    def state(self, lanes: Sequence[LaneBuffer], window: tuple[int, int], origin_ns: int,
              **extra: Any) -> dict[str, Any]:
        """The drawing of ``lanes`` over ``window`` (clock ns), times in µs from ``origin_ns``."""
        t0, t1 = window
        t1 = max(t1, t0 + 1)
        firsts = [x for x in (lane.first_ns for lane in lanes) if x is not None]
        lasts = [x for x in (lane.last_ns for lane in lanes) if x is not None]
        out_lanes = [self._lane(lane, t0, t1, origin_ns) for lane in lanes]
        state: dict[str, Any] = {
            "job": self.job_name,
            "window": [_us(t0 - origin_ns), _us(t1 - origin_ns)],
            "extent": [_us(min(firsts) - origin_ns), _us(max(lasts) - origin_ns)] if firsts else None,
            "slow_us": _us(self.slow_ns),
            "lanes": out_lanes,
            "vertices": list(self.vertices),
            "tasklets": list(self.tasklets),
            "states": list(self.states),
            "strategies": list(self.strategies),
        }
        state.update(extra)
        return state

    def _lane(self, lane: LaneBuffer, t0: int, t1: int, origin: int) -> dict[str, Any]:
        i0, i1 = lane.span(t0, t1)
        marks = [[_us(t - origin), self._of("tasklet", name)] for t, name in
                 lane.marks[bisect.bisect_left(lane.marks, (t0, "")):bisect.bisect_right(lane.marks, (t1, "\uffff"))]]
        out: dict[str, Any] = {"worker": lane.worker, "kind": lane.kind, "dropped": lane.dropped, "marks": marks}
        slow_ns = self.slow_ns if lane.kind == "cooperative" else None
        if i1 - i0 > self.max_events + 64:  # surely too many: aggregate without making the list
            out.update(mode="buckets", count=i1 - i0, **self._buckets(lane, i0, i1, t0, t1, slow_ns))
            return out
        events = [e for e in lane.events[i0:i1] if e.end_ns >= t0]
        out["count"] = len(events)
        if len(events) <= self.max_events:
            calls, parks = [], []
            for e in events:
                if e.kind == "call":
                    flags = (PROGRESS if e.progress else 0) | (DONE if e.done else 0)
                    if slow_ns is not None and e.duration_ns > slow_ns:
                        flags |= SLOW
                    if e.state in SNAPSHOT_STATES:
                        flags |= SNAPSHOT
                    calls.append([_us(e.start_ns - origin), _us(e.duration_ns), self._of("vertex", e.vertex), flags,
                                  self._of("tasklet", e.tasklet), e.items_in or 0, e.items_out or 0,
                                  self._of("state", e.state)])
                else:
                    parks.append([_us(e.start_ns - origin), _us(e.duration_ns), _us(e.asked_ns or 0),
                                  1 if e.woken else 0, e.idle_round or 0, self._of("strategy", e.strategy),
                                  1 if e.in_call else 0])
            out.update(mode="events", calls=calls, parks=parks)
            return out
        out.update(mode="buckets", **self._buckets(lane, i0, i1, t0, t1, slow_ns))
        return out

    def _buckets(self, lane: LaneBuffer, i0: int, i1: int, t0: int, t1: int,
                 slow_ns: int | None) -> dict[str, Any]:
        """Events ``i0:i1`` of ``lane`` in `buckets` aggregates across ``[t0, t1]``: per bucket
        ``[index, calls, calls with progress, busy µs, busy µs without progress, parked µs,
        parks, slow calls, busiest vertex]`` (the buckets holding anything). An event is counted
        in the bucket it starts in, its time in each bucket it spans; a park inside a call is
        that call's time."""
        import numpy as np

        n = self.buckets
        width = (t1 - t0) / n
        starts = np.asarray(lane.starts[i0:i1], dtype=np.int64)
        ends = np.asarray(lane.ends[i0:i1], dtype=np.int64)
        codes = np.asarray(lane.codes[i0:i1], dtype=np.int64)
        vcodes = np.asarray(lane.vertex_codes[i0:i1], dtype=np.int64)
        keep = (ends >= t0) & (codes != 4)
        starts, ends, codes, vcodes = starts[keep], ends[keep], codes[keep], vcodes[keep]
        s = np.clip(starts, t0, t1) - t0
        f = np.clip(ends, t0, t1) - t0
        b0 = np.minimum((s / width).astype(np.int64), n - 1)
        b1 = np.minimum((f / width).astype(np.int64), n - 1)
        call = (codes & 1) == 1
        progress = codes == 3
        park = codes == 0
        counts = {
            "calls": np.bincount(b0[call], minlength=n),
            "progress": np.bincount(b0[progress], minlength=n),
            "parks": np.bincount(b0[park], minlength=n),
            "slow": (np.bincount(b0[call & ((ends - starts) > slow_ns)], minlength=n) if slow_ns is not None
                     else np.zeros(n, dtype=np.int64)),
        }
        # time per bucket: an event within one bucket at once, the few spanning several one by one
        local = np.asarray([self._of("vertex", name) for name in lane.vertices] or [0], dtype=np.int64)
        n_vertices = max(len(self.vertices), 1)
        busy = np.zeros(n)
        idle_busy = np.zeros(n)
        parked = np.zeros(n)
        by_vertex = np.zeros(n * n_vertices)
        single = b0 == b1
        dur = (f - s).astype(np.float64)
        for mask, target in ((call & single, busy), (call & single & ~progress, idle_busy), (park & single, parked)):
            target += np.bincount(b0[mask], weights=dur[mask], minlength=n)
        cs = call & single
        by_vertex += np.bincount(b0[cs] * n_vertices + local[vcodes[cs]], weights=dur[cs], minlength=n * n_vertices)
        for k in np.flatnonzero(~single):
            for b in range(int(b0[k]), int(b1[k]) + 1):
                part = min(float(f[k]), (b + 1) * width) - max(float(s[k]), b * width)
                if part <= 0:
                    continue
                if call[k]:
                    busy[b] += part
                    if not progress[k]:
                        idle_busy[b] += part
                    by_vertex[b * n_vertices + local[vcodes[k]]] += part
                elif park[k]:
                    parked[b] += part
        top = by_vertex.reshape(n, n_vertices)
        busiest = np.where(top.max(axis=1) > 0, top.argmax(axis=1), -1)
        shown = np.flatnonzero(counts["calls"] + counts["parks"] + (busy > 0) + (parked > 0))
        columns = [shown, counts["calls"][shown], counts["progress"][shown], np.round(busy[shown] / 1000, 2),
                   np.round(idle_busy[shown] / 1000, 2), np.round(parked[shown] / 1000, 2), counts["parks"][shown],
                   counts["slow"][shown], busiest[shown]]
        rows = [list(row) for row in zip(*(c.tolist() for c in columns), strict=True)]
        return {"bucket_us": _us(width), "buckets": rows}
