"""The progress of a `jetbench.spark.SparkRunner` job while ``run()`` or ``job.join()`` waits for
it: Spark's own jobs, stages and tasks (done / running / total, from ``SparkContext.statusTracker()``,
read by `jetbench.spark.spark_status`) and a link to the embedded Spark UI on 127.0.0.1 when it runs.

In a notebook, a live widget: the line, and below it one row per Spark stage (`status_html`: its
id linking to its Spark UI page, its name, a bar, tasks done / running / total, state, duration),
as sparkmonitor shows them; frozen into the final state when the job ends. In a terminal, a tqdm
bar over the tasks. Like the local executor's progress (`jetbench.notebook.progress`, whose
settings and switches apply: ``progress=False``, ``JETBENCH_PROGRESS=0``), it appears only once
the job has run ``delay_s`` and is refreshed every ``interval_s`` by the waiting thread, between
two slices of its wait: `jetbench.notebook.progress.reporter_for` gives a Spark job
(`jetbench.spark.spark_job.SparkJob`, whose ``runs_on`` is ``"spark"``) one of these.
"""

from __future__ import annotations

import contextlib
import html
import sys
import time
from typing import Any

__all__ = ["SparkNotebookReporter", "SparkReporter", "SparkTqdmReporter", "status_html"]


class SparkReporter:
    """Shows one Spark job's progress (``job.metrics()`` gives its `SparkRunStatus`); `tick` is
    called by the waiting thread between slices of its wait, `close` when the wait ends (after an
    interrupt or a timeout the job may still run: the view is frozen when it ends)."""

    def __init__(self, job: Any, interval_s: float, delay_s: float):
        self.job = job
        self.interval_s = interval_s
        self.delay_s = delay_s
        self.shown = False
        self.closed = False
        self.ticks = 0
        self._next = time.monotonic()

    def tick(self) -> None:
        now = time.monotonic()
        if now < self._next or self.closed:
            return
        self._next = now + self.interval_s
        if not self.shown and self.job.elapsed < self.delay_s:
            return
        status = self.job.metrics()
        if not self.shown:
            self.shown = True
            self.show(status)
        else:
            self.update(status)
        self.ticks += 1

    def close(self, finished: bool = True) -> None:
        """The wait ended: freeze the view into the job's final state now, or when it ends."""
        if self.closed:
            return
        if not self.shown:
            self.closed = True
            return
        self.job.add_done_listener(lambda _job: self._finish())

    def _finish(self) -> None:
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(Exception):  # never let a view break the job's ending
            self.finish(self.job.metrics())

    def show(self, status: Any) -> None:
        raise NotImplementedError

    def update(self, status: Any) -> None:
        raise NotImplementedError

    def finish(self, status: Any) -> None:
        raise NotImplementedError


class SparkTqdmReporter(SparkReporter):
    """A tqdm bar on stderr over the Spark tasks of the run (its total grows as stages appear)."""

    def __init__(self, job: Any, interval_s: float, delay_s: float, file: Any = None):
        super().__init__(job, interval_s, delay_s)
        self.file = file
        self.bar: Any = None

    def show(self, status: Any) -> None:
        from tqdm import tqdm

        self.bar = tqdm(desc=f"Spark {status.job}", unit=" tasks", file=self.file or sys.stderr, mininterval=0,
                        dynamic_ncols=True, leave=True, total=status.tasks_total)
        self.update(status)

    def update(self, status: Any) -> None:
        bar = self.bar
        bar.total = max(status.tasks_total, status.tasks_done)
        done = sum(s.finished for s in status.stages)
        postfix = f"stages {done}/{len(status.stages)}"
        if status.tasks_running:
            postfix += f" · {status.tasks_running} running"
        if status.ui_url:
            postfix += f" · Spark UI {status.ui_url}"
        bar.set_postfix_str(postfix, refresh=False)
        bar.update(status.tasks_done - bar.n)

    def finish(self, status: Any) -> None:
        self.update(status)
        self.bar.set_description(f"Spark {status.job} {status.status}", refresh=False)
        self.bar.close()


class SparkNotebookReporter(SparkReporter):
    """The live widget in a notebook cell: the line and a row per Spark stage (`status_html`)."""

    def __init__(self, job: Any, interval_s: float, delay_s: float):
        super().__init__(job, interval_s, delay_s)
        self.widget: Any = None
        self.text = ""

    def show(self, status: Any) -> None:
        import ipywidgets
        from IPython.display import display

        self.widget = ipywidgets.HTML()
        self.update(status)
        display(self.widget)

    def update(self, status: Any) -> None:
        self.text = status.summary()
        self.widget.value = status_html(status)

    def finish(self, status: Any) -> None:
        self.update(status)


def status_html(status: Any) -> str:
    """A run's status as HTML: the summary line (the Spark UI as a link) and a table with one
    row per Spark stage: its id (a link to its Spark UI page), name, a bar, tasks done / running /
    total (and failed), state and duration."""
    line = html.escape(status.summary())
    if status.ui_url:
        url = html.escape(status.ui_url, quote=True)
        line = line.replace(html.escape(f"Spark UI {status.ui_url}"),
                            f'<a href="{url}" target="_blank" rel="noopener"{_LINK}>Spark UI {html.escape(status.ui_url)}</a>')
    rows = []
    for s in status.stages:
        share = 1.0 if s.finished else (s.done / s.total if s.total else 0.0)
        tasks = f"{s.done}/{s.total} done" + (f", {s.running} running" if s.running else "") \
            + (f", {s.failed} failed" if s.failed else "")
        stage = f"stage {s.stage_id}"
        link = status.stage_url(s.stage_id)
        if link:
            stage = f'<a href="{html.escape(link, quote=True)}" target="_blank" rel="noopener"{_LINK}>{stage}</a>'
        duration = "" if s.duration_s is None else f"{s.duration_s:.1f} s"
        rows.append(
            f'<tr class="jb-spark-stage" data-stage="{s.stage_id}" data-state="{s.state}"><td>{stage}</td>'
            f'<td title="{html.escape(s.name, quote=True)}">{html.escape(_short(s.name))}</td>'
            f'<td><div style="width:120px;background:#e5e7eb;height:8px">'
            f'<div style="width:{share * 100:.0f}%;background:{"#16a34a" if s.finished else "#2563eb"};height:8px">'
            f"</div></div></td><td>{html.escape(tasks)}</td><td>{s.state}</td><td>{duration}</td></tr>")
    table = ""
    if rows:
        head = "".join(f"<th>{h}</th>" for h in ("stage", "name", "", "tasks", "state", "duration"))
        table = f'<table style="font-size:90%;border-spacing:10px 2px"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    return f'<div class="jb-spark-progress"><div>{line}</div>{table}</div>'


#: links look like links in JupyterLab, which resets their style
_LINK = ' style="color:#2563eb;text-decoration:underline"'


def _short(name: str, width: int = 60) -> str:
    return name if len(name) <= width else name[:width - 3] + "..."
