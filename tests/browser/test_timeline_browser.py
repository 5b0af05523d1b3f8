"""The timeline of a job's workers in a real JupyterLab 4 + Chromium (issue 34): what a user sees and does.

A finished 2.5-second job of 10 tasklets on 2 workers, drawn whole (aggregated), zoomed in with
the buttons and the wheel until each call and park is drawn (parks labelled with their length),
hovered, panned and fitted again; a running job with a dedicated thread, live over a sliding
window; the dashboard's Timeline tab. Screenshots go to tests/browser/artifacts/.
"""

from __future__ import annotations

import pytest

from .jlab import open_notebook, run_all, run_new_cell, screenshot, write_notebook
from .test_dashboard_browser import start_one_cell_dashboard

pytestmark = pytest.mark.browser

TL = ".jp-NotebookPanel .jetbench-timeline-view"

TEN_TASKLETS = """\
import time
from jetbench import DAG, Edge, ExecutionService
from jetbench.processors import map_processor, noop_sink
from jetbench.processors.generator_source import generator_source

def work(x):
    if x % 997 == 0:
        time.sleep(0.003)  # now and then a slow call
    return x

dag = DAG()
prev = dag.new_vertex("source", generator_source(2000, timestamped=False, count=5_000), local_parallelism=1)  # 2.5 s
for name in ("parse", "enrich", "score", "route"):
    v = dag.new_vertex(name, map_processor(work), local_parallelism=2)
    dag.edge(Edge.between(prev, v))
    prev = v
sink = dag.new_vertex("sink", noop_sink(), local_parallelism=1)
dag.edge(Edge.between(prev, sink))
service = ExecutionService(cooperative_threads=2, trace=True, trace_capacity=400_000)
job = service.submit(dag, name="ten-tasklets")
job.join(progress=False)
print("TASKLETS", len(job.tasklets), "WORKERS", len(job.workers), "DROPPED", job.trace().dropped)
"""

SHOW = "tl = job.timeline()\ntl"


def caught_up(page) -> None:
    """Wait until the kernel answered the view's last request: the drawn window is the state's."""
    page.wait_for_function(
        f"""() => {{ const r = document.querySelector('{TL}');
            if (!r || !r.dataset.view || !r.dataset.window) return false;
            const a = r.dataset.view.split(',').map(Number), b = r.dataset.window.split(',').map(Number);
            return Math.abs(a[0] - b[0]) < 1 && Math.abs(a[1] - b[1]) < 1; }}""")


def largest(page, selector: str):
    """The largest of the view's SVG rects matching ``selector`` (a thin one may lie under its neighbour)."""
    lane, i = page.evaluate(
        """(sel) => { const area = (r) => Number(r.getAttribute('width')) * Number(r.getAttribute('height'));
            const r = [...document.querySelectorAll(sel)].reduce((a, b) => (area(b) > area(a) ? b : a));
            return [r.dataset.lane, r.dataset.i]; }""", f"{TL} {selector}")
    return page.locator(f'{TL} {selector}[data-lane="{lane}"][data-i="{i}"]').first


def point_at(page, locator) -> None:
    """Move the mouse onto the middle of ``locator`` (an SVG shape; its neighbours may overlap it)."""
    box = locator.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def data(page, name: str) -> str:
    return page.locator(TL).get_attribute(f"data-{name}")


