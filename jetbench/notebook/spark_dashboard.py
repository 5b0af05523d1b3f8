"""The live dashboard of a job running on Spark (``job.dashboard()`` on a
`jetbench.spark.spark_job.SparkJob`): one row per Spark stage, as sparkmonitor shows them.

Each row: the stage's id (a link to its page in the embedded Spark UI on 127.0.0.1, when the UI
runs), its name (the Spark action's name jetbench gives it: the job and the jetbench stages it
runs), a bar, tasks done / running / total, its state and duration; above them the job's line
with the Spark UI's link, and a Cancel button (``job.cancel()``; heard while a cell waits in
``join()`` or ``run()``, as the local dashboard's is: `jetbench.notebook.kernel_wait`).

A sampler thread of its own (``jetbench.<job>.spark-dashboard``) reads ``job.metrics()`` every
``interval_s`` and sets the view once per tick (one comm message); when the job ends it shows the
job's frozen final state and exits. `SparkDashboard.state` is what the view shows, as data.
"""

from __future__ import annotations

import threading
from typing import Any

import ipywidgets

from .spark_progress import status_html

__all__ = ["SparkDashboard", "dashboard_state"]

#: The fastest refresh allowed (5 Hz): each tick asks Spark's status tracker over Py4J.
MIN_INTERVAL_S = 0.2


def dashboard_state(status: Any) -> dict[str, Any]:
    """A `SparkRunStatus` as the dashboard's data: the job's line and one dict per stage."""
    return {
        "job": status.job,
        "status": status.status,
        "final": status.final,
        "elapsed_s": round(status.elapsed_s, 3),
        "summary": status.summary(),
        "ui_url": status.ui_url,
        "rows": [{"stage": s.stage_id, "name": s.name, "done": s.done, "running": s.running, "failed": s.failed,
                  "total": s.total, "state": s.state,
                  "duration_s": None if s.duration_s is None else round(s.duration_s, 3),
                  "url": status.stage_url(s.stage_id)} for s in status.stages],
    }


class SparkDashboard(ipywidgets.VBox):
    """Live view of a `SparkJob`'s Spark stages, with a Cancel button; ``interval_s`` is the
    refresh period (default 0.5 s)."""

    def __init__(self, job: Any, interval_s: float = 0.5, **kwargs: Any):
        if not (isinstance(interval_s, int | float) and interval_s >= MIN_INTERVAL_S):
            raise ValueError(f"interval_s must be a number >= {MIN_INTERVAL_S}, got {interval_s!r}")
        self.job = job
        self.interval_s = float(interval_s)
        self.ticks = 0
        self.state: dict[str, Any] = {}
        self.view = ipywidgets.HTML()
        self.cancel_button = ipywidgets.Button(description="Cancel", button_style="danger",
                                               tooltip="cancel the job's Spark jobs")
        self.cancel_button.on_click(lambda _button: self.cancel())
        super().__init__([self.cancel_button, self.view], **kwargs)
        self.add_class("jb-spark-dashboard")
        self._wake = threading.Event()
        self._closing = False
        self._thread: threading.Thread | None = None
        if job.is_done:
            self._publish()
        else:
            self._publish()  # the first state at once: the view never starts empty
            self._thread = threading.Thread(target=self._run, name=f"jetbench.{job.name}.spark-dashboard", daemon=True)
            self._thread.start()
            job.add_done_listener(lambda _job: self._wake.set())

    @property
    def is_sampling(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def cancel(self) -> None:
        """Cancel the job (the view then freezes with its final state)."""
        self.job.cancel()
        self._wake.set()

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
        if hasattr(self, "_wake"):
            self.stop()
        super().close()

    def __repr__(self) -> str:
        return f"SparkDashboard({self.job!r}, interval_s={self.interval_s:g}, ticks={self.ticks})"

    def _publish(self) -> bool:
        """Show the job's state now; True once it is the final one."""
        done = self.job.is_done
        status = self.job.metrics()  # read after is_done: an ended job's is its final state
        self.state = dashboard_state(status)
        self.view.value = status_html(status)
        if done:
            self.cancel_button.disabled = True
        self.ticks += 1
        return done

    def _run(self) -> None:
        try:
            while not self._closing:
                self._wake.wait(self.interval_s)
                self._wake.clear()
                if self._closing or self._publish():
                    return
        except Exception as exc:  # keep the kernel alive; say why the view stopped
            self.view.value += f"<div>dashboard sampler stopped: {type(exc).__name__}: {exc}</div>"
