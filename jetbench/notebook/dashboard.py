"""The live job dashboard: an anywidget fed by its own sampler thread.

The observer lives on its own thread (``jetbench.<job>.dashboard``): every ``interval_s`` it
takes one metrics snapshot, turns it into the whole dashboard state (`DashboardModel`, bounded
in size however many tasklets) and sets the ``state`` trait once: one comm message per tick,
never one per item or call. When the job ends it publishes a last, frozen state (status,
elapsed, error and vertex on failure) and exits. Commands from the front end go to the job
(also while a cell waits in ``job.join()`` or ``run()``: `jetbench.notebook.kernel_wait`)
through its API: the idle bounds through ``job.service.set_idle`` (applied to running workers
at their next park), the idle strategy through ``job.service.set_idle_strategy`` when the service
has one, cancel through ``job.cancel()``, suspend and resume (a job with a processing guarantee)
through ``job.suspend()`` / ``job.resume()``. Such a job's state also carries its snapshot
figures (last snapshot id, age, duration, size; snapshots taken; restarts) and, while a snapshot
is in flight, where its barrier is on each edge of the queue view and each tasklet's snapshot state.

Its Timeline tab draws the job's workers call by call (`jetbench.notebook.timeline`): opening it
starts a `TimelineSource` (recording from then on, unless the job records already), which the
sampler thread feeds and publishes in the ``timeline`` trait at each tick while the tab is open.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import anywidget
import traitlets

from ._assets import asset_text
from .dashboard_model import DashboardModel
from .plots import register_dashboard
from .timeline import TimelineSource

#: The fastest refresh the dashboard allows (20 Hz); the default is 5 Hz.
MIN_INTERVAL_S = 0.05
#: The Timeline tab's refresh while it is open (2 Hz at most): cutting the recording to a window
#: costs more than a metrics tick, so it has a CPU budget of its own (`jetbench.notebook.timeline`)
TIMELINE_INTERVAL_S = 0.5


def _state_to_json(state: dict[str, Any], _widget: Any) -> str:
    return json.dumps(state, separators=(",", ":"), allow_nan=False)


class Dashboard(anywidget.AnyWidget):
    """Live view of a running `Job`: tasklets, queues, CPU; idle-floor and cancel controls.

    ``Dashboard(job)`` (or ``job.dashboard()``) shows it inline; ``side=True`` opens it in a
    JupyterLab side panel (``sidecar`` package). ``interval_s`` is the refresh period (default
    0.2 s = 5 Hz); above ``max_rows`` tasklets the table shows one row per vertex. If one tick
    costs more CPU than ``cpu_budget`` (2 % of a core) allows at that rate, ticks are spaced out.
    """

    _esm = asset_text("timeline_view.js") + "\n" + asset_text("dashboard.js")
    _css = asset_text("dashboard.css") + "\n" + asset_text("timeline.css")

    #: the whole view, replaced once per tick by the sampler thread. It travels as one JSON
    #: string: ipywidgets would otherwise walk every number of the histories looking for binary
    #: buffers, which was most of a tick's cost.
    state = traitlets.Dict().tag(sync=True, to_json=_state_to_json)
    #: idle bounds of the job's ExecutionService; setting either (from Python or the front end)
    #: applies it to the running workers at once
    min_idle_us = traitlets.Float(0.0).tag(sync=True)
    max_idle_us = traitlets.Float(0.0).tag(sync=True)
    #: the Timeline tab's drawing (`jetbench.notebook.timeline`), or ``{"error": ...}`` when the
    #: job cannot be drawn; empty until the tab is first opened
    timeline = traitlets.Dict().tag(sync=True, to_json=_state_to_json)
    #: the last control error (e.g. a rejected idle value), "" if none
    control_error = traitlets.Unicode("").tag(sync=True)
    #: what a control did beside what was asked (the max raised to a new min), "" if nothing
    control_note = traitlets.Unicode("").tag(sync=True)

    def __init__(self, job: Any, interval_s: float = 0.2, side: bool = False, max_rows: int = 40,
                 cpu_budget: float = 0.02, **kwargs: Any):
        if not (isinstance(interval_s, int | float) and interval_s >= MIN_INTERVAL_S):
            raise ValueError(f"interval_s must be a number >= {MIN_INTERVAL_S}, got {interval_s!r}")
        self.job = job
        self.interval_s = float(interval_s)
        #: the sampler's CPU budget (fraction of a core): when a tick costs more than
        #: ``cpu_budget * interval_s`` (a very large DAG), ticks are spaced out to stay within it
        self.cpu_budget = cpu_budget
        self.effective_interval_s = self.interval_s
        self.ticks = 0
        self.sampler_cpu_s = 0.0
        self._model = DashboardModel(job, max_rows=max_rows)
        self._timeline: TimelineSource | None = None
        self._timeline_open = False
        self._syncing = False
        self._closing = False
        self._wake = threading.Event()
        self._side = bool(side)
        self._displaying = False
        self.sidecar: Any = None
        idle = getattr(getattr(job, "service", None), "idle", None)
        if idle is not None:
            kwargs.setdefault("min_idle_us", idle.min_idle_us)
            kwargs.setdefault("max_idle_us", idle.max_idle_us)
        self._syncing = True  # initial values come from the service: nothing to apply
        try:
            super().__init__(**kwargs)
        finally:
            self._syncing = False
        self.on_msg(self._on_msg)
        register_dashboard(job, self)
        self._thread: threading.Thread | None = None
        if job.is_done:
            self._publish(final=True)
        else:
            self._thread = threading.Thread(target=self._run, name=f"jetbench.{job.name}.dashboard", daemon=True)
            self._publish(final=False)  # the first state at once: the view never starts empty
            self._thread.start()
            job.add_done_listener(lambda _job: self._wake.set())
        if side:
            self.show_side()

    # -- public --------------------------------------------------------------------------------

    @property
    def history(self) -> list[dict[str, Any]]:
        """One dict per tick (t, process_cpu, workers, rate, fill...), for `plot_metrics`."""
        return self._model.history

    @property
    def is_sampling(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def set_idle(self, min_idle_us: float | None = None, max_idle_us: float | None = None) -> None:
        """Apply idle bounds to the job's execution service now, and show what was applied."""
        service = getattr(self.job, "service", None)
        if service is None:
            self.control_error = "this job has no execution service to tune"
            return
        idle = getattr(service, "idle", None)
        max_before = getattr(idle, "max_idle_us", None)
        try:
            service.set_idle(min_idle_us=min_idle_us, max_idle_us=max_idle_us)
        except Exception as exc:
            self.control_error = str(exc)
        else:
            self.control_error = ""
            max_after = getattr(idle, "max_idle_us", None)
            raised = max_idle_us is None and max_before is not None and max_after != max_before
            self.control_note = f"max idle raised to {max_after:g} µs: it is never below min idle" if raised else ""
        self._sync_idle_traits()

    def set_strategy(self, strategy: str) -> None:
        """Switch the idle strategy of the running workers, if the service can (``set_idle_strategy``)."""
        setter = getattr(getattr(self.job, "service", None), "set_idle_strategy", None)
        if not callable(setter):
            self.control_error = "this execution service cannot change its idle strategy while a job runs"
            return
        try:
            setter(strategy)
        except Exception as exc:
            self.control_error = str(exc)
        else:
            self.control_error = ""

    def cancel(self) -> None:
        """Cancel the job (its threads and this dashboard's sampler then end)."""
        self.job.cancel()

    def suspend(self) -> None:
        """Suspend the job (``job.suspend()``: a terminal snapshot, then its threads end); a job
        without a processing guarantee, or not running, leaves the reason in ``control_error``.
        The sampler goes on: the view shows the status "suspended" until `resume`."""
        self._lifecycle_call("suspend")

    def resume(self) -> None:
        """Resume a suspended job from its terminal snapshot (``job.resume()``)."""
        self._lifecycle_call("resume")

    def _lifecycle_call(self, name: str) -> None:
        method = getattr(self.job, name, None)
        if not callable(method):
            self.control_error = f"job {self.job.name!r} has no processing guarantee: it cannot {name}"
            return
        try:
            method()
        except Exception as exc:
            self.control_error = str(exc)
        else:
            self.control_error = ""
        self._wake.set()  # show the new status now, not at the next tick

    def join(self, timeout: float | None = None) -> None:
        """Wait for the sampler thread (it ends right after the job, or on `stop`)."""
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def stop(self) -> None:
        """Stop sampling (the view keeps its last state); the job goes on."""
        self._closing = True
        self._wake.set()
        self.join()

    def close(self) -> None:
        if hasattr(self, "_wake"):  # not when __init__ failed early (close runs from __del__)
            self.stop()
        timeline = getattr(self, "_timeline", None)
        if timeline is not None:
            timeline.stop()
        super().close()

    def show_side(self, title: str | None = None) -> Any:
        """Show this dashboard in a JupyterLab side panel (``sidecar``); returns the Sidecar."""
        from IPython.display import display
        from sidecar import Sidecar

        self._side = True
        self.sidecar = Sidecar(title=title or f"jetbench · {self.job.name}")
        self._displaying = True
        try:
            with self.sidecar:
                display(self)
        finally:
            self._displaying = False
        return self.sidecar

    def _ipython_display_(self) -> None:
        """``display(dashboard)`` (or a cell ending in one): the live dashboard and, right after it,
        a static snapshot (the job's status and a table per vertex) that the live dashboard hides
        and a notebook opened again without a kernel shows instead of "model not found"; it is
        refreshed when the job ends, so a saved notebook holds the final figures."""
        from IPython.display import display

        if self._side:  # in the side panel the widget itself; inline, its placeholder line
            display(self._repr_mimebundle_(), raw=True)
            return
        from .widget_fallback import Shown, display_with_snapshot

        self._snapshot = display_with_snapshot(
            Shown(self._repr_mimebundle_()), self.snapshot_html, "dashboard",
            f"The dashboard of job {self.job.name!r} as last seen (a static copy: the live one needs a running kernel).")

    def snapshot_html(self) -> str:
        """The last state as static HTML: status and totals, then a row per vertex (and one per
        partition a source reads, with its lag)."""
        import html

        s = self.state or {}
        totals = s.get("totals") or {}
        by_vertex: dict[str, list[int]] = {}
        for r in s.get("rows") or []:
            row = by_vertex.setdefault(str(r.get("vertex")), [0, 0, 0])
            row[0] += int(r.get("n", 1) or 1)
            row[1] += int(r.get("in") or 0)
            row[2] += int(r.get("out") or 0)
        cells = "".join(f"<tr><td>{html.escape(v)}</td><td>{n}</td><td>{i:,}</td><td>{o:,}</td></tr>"
                        for v, (n, i, o) in by_vertex.items())
        head = (f"<b>jetbench · {html.escape(str(s.get('job', self.job.name)))}</b> · {html.escape(str(s.get('status', '')))}"
                f" · {s.get('elapsed_s', 0)} s · sources emitted {totals.get('sources_out', 0):,}"
                f" · sinks received {totals.get('sinks_in', 0):,}")
        if totals.get("lag") is not None:
            head += f" · lag {totals['lag']:,} records"
        parts = "".join(
            f"<tr><td>{html.escape(str(r.get('vertex')))} #{r.get('instance')}</td><td>{html.escape(str(r.get('partition')))}</td>"
            + "".join(f"<td>{'' if r.get(k) is None else format(r[k], ',')}</td>" for k in ("offset", "high", "lag"))
            + "</tr>" for r in s.get("partitions") or [])
        partitions = (f"<table><thead><tr><th>source</th><th>partition</th><th>offset</th><th>high</th><th>lag</th>"
                      f"</tr></thead><tbody>{parts}</tbody></table>") if parts else ""
        return (f"<div>{head}</div><table><thead><tr><th>vertex</th><th>instances</th><th>in</th><th>out</th>"
                f"</tr></thead><tbody>{cells}</tbody></table>{partitions}")

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        if self._side and not self._displaying:  # already in the side panel: no second copy inline
            return {"text/plain": f"jetbench dashboard of job {self.job.name!r} (in the side panel)"}
        return super()._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        return f"Dashboard({self.job!r}, interval_s={self.interval_s:g}, ticks={self.ticks})"

    # -- sampler thread ------------------------------------------------------------------------

    def _publish_timeline(self, final: bool = False, force: bool = False) -> None:
        """The Timeline tab's state, if it is open: at most every `TIMELINE_INTERVAL_S` and within
        its own CPU budget (`jetbench.notebook.timeline.CPU_BUDGET`), apart from the metrics
        ticks' budget; ``final`` (the job has ended) draws the whole recording, still."""
        source = self._timeline
        if source is None or not self._timeline_open:
            return
        if final and source.follow:
            source.command({"cmd": "fit"})
        state = source.tick(TIMELINE_INTERVAL_S, force=force or final)
        if state is not None:
            self.timeline = state

    def open_timeline(self) -> None:
        """Open the Timeline tab's feed (what the tab does when first shown)."""
        self._timeline_open = True
        if self._timeline is None:
            try:
                self._timeline = TimelineSource(self.job)
            except Exception as exc:  # an ended job that recorded nothing: the tab says how to get one
                self.timeline = {"error": str(exc)}
                return
        self._publish_timeline(final=self.job.is_done, force=True)

    def _publish(self, final: bool) -> None:
        state = self._model.update(final=final)
        state["interval_s"] = self.effective_interval_s
        state["sampler_cpu_s"] = round(self.sampler_cpu_s, 4)
        self.ticks += 1
        self.state = state  # one trait change = one comm message

    def _run(self) -> None:
        cpu0 = time.thread_time()
        next_tick = time.monotonic()
        tick_cpu = 0.0  # smoothed CPU seconds per tick
        try:
            while not self._closing:
                interval = self.interval_s
                if self.cpu_budget and tick_cpu > self.cpu_budget * interval:
                    interval = tick_cpu / self.cpu_budget
                self.effective_interval_s = interval
                next_tick += interval
                now = time.monotonic()
                if next_tick < now:  # fell behind (a slow tick): don't burst to catch up
                    next_tick = now + interval
                self._wake.wait(next_tick - now)
                self._wake.clear()  # an early wake (suspend, resume) is used once; the job's end is seen below
                if self._closing:
                    return
                done = self.job.is_done
                c0 = time.thread_time()
                self._publish(final=done)
                c1 = time.thread_time()
                tick_cpu = (c1 - c0) if not tick_cpu else 0.8 * tick_cpu + 0.2 * (c1 - c0)
                self._publish_timeline(final=done)  # its own budget, not the metrics ticks'
                self.sampler_cpu_s = time.thread_time() - cpu0
                if done:
                    snapshot = getattr(self, "_snapshot", None)
                    if snapshot is not None:
                        snapshot.update()
                    return
        except Exception as exc:  # keep the kernel alive; say why the view stopped
            self.control_error = f"dashboard sampler stopped: {type(exc).__name__}: {exc}"
        finally:
            self.sampler_cpu_s = time.thread_time() - cpu0

    # -- front end -> kernel -------------------------------------------------------------------

    @traitlets.observe("min_idle_us", "max_idle_us")
    def _idle_changed(self, change: dict[str, Any]) -> None:
        if self._syncing:
            return
        self.set_idle(**{change["name"]: change["new"]})

    def _sync_idle_traits(self) -> None:
        idle = getattr(getattr(self.job, "service", None), "idle", None)
        if idle is None:
            return
        self._syncing = True
        try:
            self.min_idle_us = idle.min_idle_us
            self.max_idle_us = idle.max_idle_us
        finally:
            self._syncing = False

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        cmd = content.get("cmd")
        if cmd == "cancel":
            self.cancel()
        elif cmd == "suspend":
            self.suspend()
        elif cmd == "resume":
            self.resume()
        elif cmd == "set_strategy":
            self.set_strategy(str(content.get("strategy")))
        elif cmd == "set_idle":
            self.set_idle(content.get("min_idle_us"), content.get("max_idle_us"))
        elif cmd == "tab":
            if content.get("tab") == "timeline":
                self.open_timeline()
            else:
                self._timeline_open = False
        elif (cmd == "timeline" and isinstance(content.get("sub"), dict) and self._timeline is not None
              and self._timeline.command(content["sub"])):
            self.timeline = self._timeline.state()
        # every command (and the "ping" after a slider's trait change) carries an id: saying it
        # arrived lets the view tell a kernel too busy to hear it (a cell running that does not
        # wait through jetbench) from one that acted
        if "id" in content:
            self.send({"ack": content["id"]})
