"""Issue 15's "Done when", in a real JupyterLab 4 and Notebook 7 with headless Chromium.

What a user does and sees while a cell waits for a job: Stop (interrupt) during ``run()`` leaves
no job thread; the dashboard's Cancel and idle slider act while the cell is blocked in
``job.join()`` (with a further cell queued behind it, as Run All does); the progress line of
``run()`` appears, opens the full dashboard while the cell still runs, and freezes into a summary;
a dashboard command the kernel cannot hear (a cell busy in plain Python) is reported as such; a
failing map shows the user's line first; an unfinished pipeline displays. Screenshots go to
tests/browser/artifacts/ (not committed).

The suite turns progress off by environment (tests/conftest.py), which the server and its
kernels inherit: each notebook here turns it back on with ``configure(enabled=True)``.
"""

from __future__ import annotations

import pytest

from .jlab import (
    ARTIFACTS,
    UIS,
    open_notebook,
    run_new_cell,
    screenshot,
    set_idle_controls,
    write_notebook,
)

pytestmark = pytest.mark.browser

CELL_ERROR = '.jp-NotebookPanel .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
DASH = ".jp-NotebookPanel .jetbench-dashboard"
LINE = ".jp-NotebookPanel .jetbench-progress"

SETUP = """\
import threading, time
import jetbench
from jetbench import ExecutionService, JobCancelled, Pipeline, sources, sinks
from jetbench.notebook.progress import configure
configure(enabled=True)

def endless():
    p = Pipeline()
    p.read_from(sources.generator(2000)).map(lambda x: 2 * x).write_to(sinks.collect())
    return p

def jetbench_threads(within_s=5.0):
    # a job's observers (the dashboard's sampler) end just after the job: give them a moment
    deadline = time.monotonic() + within_s
    while True:
        names = sorted(t.name for t in threading.enumerate() if t.name.startswith("jetbench."))
        if not names or time.monotonic() > deadline:
            return names
        time.sleep(0.02)
"""


def start_run_all(page) -> None:
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")


def wait_prompt(page, index: int, pattern: str, timeout_ms: int = 30_000) -> None:
    """Wait until code cell ``index``'s prompt matches ``pattern`` (``\\*`` busy, ``\\d+`` done)."""
    page.wait_for_function(
        """([i, pattern]) => {
            const p = document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt')[i];
            return p && new RegExp('\\\\[' + pattern + '\\\\]').test(p.textContent);
        }""",
        arg=[index, pattern],
        timeout=timeout_ms,
    )


def cell(page, index: int):
    return page.locator(".jp-NotebookPanel .jp-CodeCell").nth(index)


def outputs_text(page, index: int) -> str:
    return "\n".join(cell(page, index).locator(".jp-OutputArea-output").all_inner_texts())


def number(page, selector: str) -> float:
    return float(page.locator(selector).first.get_attribute("data-value") or "nan")


def open_and_run_all(page, lab, name: str, cells: list[str], ui: str) -> None:
    write_notebook(lab.root / name, cells)
    open_notebook(page, lab, name, ui)
    start_run_all(page)


# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ui", UIS)
def test_interrupting_run_leaves_no_job_thread(lab, page, ui):
    open_and_run_all(page, lab, f"interrupt-{ui}.ipynb", [SETUP, "jetbench.run(endless())"], ui)
    wait_prompt(page, 1, "\\*")
    line = page.locator(LINE)
    line.wait_for()  # the progress line of run() while it waits
    page.wait_for_function(f"() => Number(document.querySelector('{LINE} .jbp-sinks')?.dataset.value) > 1000")
    screenshot(cell(page, 1), f"{ui}-interrupt-before.png")
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:interrupt-kernel'); }")
    wait_prompt(page, 1, "\\d+")
    screenshot(cell(page, 1), f"{ui}-interrupt-after.png")
    error = page.locator(CELL_ERROR)
    error.wait_for(timeout=5_000)
    assert "KeyboardInterrupt" in error.inner_text()
    # the line froze: the job was cancelled by the interrupt
    page.wait_for_function(f"() => document.querySelector('{LINE}')?.dataset.final === 'true'")
    assert line.get_attribute("data-status") == "cancelled"
    screenshot(cell(page, 1), f"{ui}-interrupt-after.png")
    out = run_new_cell(page, 'print("THREADS", jetbench_threads())')
    assert "THREADS []" in out, out


