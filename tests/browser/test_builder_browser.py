"""The visual DAG builder in a real JupyterLab 4 + Chromium: drag, connect, validate, edit, run.

The notebook makes a builder with a source and a sink from Python; the test drags a map from the
palette between them, sees its "input not connected" badge, connects the ports (the badges go),
edits the map's code in the side panel, is refused a cycle, presses Run, sees the result and the
live dashboard below, and checks the kernel-side ``builder.dag``.
"""

from __future__ import annotations

import time

import pytest

from .jlab import open_notebook, run_all, run_new_cell, screenshot, write_notebook

pytestmark = pytest.mark.browser

SETUP = """\
from jetbench import ExecutionService
from jetbench.notebook import DagBuilder

builder = DagBuilder(service=ExecutionService(cooperative_threads=2))
builder.add_vertex("items", name="numbers", params={"items": "range(100)"}, parallelism=1, x=40, y=60)
builder.add_vertex("collect", name="out", parallelism=1, x=600, y=60)
builder
"""

BIG = (  # one line: run_new_cell types it
    "from jetbench import DAG, Edge; from jetbench.processors import items_source, map_processor, collect_sink; "
    "dag50 = DAG(); src = dag50.new_vertex('src', items_source(range(10))); "
    "sink = dag50.new_vertex('sink', collect_sink()); "
    "ms = [[dag50.new_vertex(f'm{b}_{i}', map_processor(lambda x: x + 1)) for i in range(8)] for b in range(6)]; "
    "[dag50.edge(Edge.from_(src, b).to(ms[b][0])) for b in range(6)]; "
    "[dag50.edge(Edge.between(ms[b][i], ms[b][i + 1])) for b in range(6) for i in range(7)]; "
    "[dag50.edge(Edge.from_(ms[b][7]).to(sink, b)) for b in range(6)]; big = DagBuilder(dag50); big"
)

B = ".jp-NotebookPanel .jetbench-builder"


def node(name: str) -> str:
    return f'{B} .jbb-node[data-name="{name}"]'


def center(page, selector: str) -> tuple[float, float]:
    box = page.locator(selector).first.bounding_box()
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def drag(page, start: tuple[float, float], end: tuple[float, float]) -> None:
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move(*end, steps=12)
    page.mouse.up()


def connect(page, source: str, target: str, ordinal: int = 0) -> None:
    drag(page, center(page, f'{node(source)} circle.jbb-out[data-ordinal="0"]'),
         center(page, f'{node(target)} circle.jbb-in[data-ordinal="{ordinal}"]'))


def badges(page, name: str) -> int:
    return page.locator(f"{node(name)} .jbb-badge").count()


