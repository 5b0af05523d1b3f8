"""Display methods draw what exists and never raise: an unfinished pipeline shows its stages with
the open end marked instead of a traceback."""

from __future__ import annotations

import html
import shutil
import subprocess

import pytest

from jetbench import DAG, Edge, ExecutionService, Pipeline, sinks, sources
from jetbench.processors import collect_sink, items_source

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")


def unfinished() -> Pipeline:
    p = Pipeline()
    p.read_from(sources.items([1, 2, 0])).map(lambda x: 1 / x)
    return p


def display_methods(obj) -> list[str]:
    return [name for name in dir(type(obj)) if name.startswith("_repr_") and name.endswith("_")]


def test_an_unfinished_pipeline_drafts_its_stages_and_marks_the_open_end():
    dot = unfinished().draft_dot()
    assert '"items" -> "map"' in dot
    assert '"map" -> "open end 1" [style=dashed' in dot
    assert dot.count("open end:") == 1


@needs_dot
def test_an_unfinished_pipeline_displays_as_svg():
    svg = unfinished()._repr_svg_()
    assert svg is not None and svg.lstrip().startswith(("<?xml", "<svg"))
    assert "open end:" in svg and "map" in svg


@needs_dot
def test_every_open_end_of_a_branching_pipeline_is_marked():
    p = Pipeline()
    nums = p.read_from(sources.items([1, 2]))
    nums.map(str).write_to(sinks.collect())
    nums.filter(bool)
    svg = p._repr_svg_()
    assert svg is not None and svg.count("open end:") == 1
    assert "write_to(sink)" in svg


@needs_dot
def test_a_finished_pipeline_displays_its_planned_dag():
    p = Pipeline()
    p.read_from(sources.items([1])).map(str).map(len).write_to(sinks.collect())
    svg = p._repr_svg_()
    fused = [v.name for v in p.to_dag().vertices if v.name.startswith("fused(")]
    assert svg is not None and len(fused) == 1
    assert fused[0] in html.unescape(svg) and "open end" not in svg


def test_display_methods_never_raise(monkeypatch):
    """With drawing broken underneath (dot failing to start), every display method of
    Pipeline, DAG and Job returns (None: the notebook falls back to the repr)."""
    dag = DAG()
    a, b = dag.new_vertex("a", items_source([1])), dag.new_vertex("b", collect_sink())
    dag.edge(Edge.between(a, b))
    job = ExecutionService().submit(dag)
    job.join(timeout=30)
    objects = [Pipeline(), unfinished(), dag, job]

    def broken(*args, **kwargs):
        raise OSError("dot cannot start")

    monkeypatch.setattr(subprocess, "run", broken)
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/dot")
    for obj in objects:
        for name in display_methods(obj):
            assert getattr(obj, name)() is None, (obj, name)
    assert display_methods(Pipeline()) and display_methods(dag)


def test_a_pipeline_whose_draft_fails_displays_nothing(monkeypatch):
    p = unfinished()
    monkeypatch.setattr(Pipeline, "draft_dot", lambda self: 1 / 0)
    assert p._repr_svg_() is None


def wide_dag(n: int = 12) -> DAG:
    dag = DAG()
    prev = dag.new_vertex("a-source-with-a-rather-long-name-0", items_source(range(3)))
    for i in range(1, n):
        nxt = dag.new_vertex(f"a-step-with-a-rather-long-name-{i}", collect_sink() if i == n - 1 else _identity())
        dag.edge(Edge.between(prev, nxt))
        prev = nxt
    return dag


def _identity():
    from jetbench.processors import map_processor

    return map_processor(lambda x: x)


@needs_dot
def test_notebooks_get_the_drawing_as_svg_and_as_html_fitted_to_the_cell_with_a_click_for_full_size():
    from IPython.core.formatters import DisplayFormatter

    p = Pipeline()
    p.read_from(sources.items([1])).map(str).write_to(sinks.collect())
    for shown in (wide_dag(), p, unfinished()):
        data, _ = DisplayFormatter().format(shown)
        assert {"text/plain", "image/svg+xml", "text/html"} <= data.keys(), type(shown)
        page = data["text/html"]
        assert page.startswith('<div class="jetbench-drawing" data-full="false"') and page.endswith("</svg>\n</div>")
        assert "<?xml" not in page and "<!DOCTYPE" not in page  # inline: no prolog
        svg = page[page.find("<svg"):]
        assert svg.startswith('<svg style="max-width: 100%; height: auto" ')  # scaled to the cell's width
        assert "s.style.maxWidth=f?'none':'100%'" in page  # a click toggles full size
        assert data["image/svg+xml"].endswith(svg.removesuffix("</div>"))
    assert "a-step-with-a-rather-long-name-11" in html.unescape(DisplayFormatter().format(wide_dag())[0]["text/html"])


def test_without_graphviz_a_dag_shows_its_repr(monkeypatch):
    from IPython.core.formatters import DisplayFormatter

    import jetbench.core.render as render

    monkeypatch.setattr(render.shutil, "which", lambda name: None)
    dag = wide_dag(3)
    assert dag._repr_mimebundle_() is None
    data, _ = DisplayFormatter().format(dag)
    assert set(data) == {"text/plain"} and data["text/plain"].startswith("DAG(")


@needs_dot
def test_a_graphviz_graph_is_fitted_the_same_way():
    import graphviz

    from jetbench.notebook import FittedDrawing

    diagram = graphviz.Digraph()
    diagram.edge("coordinator", "store")
    data = FittedDrawing(diagram)._repr_mimebundle_()
    assert data["text/html"].startswith('<div class="jetbench-drawing" data-full="false"')
    assert '<svg style="max-width: 100%; height: auto" ' in data["text/html"] and "coordinator" in data["image/svg+xml"]
    with pytest.raises(TypeError, match="SVG text or a graphviz graph, got int"):
        FittedDrawing(3)
