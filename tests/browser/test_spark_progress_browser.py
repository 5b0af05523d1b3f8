"""Spark's progress in a real JupyterLab 4 + Chromium (issue 31, item 4): while `SparkRunner.run`
waits in a cell, the cell shows the run's line and a row per Spark stage with its tasks done,
running and in all, live, and a link to the embedded Spark UI on 127.0.0.1; when the run ends
the view freezes into its final state. Then the dashboard of a submitted job
(``SparkRunner.submit(p).dashboard()``): a row per Spark stage, live, named after the pipeline,
and its Cancel button heard while the cell waits in ``join()``: the job is cancelled and the
view freezes with that state. The kernel starts its own embedded session, as a user's does.
Screenshots go to tests/browser/artifacts/ and /tmp/team/shots/."""

from __future__ import annotations

import re

import pytest

from .jlab import open_notebook, run_all, shot, write_notebook

pytestmark = pytest.mark.browser

SETUP = """\
import time
from jetbench import Pipeline, sinks, sources
from jetbench.notebook import progress
from jetbench.spark import SparkRunner, session

spark = session(ui=True, driver_memory="512m")
progress.configure(delay_s=0, interval_s=0.2)

def slow(x):
    time.sleep(0.05)
    return x * 2

p = Pipeline()
p.read_from(sources.items(range(120))).map(slow).write_to(sinks.collect())
"""

RUN = """\
result = SparkRunner(spark).run(p, progress=True)
print("results", len(result), sum(result))
"""

SUBMIT = """\
from jetbench import JobCancelled
job = SparkRunner(spark).submit(p, name="doubling")
display(job.dashboard(interval_s=0.3))
try:
    job.join(progress=False)
except JobCancelled as exc:
    print("cancelled:", exc)
"""

VIEW = ".jp-NotebookPanel .jp-CodeCell:nth-child(2) .jb-spark-progress"
BOARD = ".jp-NotebookPanel .jp-CodeCell:nth-child(3) .jb-spark-dashboard"


def test_a_spark_run_shows_its_stages_live_with_the_spark_ui_link_and_freezes_at_the_end(lab, page):
    write_notebook(lab.root / "spark-progress.ipynb", [SETUP, RUN, SUBMIT])
    open_notebook(page, lab, "spark-progress.ipynb")
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    view = page.locator(VIEW)
    # live: a stage with tasks running (120 items at 50 ms in two partitions: some 3 s of work)
    view.locator("tr.jb-spark-stage", has_text="running").first.wait_for(timeout=180_000)
    live = view.inner_text()
    assert re.search(r"Spark \S+: running [\d.]+ s", live), live
    assert re.search(r"\d+/\d+ done, \d+ running", live), live
    shot(page.locator(".jp-NotebookPanel .jp-CodeCell").nth(1), "spark-progress-running.png")

    run_all(page, 2, timeout_ms=180_000, start=False)
    output = page.locator(".jp-NotebookPanel .jp-CodeCell").nth(1).locator(".jp-OutputArea")
    assert "results 120 14280" in output.inner_text()  # sum(2 * x for x in range(120))
    final = view.inner_text()
    assert "running" not in final and re.search(r"stages (\d+)/\1 done · tasks (\d+)/\2", final), final
    rows = view.locator("tr.jb-spark-stage")
    assert rows.count() >= 1
    for i in range(rows.count()):
        assert re.search(r"(\d+)/\1 done|skipped", rows.nth(i).inner_text()), rows.nth(i).inner_text()
    link = view.locator("a", has_text="Spark UI")
    href = link.get_attribute("href") or ""
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", href), href  # the embedded UI, on loopback only
    assert link.get_attribute("target") == "_blank"
    shot(page.locator(".jp-NotebookPanel .jp-CodeCell").nth(1), "spark-progress-done.png")

    # the dashboard of a submitted job: live rows named after the pipeline, then Cancel
    board = page.locator(BOARD)
    board.locator("tr.jb-spark-stage[data-state=running]").first.wait_for(timeout=180_000)
    live = board.inner_text()
    assert "Spark doubling: running" in live and "jetbench doubling: results · stage 0: items" in live, live
    assert re.search(r"\d+/\d+ done, \d+ running\s+running\s+[\d.]+ s", live), live
    shot(page.locator(".jp-NotebookPanel .jp-CodeCell").nth(2), "spark-dashboard-running.png")
    board.get_by_role("button", name="Cancel").click()
    run_all(page, 3, timeout_ms=180_000, start=False)
    output = page.locator(".jp-NotebookPanel .jp-CodeCell").nth(2).locator(".jp-OutputArea")
    assert "cancelled: job 'doubling' was cancelled" in output.inner_text()
    frozen = board.inner_text()
    assert "Spark doubling: cancelled" in frozen and "running" not in frozen, frozen  # the killed tasks ended
    assert board.locator("tr.jb-spark-stage[data-state=stopped]").count() >= 1, frozen
    assert board.get_by_role("button", name="Cancel").is_disabled()
    shot(page.locator(".jp-NotebookPanel .jp-CodeCell").nth(2), "spark-dashboard-cancelled.png")
