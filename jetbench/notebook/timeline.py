"""The timeline of a job's workers in the notebook: every tasklet call and park, a lane per worker.

``job.timeline()`` while the job runs draws it live over a sliding window (``window_s``, 2 s by
default), recording from then on if the job was not submitted with ``ExecutionService(trace=True)``;
once the job has ended, and for ``trace.timeline()``, it draws the whole recording, still. Calls
are bars coloured by vertex, faded when they made no progress, marked red on top when slower
than the slow-call threshold; parks are the gaps between them, labelled with how long they slept;
a snapshot barrier sent on is a purple mark. Hover shows a call's or park's details; the wheel
zooms around the pointer, a drag pans, a double click (or Fit) shows everything, Live follows
the running job again. ``window=(start_s, end_s)`` opens it on that stretch (seconds from the
job's start).

The kernel owns the data and the browser asks it for each window (`TimelineSource.command`):
`jetbench.notebook.timeline_model` sends each event of a lane when the window holds at most
`~jetbench.notebook.timeline_model.MAX_EVENTS` of them, else per-lane aggregates, so zooming out
over seconds of a busy job stays a bounded message. The dashboard's Timeline tab draws the same
state with the same front-end code (``widgets/src/timeline_view.js``).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import anywidget
import traitlets

from ..core.errors import JetbenchError
from ..core.trace import DEFAULT_TRACE_CAPACITY, Trace, TraceError
from ._assets import asset_text
from .timeline_model import BUCKETS, MAX_EVENTS, LaneBuffer, LiveFeed, TimelineModel, buffers_of

#: the slow-call threshold of a trace without a job to ask (Jet's rule of thumb: 1 ms)
DEFAULT_SLOW_NS = 1_000_000
#: the share of a core a live timeline's ticks may take: a tick that cost more spaces the next
#: ones out (reading a busy job's new events and cutting them to a window costs tens of ms), up to
#: `MAX_TICK_S` apart
CPU_BUDGET = 0.2
#: the longest a live timeline goes without a tick, whatever its cost
MAX_TICK_S = 2.0


def _to_json(state: dict[str, Any], _widget: Any) -> str:
    return json.dumps(state, separators=(",", ":"), allow_nan=False)


def _check_number(argument: str, value: object, low: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > low:
        raise JetbenchError(f"{argument} must be a number > {low:g}, got {value!r}")
    return float(value)


class TimelineSource:
    """What a timeline view shows and how it answers the browser: a finished `Trace`, or a
    running job read live (`LiveFeed`), its window and whether it follows the newest events.

    Used by `Timeline` and by the dashboard's Timeline tab; thread-safe (a live view's ticks
    and the browser's commands come on different threads)."""

    def __init__(self, source: Any, window_s: float = 2.0, slow_ms: float | None = None,
                 max_events: int = MAX_EVENTS, buckets: int = BUCKETS, keep_s: float | None = None,
                 window: tuple[float, float] | None = None):
        self._lock = threading.Lock()
        self.window_ns = int(_check_number("window_s", window_s, 0) * 1e9)
        self.job: Any = None
        self.feed: LiveFeed | None = None
        self._started: list[Any] = []  # workers this view started recording (stopped with it)
        self._next_tick = 0.0  # `tick`: not before then (monotonic s)
        trace: Trace | None
        if isinstance(source, Trace):
            trace = source
            slow_ns = DEFAULT_SLOW_NS
            vertices: list[str] = []
        else:
            self.job = job = source
            service = getattr(job, "service", None)
            slow_ns = getattr(service, "slow_call_ns", DEFAULT_SLOW_NS)
            vertices = list(dict.fromkeys(t.vertex_name for t in job.tasklets))
            trace = None if not job.is_done else self._finished_trace(job)
        if slow_ms is not None:
            slow_ns = int(_check_number("slow_ms", slow_ms, 0) * 1e6)
        name = trace.job_name if trace is not None else self.job.name
        self.model = TimelineModel(name, slow_ns, vertices, max_events=max_events, buckets=buckets)
        if trace is not None:
            self.lanes: list[LaneBuffer] = buffers_of(trace)
            self.note = trace.dropped_note()
            self.follow = False
        else:
            job = self.job
            capacity = DEFAULT_TRACE_CAPACITY
            for w in job.workers:
                if w.trace_events is None:
                    w.start_trace(capacity)
                    self._started.append(w)
            keep = int(_check_number("keep_s", keep_s, 0) * 1e9) if keep_s is not None else max(4 * self.window_ns,
                                                                                               10 * 10**9)
            self.feed = LiveFeed(job.workers, keep)
            self.lanes = self.feed.lanes
            self.note = None
            self.follow = True
        if self.job is not None:  # times from the job's start, as its dashboard counts them
            self.origin_ns = round(self.job.start_time * 1e9)
        else:
            self.origin_ns = min((lane.first_ns for lane in self.lanes if lane.first_ns is not None), default=0)
        self.view = self._extent() if not self.follow else self._following()
        if window is not None:  # seconds from the job's start (a trace's first event)
            if not (isinstance(window, tuple | list) and len(window) == 2
                    and all(isinstance(x, int | float) and not isinstance(x, bool) for x in window)
                    and window[0] < window[1]):
                raise JetbenchError(f"window must be (start_s, end_s) with start_s < end_s, got {window!r}")
            self.view = (self.origin_ns + round(window[0] * 1e9), self.origin_ns + round(window[1] * 1e9))
            self.follow = False

    @staticmethod
    def _finished_trace(job: Any) -> Trace:
        if not any(w.trace_events is not None for w in job.workers):
            raise TraceError(
                f"job.timeline(): job {job.name!r} has ended ({job.status.value}) without recording a trace, so "
                "there is nothing to draw; submit it on ExecutionService(trace=True) and call job.timeline() "
                "once it ends, or call job.timeline() while it runs (it records from then on)")
        return job.trace()

    # -- what is shown ---------------------------------------------------------------------------

    @property
    def live(self) -> bool:
        return self.feed is not None and self.job is not None and not self.job.is_done

    def _extent(self) -> tuple[int, int]:
        firsts = [x for x in (lane.first_ns for lane in self.lanes) if x is not None]
        lasts = [x for x in (lane.last_ns for lane in self.lanes) if x is not None]
        if not firsts:
            return self.origin_ns, self.origin_ns + self.window_ns
        return min(firsts), max(max(lasts), min(firsts) + 1)

    def _following(self) -> tuple[int, int]:
        # the newest event read, not the clock: the lanes are read one after the other, and each
        # reads only what its worker had recorded by then
        now = self._extent()[1] if any(lane.events for lane in self.lanes) else self.job.clock.monotonic_ns()
        return now - self.window_ns, now

    def poll(self) -> None:
        """Take in a running job's new events (nothing for a finished trace)."""
        if self.feed is not None:
            with self._lock:
                self.feed.poll()

    def tick(self, interval_s: float, force: bool = False) -> dict[str, Any] | None:
        """A live view's tick: the new events taken in and the state drawn, unless the last tick
        was less than ``interval_s`` ago, or than its own CPU cost over `CPU_BUDGET` (None then);
        ``force`` ticks now (the job's end, a tab just opened)."""
        now = time.monotonic()
        if not force and now < self._next_tick:
            return None
        cpu0 = time.thread_time()
        self.poll()
        state = self.state()
        self._next_tick = now + min(max(interval_s, (time.thread_time() - cpu0) / CPU_BUDGET), MAX_TICK_S)
        return state

    def state(self) -> dict[str, Any]:
        with self._lock:
            if self.follow and self.feed is not None:
                self.view = self._following()
            live = self.live
            status = self.job.status.value if self.job is not None else "recorded"
            return self.model.state(self.lanes, self.view, self.origin_ns, live=live, follow=self.follow,
                                    status=status, note=self.note, final=not live)

    def command(self, content: dict[str, Any]) -> bool:
        """Apply the browser's ``{cmd: "view", t0, t1}`` (µs from the origin), ``{cmd: "fit"}`` or
        ``{cmd: "follow"}``; True if the view changed."""
        cmd = content.get("cmd")
        with self._lock:
            if cmd == "view":
                try:
                    t0 = self.origin_ns + int(float(content["t0"]) * 1000)
                    t1 = self.origin_ns + int(float(content["t1"]) * 1000)
                except (KeyError, TypeError, ValueError):
                    return False
                if t1 <= t0:
                    return False
                self.view, self.follow = (t0, t1), False
                return True
            if cmd == "fit":
                self.view, self.follow = self._extent(), False
                return True
            if cmd == "follow" and self.feed is not None:
                self.follow = True
                if not self.live:  # the job has ended: its last window
                    self.view = self._following()
                return True
        return False

    def stop(self) -> None:
        """Stop the recordings this view started (a job traced from its submission keeps its own)."""
        for w in self._started:
            if self.job is not None and not self.job.is_done:
                w.stop_trace()
        self._started = []


