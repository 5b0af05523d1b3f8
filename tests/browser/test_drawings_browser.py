"""Graphviz drawings of DAGs and pipelines in a real JupyterLab 4 + Chromium: a wide one is scaled
down to the cell's width (no sideways scrolling to find its sink), a click shows it at full size,
another scales it back; a narrow one keeps its own size. Screenshots go to
tests/browser/artifacts/ and /tmp/team/shots/."""

from __future__ import annotations

import pytest

from .jlab import open_notebook, run_all, shot, write_notebook

pytestmark = pytest.mark.browser

WIDE = """\
from jetbench import DAG, Edge
from jetbench.processors import collect_sink, items_source, map_processor

wide = DAG()
prev = wide.new_vertex("read-the-events-of-every-auction-timeline", items_source(range(3)))
for i in range(1, 11):
    step = wide.new_vertex(f"ParDo(a-step-with-a-rather-long-beam-name-{i})", map_processor(lambda x: x))
    wide.edge(Edge.between(prev, step))
    prev = step
wide.edge(Edge.between(prev, wide.new_vertex("the-sink-at-the-far-right", collect_sink())))
wide
"""

NARROW = """\
small = DAG()
a = small.new_vertex("a", items_source([1]))
small.edge(Edge.between(a, small.new_vertex("b", collect_sink())))
small
"""

PIPELINE = """\
from jetbench import Pipeline, sinks, sources

p = Pipeline()
words = p.read_from(sources.items(["a b", "c"])).flat_map(str.split, name="split-every-line-into-its-words")
words.map(str.upper, name="upper-case-every-word").write_to(sinks.collect())
words.map(len, name="the-length-of-every-word").write_to(sinks.collect())
p
"""

OUT = ".jp-NotebookPanel .jp-Cell:nth-child({}) .jp-OutputArea-output"

GEOMETRY = """(out) => {
    const box = out.querySelector('.jetbench-drawing');
    const svg = box.querySelector('svg');
    return {full: box.dataset.full, shown: svg.getBoundingClientRect().width, natural: svg.width.baseVal.value,
            room: out.clientWidth, boxWidth: box.clientWidth, scroll: box.scrollWidth, outScroll: out.scrollWidth};
}"""


def test_a_wide_drawing_fits_the_cell_and_a_click_shows_it_full_size(lab, page):
    write_notebook(lab.root / "drawings.ipynb", [WIDE, NARROW, PIPELINE])
    open_notebook(page, lab, "drawings.ipynb")
    run_all(page, 3)
    cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
    outs = [cells.nth(i).locator(".jp-OutputArea-output").first for i in range(3)]
    for out in outs:  # JupyterLab picks the HTML (the SVG inline), not the <img> of the plain SVG
        out.locator(".jetbench-drawing svg").wait_for()
        assert out.locator("img").count() == 0

    wide = outs[0]
    g = wide.evaluate(GEOMETRY)
    assert g["natural"] > g["room"] * 1.5, g  # a drawing far wider than the cell ...
    assert g["shown"] <= g["boxWidth"] + 1 and g["scroll"] <= g["boxWidth"] + 1, g  # ... scaled to its width
    assert g["outScroll"] <= g["room"] + 1, g  # no sideways scrolling
    assert "the-sink-at-the-far-right" in wide.inner_text() or wide.locator("text=the-sink-at-the-far-right").count()
    shot(cells.nth(0), "drawing-wide-fitted.png")

    wide.locator(".jetbench-drawing").click()
    page.wait_for_function("(el) => el.dataset.full === 'true'", arg=wide.locator(".jetbench-drawing").element_handle())
    g = wide.evaluate(GEOMETRY)
    assert abs(g["shown"] - g["natural"]) <= 1, g  # full size
    assert g["scroll"] > g["boxWidth"] + 100, g  # the drawing scrolls sideways in its own box
    assert wide.locator(".jetbench-drawing").evaluate("(el) => getComputedStyle(el).cursor") == "zoom-out"
    shot(cells.nth(0), "drawing-wide-full-size.png")

    wide.locator(".jetbench-drawing").click()
    page.wait_for_function("(el) => el.dataset.full === 'false'", arg=wide.locator(".jetbench-drawing").element_handle())
    g = wide.evaluate(GEOMETRY)
    assert g["shown"] <= g["boxWidth"] + 1, g

    # a narrow drawing keeps its own size (never scaled up)
    g = outs[1].evaluate(GEOMETRY)
    assert abs(g["shown"] - g["natural"]) <= 1 and g["natural"] < g["room"], g
    # a pipeline's drawing goes the same way
    g = outs[2].evaluate(GEOMETRY)
    assert g["shown"] <= g["boxWidth"] + 1, g
    shot(cells.nth(2), "drawing-pipeline.png")
