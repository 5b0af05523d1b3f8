"""The notebook's progress line for ``run()`` / ``job.join()`` (see `jetbench.notebook.progress`).

`ProgressLine` is a one-line anywidget (status, elapsed, sources' and sinks' counts, items/s and
a "dashboard" button); `ProgressView` holds it and, when the button is pressed, the job's full
`Dashboard` below it. The waiting thread sets the line's state (one comm message a refresh); the
button's message reaches the kernel while the cell still waits because the wait lets widget
messages through (`jetbench.notebook.kernel_wait`). Every command is acknowledged, so the front
end can tell when the kernel is too busy to hear it.
"""

from __future__ import annotations

import json
from typing import Any

import anywidget
import ipywidgets
import traitlets

from ._assets import asset_text
from .job_counts import JobCounts, rate_text, restart_note, summary


def _state_to_json(state: dict[str, Any], _widget: Any) -> str:
    return json.dumps(state, separators=(",", ":"), allow_nan=False)


class ProgressLine(anywidget.AnyWidget):
    """One line of a job's progress; frozen (``final``) once the job has ended."""

    _esm = asset_text("progress.js")
    _css = asset_text("progress.css")

    state = traitlets.Dict().tag(sync=True, to_json=_state_to_json)
    #: whether the dashboard is open below the line
    dashboard_open = traitlets.Bool(False).tag(sync=True)

    def __init__(self, counts: JobCounts, **kwargs: Any):
        super().__init__(**kwargs)
        self.text = ""
        self.on_dashboard: Any = None
        self.on_msg(self._on_msg)
        self.set_counts(counts, None)

    def set_counts(self, c: JobCounts, rate: float | None, final: bool = False) -> None:
        live = None if final else rate
        self.text = summary(c, live)
        self.state = {
            "job": c.job,
            "status": c.status,
            "final": bool(final),
            "elapsed_s": round(c.elapsed_s, 2),
            "sources_out": c.sources_out,
            "sinks_in": c.sinks_in,
            "sources": list(c.sources),
            "sinks": list(c.sinks),
            "rate": round(c.average_rate if live is None else live, 1),
            "rate_text": rate_text(c, live),
            "restart": restart_note(c),
            "lag": c.lag,
            "error": c.error,
            "error_vertex": c.error_vertex,
            "text": self.text,
        }

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        if content.get("cmd") == "dashboard" and self.on_dashboard is not None:
            self.on_dashboard(bool(content.get("open", True)))
        if "id" in content:
            self.send({"ack": content["id"]})


class ProgressView(ipywidgets.VBox):
    """The progress line of ``job``, and its dashboard below it once asked for."""

    def __init__(self, job: Any, counts: JobCounts, **kwargs: Any):
        self.job = job
        self.line = ProgressLine(counts)
        self.dashboard: Any = None
        super().__init__(children=[self.line], **kwargs)
        self.add_class("jetbench-progress-view")
        self.line.on_dashboard = self.show_dashboard

    def show_dashboard(self, show: bool = True) -> Any:
        """Open (or close) the job's full dashboard below the line; returns it."""
        if show:
            if self.dashboard is None:
                self.dashboard = self.job.dashboard()
            self.children = [self.line, self.dashboard]
        else:
            self.children = [self.line]
        self.line.dashboard_open = show
        return self.dashboard

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        if isinstance(bundle, dict) and self.line.text:  # what a viewer without widgets shows
            bundle["text/plain"] = self.line.text
        return bundle