class Timeline(anywidget.AnyWidget):
    """A lane per worker of a job (dedicated threads too): its calls and parks, zoomable; live
    while the job runs (see the module's docstring). ``Timeline(job)`` or ``Timeline(trace)``;
    ``job.timeline()`` and ``trace.timeline()`` make one."""

    _esm = asset_text("timeline_view.js") + "\n" + asset_text("timeline.js")
    _css = asset_text("timeline.css")

    #: the whole drawing as one JSON string, replaced per tick (live) or per zoom and pan
    state = traitlets.Dict().tag(sync=True, to_json=_to_json)

    def __init__(self, source: Any, window_s: float = 2.0, interval_s: float = 0.5, slow_ms: float | None = None,
                 max_events: int = MAX_EVENTS, buckets: int = BUCKETS, window: tuple[float, float] | None = None,
                 **kwargs: Any):
        self.interval_s = _check_number("interval_s", interval_s, 0.02)
        self.source = TimelineSource(source, window_s, slow_ms, max_events, buckets, window=window)
        super().__init__(**kwargs)
        self.on_msg(self._on_msg)
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self.ticks = 0
        if self.source.live:
            self.source.poll()
            self._publish()
            self._thread = threading.Thread(target=self._run, name=f"jetbench.{self.source.job.name}.timeline",
                                            daemon=True)
            self._thread.start()
        else:
            self._publish()

    def _publish(self) -> None:
        self.ticks += 1
        self.state = self.source.state()

    def _run(self) -> None:
        job = self.source.job
        try:
            while not self._closing.wait(self.interval_s):
                if job.is_done:  # still from now on: the whole recording kept, unless zoomed elsewhere
                    self.source.poll()
                    if self.source.follow:
                        self.source.command({"cmd": "fit"})
                    self._publish()
                    snapshot = getattr(self, "_snapshot", None)
                    if snapshot is not None:
                        snapshot.update()
                    return
                state = self.source.tick(self.interval_s)
                if state is not None:
                    self.ticks += 1
                    self.state = state
        finally:
            self.source.stop()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the live view's thread (it ends right after the job, or on `close`)."""
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def close(self) -> None:
        if hasattr(self, "_closing"):
            self._closing.set()
            self.join()
        super().close()

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and self.source.command(content):
            self._publish()

    def _ipython_display_(self) -> None:
        """``display(timeline)`` (or a cell ending in one): the live widget and, right after it, a
        static copy (`timeline_static`: an SVG of the same lanes) that the live widget hides and
        a notebook opened again without a kernel shows instead of "model not found"; refreshed
        when the job ends, so a saved notebook holds the finished recording."""
        from .widget_fallback import Shown, display_with_snapshot

        self._snapshot = display_with_snapshot(
            Shown(self._repr_mimebundle_()), self.snapshot_html, "timeline",
            f"The timeline of job {self.source.model.job_name!r} as last drawn (a static copy: zoom, pan "
            "and hover need a running kernel).")

    def snapshot_html(self) -> str:
        """The drawing now shown, as a static SVG."""
        from .timeline_static import timeline_svg

        return timeline_svg(self.state or {})

    def __repr__(self) -> str:
        return f"Timeline({self.source.model.job_name!r}, live={self.source.live})"


def timeline(source: Any, **kwargs: Any) -> Timeline:
    """``job.timeline()`` and ``trace.timeline()``: a `Timeline` of ``source`` (a `Job` or a `Trace`)."""
    return Timeline(source, **kwargs)
