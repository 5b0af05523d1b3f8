"""The teaching notebooks in a real JupyterLab, started the way users start it (``jetbench lab``
with nothing else, checked to listen on 127.0.0.1 only), in its own working copy of the notebooks
in a fresh data directory (never the checkout's folder, so a notebook that reads ``../docs`` fails
here): 01 opens first and runs top to bottom with its DAG drawings and the visual builder; 02's
dashboard follows its job, which runs to its end; both display what their lessons
need (``notebook_lessons.MUST_DISPLAY``, which the headless test checks for the other
notebooks); 08's picture of the dashboard shows. Screenshots go to
tests/browser/artifacts/ (the README's tour uses them)."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest
from notebook_lessons import MUST_DISPLAY, RUN_IN_THE_BROWSER, parameter_overrides

from .jlab import KERNEL_IDLE, displayed, open_notebook, run_all, screenshot, start_lab

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
#: the notebooks run top to bottom here (the headless test runs the others)
SHOWN = tuple(f"{stem}.ipynb" for stem in RUN_IN_THE_BROWSER)
DASH = ".jp-NotebookPanel .jetbench-dashboard"


@pytest.fixture(scope="module")
def lab(tmp_path_factory, pages):
    """``jetbench lab`` serving its working copy (running the notebooks must not touch the checkout);
    its page goes with it (the other modules' JupyterLab stays loaded in theirs meanwhile)."""
    server = start_lab(tmp_path_factory.mktemp("lab"), lab_copy=True)
    yield server
    pages.drop(server.url)
    server.stop()


def test_jetbench_lab_serves_its_working_copy_in_the_data_dir(lab):
    assert lab.root != NOTEBOOKS and NOTEBOOKS not in lab.root.parents
    assert (lab.root / SHOWN[0]).read_bytes() == (NOTEBOOKS / SHOWN[0]).read_bytes()
    assert f"working on a copy of {NOTEBOOKS} in {lab.root}" in lab.log.read_text()


def test_jetbench_lab_listens_on_loopback_only_and_opens_01(lab):
    import urllib.error
    import urllib.request


    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    with pytest.raises(urllib.error.HTTPError) as redirect:
        urllib.request.build_opener(NoRedirect).open(f"{lab.url}/?token={lab.token}", timeout=10)
    assert redirect.value.code == 302
    assert redirect.value.headers["Location"].split("?")[0].endswith("/lab/tree/01-getting-started.ipynb")
    server = psutil.Process(lab.process.pid)
    listening = [c.laddr for p in (server, *server.children(recursive=True))
                 for c in _connections(p) if c.status == psutil.CONN_LISTEN]
    assert listening and all(addr.ip == "127.0.0.1" for addr in listening), listening


def _connections(process: psutil.Process) -> list:
    """A process's inet connections; none for a child that ended while we looked (a short-lived
    helper of the server), which psutil reports as NoSuchProcess or a vanished /proc entry."""
    try:
        return process.net_connections(kind="inet")
    except (psutil.NoSuchProcess, FileNotFoundError):
        return []


def code_cells(name: str) -> int:
    import nbformat

    return sum(cell.cell_type == "code" for cell in nbformat.read(NOTEBOOKS / name, as_version=4).cells)


#: Parameters set after a notebook's parameters cell in the working copy (papermill style, as
#: the headless test does): only the size and repeats of a measurement drawn as a chart, whose
#: assertion holds at any size (02's GIL section: 21 runs, 9 CPU-s of the test's 30 s at its
#: own size; every cell and assertion still runs).
BROWSER_PARAMETERS = {"02-cooperative-scheduling": {"GIL_ITEMS": 2_500, "GIL_ROUNDS": 3}}


def set_parameters(folder: Path, name: str) -> int:
    """Add a cell setting ``BROWSER_PARAMETERS`` after the parameters cell of the working copy's
    notebook ``name`` (in its py:percent half: jupytext reads the cells from there, and refuses
    an .ipynb newer than it); return how many code cells the notebook has now."""
    overrides = BROWSER_PARAMETERS[Path(name).stem]
    source = folder / f"{Path(name).stem}.py"
    lines = source.read_text().splitlines(keepends=True)
    at = lines.index('# %% tags=["parameters"]\n')
    end = next(k for k in range(at + 1, len(lines)) if lines[k].startswith("# %%"))
    cell = ["# %%\n", *(f"{line}\n" for line in parameter_overrides("".join(lines[at:end]), overrides)), "\n"]
    source.write_text("".join(lines[:end] + cell + lines[end:]))
    return code_cells(name) + 1


@pytest.mark.timeout(300)
def test_lab_opens_01_and_it_runs_top_to_bottom(page, lab):
    page.set_viewport_size({"width": 2100, "height": 1200})  # room for the builder's six vertices at a legible zoom
    page.goto(f"{lab.url}/?token={lab.token}")  # the URL `jetbench lab` prints
    page.locator(KERNEL_IDLE).wait_for(timeout=60_000)
    current = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current")
    assert "01-getting-started.ipynb" in current.inner_text()

    run_all(page, code_cells(SHOWN[0]), timeout_ms=180_000)
    assert MUST_DISPLAY[RUN_IN_THE_BROWSER[0]] <= displayed(page), displayed(page)
    # the pipeline and the DAG, drawn by graphviz: the HTML form, the SVG inline and fitted to the cell
    graphs = page.locator(".jp-NotebookPanel .jp-RenderedHTMLCommon .jetbench-drawing")
    assert graphs.count() >= 2
    assert "accumulate" in graphs.last.inner_html()
    assert graphs.last.evaluate("(d) => d.scrollWidth <= d.clientWidth + 1")  # no sideways scrolling
    frame = page.locator(".jp-NotebookPanel .jp-RenderedHTMLCommon table").first
    assert frame.locator("tr").count() > 3  # the word counts as a DataFrame
    builder = page.locator(".jp-NotebookPanel .jp-OutputArea-output .jetbench-builder")
    builder.wait_for()
    assert builder.locator("text=accumulate").count() >= 1  # the builder shows the word count's vertices
    screenshot(builder, "notebook-01-builder.png")
    screenshot(graphs.last, "notebook-01-dag.png")


@pytest.mark.timeout(300)
def test_02_shows_the_job_live_on_the_dashboard(page, lab):
    cells = set_parameters(lab.root, SHOWN[1])
    open_notebook(page, lab, SHOWN[1])  # in the JupyterLab the test above loaded
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    dash = page.locator(DASH).first
    # the job runs 1.5 s: on a loaded machine the view can first show up after it ended (that a
    # dashboard follows a running job live, test_dashboard_browser.py checks on a job it paces)
    status = dash.locator('.jb-status[data-status="running"], .jb-status[data-status="completed"]')
    status.wait_for(timeout=120_000)
    rows = dash.locator("tr.jb-row")
    rows.first.wait_for()
    assert rows.count() == 6  # source, 2 x parse, 2 x enrich, sink
    if status.get_attribute("data-status") == "running":
        screenshot(dash, "notebook-02-dashboard-live.png")

    run_all(page, cells, timeout_ms=240_000, start=False)  # the run-all above, to its end
    assert MUST_DISPLAY[RUN_IN_THE_BROWSER[1]] <= displayed(page), displayed(page)
    assert dash.locator(".jb-status").get_attribute("data-status") == "completed"
    assert dash.locator("svg.jb-cpu-plot polyline").count() >= 2
    screenshot(dash, "notebook-02-dashboard-final.png")


@pytest.mark.timeout(120)
def test_08_shows_its_picture_of_the_dashboard(page, lab):
    """Notebook 08's markdown shows a screenshot of the dashboard; in the working copy it must load
    (a path into the checkout's docs/ was a broken image there)."""
    open_notebook(page, lab, "08-fault-tolerance.ipynb")
    image = page.locator('.jp-NotebookPanel .jp-MarkdownOutput img[alt^="the dashboard with barrier"]')
    image.scroll_into_view_if_needed()
    page.wait_for_function("(img) => img.complete", arg=image.element_handle(), timeout=30_000)
    assert image.evaluate("(img) => img.naturalWidth") > 400, image.get_attribute("src")
    screenshot(image, "notebook-08-dashboard-picture.png")