def test_a_finished_job_zoomed_from_aggregates_to_each_call(lab, page):
    write_notebook(lab.root / "timeline.ipynb", [TEN_TASKLETS, SHOW])
    open_notebook(page, lab, "timeline.ipynb")
    run_all(page, 2, timeout_ms=120_000)
    out = page.locator(".jp-NotebookPanel .jp-Cell").first.locator(".jp-OutputArea-output").inner_text()
    assert "TASKLETS 10 WORKERS 2 DROPPED 0" in out, out
    view = page.locator(TL)
    view.wait_for()
    caught_up(page)
    # the whole 2.5 s: two lanes, too many events to draw one by one: aggregated, bounded
    assert page.locator(f"{TL} .jt-lane-name").all_text_contents() == ["cooperative-0", "cooperative-1"]
    assert data(page, "mode") == "buckets" and data(page, "live") == "false"
    assert 0 < int(data(page, "buckets")) <= 2 * 600
    start, end = map(float, data(page, "window").split(","))
    assert end - start > 0.9 * 2.5e6  # µs: the whole run
    keys = page.locator(f"{TL} .jt-key[data-vertex]").all_inner_texts()
    assert keys == ["source", "parse", "enrich", "score", "route", "sink"], keys
    assert page.locator(f"{TL} .jt-slow").count() >= 1  # the slow calls, marked on top
    screenshot(view, "timeline-whole.png")

    # hover an aggregate: what it holds
    point_at(page, largest(page, "rect.jt-bucket"))
    tip = page.locator(f"{TL} .jt-tip")
    tip.wait_for()
    assert "calls" in tip.inner_text() and "aggregated" in tip.inner_text()

    # zoom in with the + button until each call is drawn
    for _ in range(14):
        if data(page, "mode") == "events":
            break
        page.locator(f"{TL} button.jt-zoom-in").click()
        caught_up(page)
    assert data(page, "mode") == "events", data(page, "window")
    assert int(data(page, "calls")) > 0 and int(data(page, "parks")) > 0
    # then the wheel, around the pointer, until the parks say how long they slept
    svg = page.locator(f"{TL} svg.jt-svg")
    box = svg.bounding_box()
    for _ in range(20):
        if page.locator(f"{TL} text.jt-park-label").count():
            break
        page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 20)
        page.mouse.wheel(0, -200)
        caught_up(page)
    labels = page.locator(f"{TL} text.jt-park-label").all_text_contents()
    assert labels and all(label.endswith(("µs", "ms")) for label in labels), labels
    faded = page.locator(f"{TL} rect.jt-call.jt-noprog").count()
    solid = page.locator(f"{TL} rect.jt-call:not(.jt-noprog)").count()
    assert solid > 0, (faded, solid)
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] + 200)  # away: no tooltip
    screenshot(view, "timeline-zoomed.png")

    # hover a call: its tasklet, vertex, duration, progress, items, state
    point_at(page, largest(page, "rect.jt-call:not(.jt-noprog)"))
    page.wait_for_function(f"() => document.querySelector('{TL} .jt-tip').dataset.kind === 'call'")
    text = tip.inner_text()
    assert "vertex" in text and "state after" in text and ("made progress" in text or "no progress" in text), text
    screenshot(view, "timeline-hover.png")
    point_at(page, largest(page, "rect.jt-park"))
    page.wait_for_function(f"() => document.querySelector('{TL} .jt-tip').dataset.kind === 'park'")
    assert "asked" in tip.inner_text() and "slept" in tip.inner_text()

    # drag to pan: the window moves later in time by about the dragged width
    before = list(map(float, data(page, "window").split(",")))
    page.mouse.move(box["x"] + box["width"] * 0.8, box["y"] + 30)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.4, box["y"] + 30, steps=4)  # each step redraws the view
    page.mouse.up()
    caught_up(page)
    after = list(map(float, data(page, "window").split(",")))
    assert after[0] > before[0] and after[1] - after[0] == pytest.approx(before[1] - before[0], rel=0.01)

    # double click: the whole run again
    svg.dblclick()
    page.wait_for_function(f"() => document.querySelector('{TL}').dataset.mode === 'buckets'")
    caught_up(page)
    whole = f"{start},{end}"  # the window the widget reports may follow its mode by a redraw
    page.wait_for_function(f"() => {{ const w = document.querySelector('{TL}').dataset.window.split(',').map(Number);"
                           f" return w[0] === {start} && w[1] === {end}; }}", timeout=15_000)
    assert list(map(float, data(page, "window").split(","))) == [start, end], whole


LIVE = """\
import time
from jetbench import DAG, Edge, ExecutionService, Processor
from jetbench.processors import map_processor
from jetbench.processors.generator_source import generator_source

class BlockingSink(Processor):
    is_cooperative = False  # a dedicated thread: its own lane

    def process(self, ordinal, inbox):
        inbox.take()
        time.sleep(0.002)

dag = DAG()
src = dag.new_vertex("source", generator_source(400, timestamped=False), local_parallelism=1)
work = dag.new_vertex("work", map_processor(lambda x: x), local_parallelism=2)
sink = dag.new_vertex("sink", BlockingSink, local_parallelism=1)
dag.edge(Edge.between(src, work)).edge(Edge.between(work, sink))
# idle workers park 1-5 ms (not from 25 µs): a third of the empty calls to draw every 0.2 s
job = ExecutionService(cooperative_threads=2, min_idle_us=1000, max_idle_us=5000).submit(dag, name="live-demo")
tl = job.timeline(window_s=0.4, interval_s=0.2, max_events=20_000)  # each call, however fast the host
tl
"""