BLOCKED = """\
service = ExecutionService(cooperative_threads=2, min_idle_us=25, max_idle_us=500)
job = service.submit(endless(), name="blocked")
display(job.dashboard(interval_s=0.2))
try:
    job.join()
except JobCancelled:
    print("JOIN ENDED: cancelled")
"""
AFTER = 'print("AFTER", job.status.value, service.idle.min_idle_us, service.idle.max_idle_us, jetbench_threads())'


@pytest.mark.parametrize("ui", UIS)
def test_cancel_and_idle_slider_act_while_a_cell_is_blocked_in_join(lab, page, ui):
    # Run All: the cell after the blocked one is queued in the kernel behind it
    open_and_run_all(page, lab, f"blocked-{ui}.ipynb", [SETUP, BLOCKED, AFTER], ui)
    wait_prompt(page, 1, "\\*")
    dash = page.locator(DASH)
    dash.wait_for()
    page.wait_for_selector(f'{DASH} tr.jb-row[data-vertex]')
    assert page.locator(f"{DASH} .jb-status").get_attribute("data-status") == "running"

    # the min idle number and the max idle slider, while join() blocks the cell
    set_idle_controls(page, DASH)
    screenshot(cell(page, 1), f"{ui}-join-before.png")
    # applied by the kernel's executor (the state comes from the running job's service)
    page.wait_for_function(
        f"""() => {{ const a = document.querySelector('{DASH} .jb-idle-applied');
            return a && a.dataset.min === '2000' && a.dataset.max === '100000'; }}""",
        timeout=10_000,
    )
    wait_prompt(page, 1, "\\*")  # still blocked in join()
    assert page.locator(f"{DASH} .jb-kernel-busy").is_hidden()  # every command was acknowledged
    screenshot(dash, f"{ui}-join-idle-applied.png")

    page.locator(f"{DASH} button.jb-cancel").click()
    page.wait_for_function(
        f"""() => document.querySelector('{DASH} .jb-status')?.dataset.status === 'cancelled'
            && document.querySelector('{DASH}').dataset.final === 'true'""",
        timeout=10_000,
    )
    wait_prompt(page, 1, "\\d+")
    assert "JOIN ENDED: cancelled" in outputs_text(page, 1)
    # the queued cell ran after the blocked one, and saw what the controls did
    wait_prompt(page, 2, "\\d+")
    assert "AFTER cancelled 2000.0 100000.0 []" in outputs_text(page, 2), outputs_text(page, 2)
    assert page.locator(f"{DASH} .jb-kernel-busy").is_hidden()
    screenshot(cell(page, 1), f"{ui}-join-cancelled.png")


@pytest.mark.parametrize("ui", UIS)
def test_progress_line_appears_opens_the_dashboard_and_freezes(lab, page, ui):
    # the last item waits until the test has seen the job run (it released it), so that the
    # line cannot freeze under a screenshot of the running job on a slow machine
    release = lab.root / f"progress-{ui}.release"
    release.unlink(missing_ok=True)
    cells = [SETUP, f"""\
import pathlib
def hold(x):
    deadline = time.monotonic() + 120
    while x == 4_999 and not pathlib.Path({release.name!r}).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return x + 1

p = Pipeline()
p.read_from(sources.generator(1000, count=5000)).map(hold).write_to(sinks.collect())
print("RESULT", len(jetbench.run(p, cooperative_threads=2)))"""]
    open_and_run_all(page, lab, f"progress-{ui}.ipynb", cells, ui)
    wait_prompt(page, 1, "\\*")
    line = page.locator(LINE)
    line.wait_for()
    assert line.get_attribute("data-status") == "running"
    sinks = f"{LINE} .jbp-sinks"
    before = number(page, sinks)
    page.wait_for_function(f"() => Number(document.querySelector('{sinks}')?.dataset.value) > {before} + 500")
    assert "items/s" in line.inner_text()
    screenshot(line, f"{ui}-progress-running.png")

    # the button opens the full dashboard below the line while the cell still waits in run()
    line.locator("button.jbp-open").click()
    dash = page.locator(f".jp-NotebookPanel .jetbench-progress-view {DASH.split()[-1]}")
    dash.wait_for(timeout=10_000)
    wait_prompt(page, 1, "\\*")
    page.wait_for_selector(f'{DASH} tr.jb-row[data-vertex]')
    screenshot(cell(page, 1), f"{ui}-progress-dashboard.png")

    release.write_text("")
    wait_prompt(page, 1, "\\d+", timeout_ms=60_000)
    page.wait_for_function(f"() => document.querySelector('{LINE}')?.dataset.final === 'true'")
    assert line.get_attribute("data-status") == "completed"
    text = line.inner_text()
    assert "5,000" in text and "items/s out of the sources on average" in text, text
    assert "RESULT 5000" in outputs_text(page, 1)
    screenshot(cell(page, 1), f"{ui}-progress-final.png")


