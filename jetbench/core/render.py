"""Drawing a DAG: Graphviz DOT text (standard library), and SVG through the ``dot`` program."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from typing import Protocol

from .queues import DEFAULT_QUEUE_SIZE
from .routing import Routing

#: routings drawn dashed: they do not spread items evenly over the consumer's instances
_DASHED = (Routing.PARTITIONED, Routing.ALL_TO_ONE)


class DrawnVertex(Protocol):
    """What a drawing reads of a vertex (`jetbench.core.dag.Vertex`)."""

    @property
    def name(self) -> str: ...

    @property
    def local_parallelism(self) -> int | None: ...


class DrawnEdge(Protocol):
    """What a drawing reads of a finished edge (`jetbench.core.dag.Edge`)."""

    @property
    def source(self) -> DrawnVertex: ...

    @property
    def target(self) -> DrawnVertex: ...

    @property
    def routing(self) -> Routing: ...

    @property
    def source_ordinal(self) -> int: ...

    @property
    def destination_ordinal(self) -> int: ...

    @property
    def edge_priority(self) -> int: ...

    @property
    def edge_queue_size(self) -> int: ...


class Drawable(Protocol):
    """What a drawing reads of a DAG (`jetbench.core.dag.DAG`, which draws itself with these
    functions: this module does not import it)."""

    @property
    def vertices(self) -> Sequence[DrawnVertex]: ...

    @property
    def edges(self) -> Sequence[DrawnEdge]: ...


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _quote(text: str) -> str:
    return f'"{_escape(text)}"'


def to_dot(dag: Drawable, default_parallelism: int | None = None) -> str:
    r"""The DAG in Graphviz's DOT language: vertices labelled with parallelism, edges with
    ordinals, routing, priority and queue size.

    >>> from jetbench import DAG, Edge
    >>> from jetbench.processors import items_source, collect_sink
    >>> dag = DAG()
    >>> a, b = dag.new_vertex("a", items_source([1])), dag.new_vertex("b", collect_sink(), 2)
    >>> print(to_dot(dag.edge(Edge.between(a, b).broadcast())).splitlines()[3])
      "a" [label="a\nparallelism default"];
    """
    lines = [
        "digraph DAG {",
        "  rankdir=LR;",
        '  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", fontname="Helvetica", fontsize=11];',
    ]
    for v in dag.vertices:
        lp = v.local_parallelism or default_parallelism
        label = f"{_escape(v.name)}\\nparallelism {'default' if lp is None else lp}"
        lines.append(f'  {_quote(v.name)} [label="{label}"];')
    for e in dag.edges:
        parts = [e.routing.value]
        if e.source_ordinal or e.destination_ordinal:
            parts.append(f"{e.source_ordinal} -> {e.destination_ordinal}")
        if e.edge_priority:
            parts.append(f"priority {e.edge_priority}")
        if e.edge_queue_size != DEFAULT_QUEUE_SIZE:
            parts.append(f"queue {e.edge_queue_size}")
        style = ', style="dashed"' if e.routing in _DASHED else ""
        lines.append(
            f"  {_quote(e.source.name)} -> {_quote(e.target.name)} "
            f'[label={_quote(", ".join(parts))}, fontname="Helvetica", fontsize=9{style}];'
        )
    lines.append("}")
    return "\n".join(lines)


def dot_string(text: str) -> str:
    """``text`` as a quoted DOT string."""
    return _quote(text)


def to_svg(dag: Drawable) -> str | None:
    """SVG text drawn by Graphviz's ``dot`` program, or None if ``dot`` is not installed."""
    return dot_to_svg(to_dot(dag))


def dot_to_svg(dot_text: str) -> str | None:
    """SVG of a DOT text drawn by Graphviz's ``dot`` program; None if ``dot`` is not installed,
    fails or takes more than 30 s (display methods call this: it never raises)."""
    dot = shutil.which("dot")
    if dot is None:
        return None
    try:
        done = subprocess.run([dot, "-Tsvg"], input=dot_text, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return fitted(done.stdout)


_FIT_STYLE = '<svg style="max-width: 100%; height: auto" '


def fitted(svg: str) -> str:
    """``svg`` scaling down to the width of what holds it (where it is inline in HTML) instead of
    overflowing it; unchanged if it does already."""
    return svg if _FIT_STYLE in svg else svg.replace("<svg ", _FIT_STYLE, 1)


#: the drawing's click handler: full size (scrolling sideways) <-> scaled to the cell's width
_TOGGLE = ("var s=this.querySelector('svg'),f=this.dataset.full!=='true';this.dataset.full=f;"
           "s.style.maxWidth=f?'none':'100%';this.style.cursor=f?'zoom-out':'zoom-in'")
#: on hover, a zoom cursor only where a click changes something (a drawing scaled down, or full)
_HOVER = ("var s=this.querySelector('svg');this.style.cursor=this.dataset.full==='true'?'zoom-out':"
          "(s.getBoundingClientRect().width<s.width.baseVal.value-1?'zoom-in':'')")


def drawing_bundle(svg: str | None) -> dict[str, str] | None:
    """What a notebook shows of a drawing (a display method's MIME bundle; None without one):
    the SVG (``image/svg+xml``) and, preferred by JupyterLab, HTML with the SVG inline, scaled
    down to the cell's width; a click shows it at full size (scrolling sideways), another click
    scales it back."""
    if svg is None:
        return None
    svg = fitted(svg)
    inline = svg[svg.find("<svg"):]  # in HTML: no XML prolog or doctype
    html = (f'<div class="jetbench-drawing" data-full="false" style="overflow-x: auto" '
            f'title="click: full size / fit to the width" onclick="{_TOGGLE}" onmouseover="{_HOVER}">{inline}</div>')
    return {"image/svg+xml": svg, "text/html": html}