def test_drag_connect_validate_edit_and_run(lab, page):
    write_notebook(lab.root / "builder.ipynb", [SETUP])
    open_notebook(page, lab, "builder.ipynb")
    run_all(page, 1)
    builder = page.locator(B)
    builder.wait_for()
    page.wait_for_selector(node("out"))
    # the sink's input is not connected: an error badge, and Run is disabled
    assert page.locator(f"{node('out')} .jbb-badge-error").count() == 1
    assert page.locator(f"{node('numbers')} .jbb-badge-warning").count() == 1  # output not connected
    assert page.locator(f"{B} button.jbb-run").is_disabled()

    # drag "map" from the palette onto the canvas, between the two
    canvas = page.locator(f"{B} svg.jbb-canvas").bounding_box()
    drop = (canvas["x"] + canvas["width"] * 0.5, canvas["y"] + canvas["height"] * 0.7)
    drag(page, center(page, f'{B} .jbb-pal-item[data-kind="map"]'), drop)
    page.wait_for_selector(node("map"))
    page.wait_for_selector(f"{node('map')} .jbb-badge-error")
    assert "input not connected" in page.locator(f"{node('map')} .jbb-badge title").text_content()
    screenshot(builder, "builder-dropped.png")

    # connect numbers -> map: the map's badge goes; map -> out: every badge goes
    connect(page, "numbers", "map")
    page.wait_for_function(f"() => !document.querySelector('{node('map')} .jbb-badge')")
    assert badges(page, "out") == 1
    connect(page, "map", "out")
    page.wait_for_function(f"() => document.querySelectorAll('{B} .jbb-badge').length === 0")
    assert page.locator(f"{B} .jbb-edge").count() == 2
    assert page.locator(f"{B} .jbb-summary").inner_text().endswith("valid")

    # a connection back into itself is refused at drop time
    drag(page, center(page, f'{node("map")} circle.jbb-out[data-ordinal="0"]'), center(page, f"{node('map')} .jbb-node-body"))
    assert "would create a cycle" in page.locator(f"{B} .jbb-message").inner_text()
    assert page.locator(f"{B} .jbb-edge").count() == 2

    # select the map, break its code (a badge), then fix it and set a property
    page.locator(f"{node('map')} .jbb-node-name").click(force=True)
    code = page.locator(f'{B} .jbb-panel textarea[data-field="param:fn"]')
    code.fill("x *")
    code.blur()
    page.wait_for_selector(f"{node('map')} .jbb-badge-error")
    assert "fn: invalid syntax" in page.locator(f"{B} .jbb-panel .jbb-problems").inner_text()
    screenshot(builder, "builder-code-error.png")
    code = page.locator(f'{B} .jbb-panel textarea[data-field="param:fn"]')
    code.fill("x * 2")
    code.blur()
    page.wait_for_function(f"() => document.querySelectorAll('{B} .jbb-badge').length === 0")
    lp = page.locator(f'{B} .jbb-panel input[data-field="parallelism"]')
    lp.fill("2")
    lp.press("Enter")
    page.wait_for_function(f"""() => document.querySelector('{node("map")} .jbb-node-kind')?.textContent.includes('×2')""")
    screenshot(builder, "builder-connected.png")

    # run: the result in the builder, the live dashboard below it
    page.locator(f"{B} button.jbb-run").click()
    page.wait_for_selector(f'{B} .jbb-runbar[data-status="completed"]', timeout=20_000)
    assert "(100 items)" in page.locator(f"{B} .jbb-runbar").inner_text()
    dash = page.locator(".jp-NotebookPanel .jetbench-builder-below .jetbench-dashboard")
    dash.wait_for()
    page.wait_for_function(
        """() => document.querySelector('.jetbench-builder-below .jb-status')?.dataset.status === 'completed'"""
    )
    screenshot(page.locator(".jp-NotebookPanel .jp-OutputArea-output").first, "builder-run.png")

    # the kernel side: builder.dag is the DAG on the canvas
    out = run_new_cell(
        page,
        'd = builder.dag; print("DAG", [(v.name, v.local_parallelism) for v in d.vertices], '
        '[(e.source.name, e.destination.name, e.routing.value) for e in d.edges], '
        'sorted(builder.job.result)[:3], builder.model.vertex("map")["params"])',
    )
    assert ("DAG [('numbers', 1), ('out', 1), ('map', 2)] "
            "[('numbers', 'map', 'unicast'), ('map', 'out', 'unicast')] [0, 2, 4] {'fn': 'x * 2'}") in out, out

    # Python edits show on the canvas; undo in the browser reverts them
    run_new_cell(page, 'builder.update_vertex("out", name="results")')
    page.wait_for_selector(node("results"))
    page.locator(f"{B} button.jbb-undo").click()
    page.wait_for_selector(node("out"))

    # 50 vertices: time to draw, and to apply an edit (Layout: browser -> kernel -> browser)
    run_new_cell(page, BIG)
    big = page.locator(".jp-NotebookPanel .jetbench-builder").nth(1)
    big.locator(".jbb-node").nth(49).wait_for()
    moved = '.jbb-node[data-name="m0_0"]'
    before = big.locator(moved).get_attribute("transform")
    run_new_cell(page, 'big.update_vertex("m0_0", x=3000, y=3000)')
    page.wait_for_function(
        "([sel, t]) => document.querySelectorAll('.jp-NotebookPanel .jetbench-builder')[1]"
        ".querySelector(sel).getAttribute('transform') !== t", arg=[moved, before])
    t0 = time.perf_counter()
    big.locator("button.jbb-layout").click()
    page.wait_for_function(
        "([sel, t]) => document.querySelectorAll('.jp-NotebookPanel .jetbench-builder')[1]"
        ".querySelector(sel).getAttribute('transform') === t", arg=[moved, before])
    edit_s = time.perf_counter() - t0
    draw_ms = float(big.get_attribute("data-draw-ms"))
    print(f"50 vertices: draw {draw_ms:.1f} ms, layout edit round trip {edit_s * 1000:.0f} ms")
    assert draw_ms < 100 and edit_s < 2.0, (draw_ms, edit_s)
    big.locator("button.jbb-fit").click()
    screenshot(big, "builder-50-vertices.png")