BUSY = """\
bg = ExecutionService(cooperative_threads=1).submit(endless(), name="background")
bg.dashboard(interval_s=0.2)"""
#: busy in plain Python until the test releases it (at most 2 minutes), not for a fixed time
BUSY_UNTIL_RELEASED = """\
import pathlib
release, deadline = pathlib.Path("busy.release"), time.monotonic() + 120
while not release.exists() and time.monotonic() < deadline:
    time.sleep(0.05)"""


def test_a_command_the_busy_kernel_cannot_hear_is_reported(lab, page):
    # a cell busy in plain Python (no jetbench wait) cannot let the dashboard's message through
    release = lab.root / "busy.release"
    release.unlink(missing_ok=True)
    open_and_run_all(page, lab, "busy.ipynb", [SETUP, BUSY, BUSY_UNTIL_RELEASED], "lab")
    wait_prompt(page, 2, "\\*")
    page.wait_for_selector(f'{DASH} tr.jb-row[data-vertex]')
    page.locator(f"{DASH} button.jb-cancel").click()
    busy = page.locator(f"{DASH} .jb-kernel-busy")
    busy.wait_for(state="visible", timeout=30_000)
    assert "has not received Cancel" in busy.inner_text()
    assert page.locator(f"{DASH} .jb-status").get_attribute("data-status") == "running"
    screenshot(page.locator(DASH), "lab-busy-kernel-notice.png")
    wait_prompt(page, 2, "\\*")  # the cell still runs
    # once the cell ends the kernel reads the command: the job is cancelled, the notice goes
    release.write_text("")
    page.wait_for_function(
        f"() => document.querySelector('{DASH} .jb-status')?.dataset.status === 'cancelled'", timeout=20_000
    )
    busy.wait_for(state="hidden", timeout=5_000)


FAILING = """\
def check(x):
    if x >= 300:
        raise ValueError(f"bad item {x}")
    return x

p = Pipeline()
p.read_from(sources.generator(100_000, count=1000)).map(check).write_to(sinks.collect())
jetbench.run(p)"""

UNFINISHED = """\
draft = Pipeline()
draft.read_from(sources.items(range(5))).map(lambda x: x + 1)
draft"""


@pytest.mark.parametrize("ui", UIS)
def test_unfinished_pipeline_displays_and_a_failing_map_shows_the_users_line_first(lab, page, ui):
    open_and_run_all(page, lab, f"errors-{ui}.ipynb", [SETUP, UNFINISHED, FAILING], ui)
    wait_prompt(page, 2, "\\d+", timeout_ms=60_000)

    # the unfinished pipeline: a drawing with its open end, no traceback
    drawing = cell(page, 1).locator(".jp-OutputArea-output").first
    drawing.wait_for()
    html = drawing.evaluate("(e) => e.className + ' ' + e.innerHTML.slice(0, 3000)")
    assert "jetbench-drawing" in html and "<svg" in html, html  # the HTML form: fitted to the cell
    assert "open end" in html or "open%20end" in html or "b3BlbiBlbmQ" in html, html
    assert cell(page, 1).locator('[data-mime-type="application/vnd.jupyter.stderr"]').count() == 0
    screenshot(cell(page, 1), f"{ui}-unfinished-pipeline.png")

    # the failing map: the first line is the JobError, the user's function and line come before any engine frame
    error = cell(page, 2).locator('[data-mime-type="application/vnd.jupyter.stderr"]')
    error.wait_for()
    text = error.inner_text()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    first_error = next(i for i, ln in enumerate(lines) if "JobError" in ln)
    assert "JobError" in lines[0] or all("File " not in ln and ".py" not in ln for ln in lines[:first_error]), text
    assert "bad item 300" in text and "check" in text, text
    user_line = next(i for i, ln in enumerate(lines) if 'raise ValueError(f"bad item {x}")' in ln)
    engine = [i for i, ln in enumerate(lines) if "tasklet.py" in ln or "execution.py" in ln]
    assert not engine or user_line < min(engine), text
    screenshot(cell(page, 2), f"{ui}-failing-map.png")
    page.screenshot(path=str(ARTIFACTS / f"{ui}-errors-page.png"))