def test_a_running_job_live_over_a_sliding_window(lab, page):
    write_notebook(lab.root / "live-timeline.ipynb", [LIVE])
    open_notebook(page, lab, "live-timeline.ipynb")
    run_all(page, 1)
    view = page.locator(TL)
    view.wait_for()
    page.wait_for_function(f"() => Number(document.querySelector('{TL}')?.dataset.calls) > 0")
    assert data(page, "live") == "true" and data(page, "follow") == "true"
    kinds = page.locator(f"{TL} .jt-lane-kind").all_text_contents()
    assert [k.split(" · ")[0] for k in kinds] == ["cooperative", "cooperative", "blocking"], kinds
    assert page.locator(f"{TL} .jt-status").inner_text() == "live"
    # the window slides: its end moves on while the job runs, its width stays 0.4 s
    first = list(map(float, data(page, "window").split(",")))
    page.wait_for_function(
        f"(t) => Number(document.querySelector('{TL}').dataset.window.split(',')[1]) > t + 200000", arg=first[1])
    now = list(map(float, data(page, "window").split(",")))
    assert now[1] - now[0] == pytest.approx(400_000, abs=1)
    # the dedicated thread's calls (2 ms sleeps) on its own lane
    page.wait_for_selector(f'{TL} rect.jt-call[data-lane="2"][data-vertex="sink"]')
    screenshot(view, "timeline-live.png")

    # zooming stops following; Live follows again
    page.locator(f"{TL} button.jt-zoom-in").click()
    page.wait_for_function(f"() => document.querySelector('{TL}').dataset.follow === 'false'")
    assert "paused" in page.locator(f"{TL} .jt-status").inner_text()
    page.locator(f"{TL} button.jt-follow").click()
    page.wait_for_function(f"() => document.querySelector('{TL}').dataset.follow === 'true'")

    # the job ends: the view turns still on the whole recording kept
    out = run_new_cell(page, 'job.cancel(); tl.join(30); print("LIVE", tl.state["live"], tl.state["status"])')
    assert "LIVE False cancelled" in out, out
    page.wait_for_function(f"() => document.querySelector('{TL}').dataset.live === 'false'")
    assert page.locator(f"{TL} button.jt-follow").is_hidden()
    screenshot(view, "timeline-live-ended.png")


DASHBOARD = """\
from jetbench import DAG, Edge, ExecutionService
from jetbench.processors import map_processor, noop_sink
from jetbench.processors.generator_source import generator_source

dag = DAG()
src = dag.new_vertex("source", generator_source(2000, timestamped=False), local_parallelism=1)
work = dag.new_vertex("double", map_processor(lambda x: 2 * x), local_parallelism=2)
sink = dag.new_vertex("sink", noop_sink(), local_parallelism=1)
dag.edge(Edge.between(src, work)).edge(Edge.between(work, sink))
job = ExecutionService(cooperative_threads=2).submit(dag, name="tabbed")
dash = job.dashboard(interval_s=0.2)
dash
"""


def test_the_dashboards_timeline_tab(lab, page):
    dash = start_one_cell_dashboard(page, lab, "dashboard-timeline.ipynb", DASHBOARD)
    assert dash.get_attribute("data-tab") == "overview"
    assert page.locator(".jp-NotebookPanel .jetbench-dashboard .jetbench-timeline-view").count() == 0
    dash.locator('button.jb-tab[data-tab="timeline"]').click()
    inner = dash.locator(".jetbench-timeline-view")
    inner.wait_for()
    # drawn call by call, or aggregated when the 2 s window holds too many (a fast host)
    page.wait_for_function(
        """() => { const v = document.querySelector('.jetbench-dashboard .jetbench-timeline-view');
            return v && Number(v.dataset.calls) + Number(v.dataset.buckets) > 0; }""")
    assert dash.locator(".jb-body").is_hidden()
    assert inner.get_attribute("data-live") == "true"
    assert dash.locator(".jt-lane-name").all_text_contents() == ["cooperative-0", "cooperative-1"]
    screenshot(dash, "dashboard-timeline-tab.png")
    # back to the overview: the tables again, the kernel stops feeding the timeline
    dash.locator('button.jb-tab[data-tab="overview"]').click()
    assert dash.locator(".jb-body").is_visible() and inner.is_hidden()
    out = run_new_cell(page, 'print("OPEN", dash._timeline_open); job.cancel()')
    assert "OPEN False" in out, out
