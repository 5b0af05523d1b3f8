"""The timeline as a static SVG: what a notebook opened again without a kernel shows in place of
the live `jetbench.notebook.timeline.Timeline` (`widget_fallback`), drawn from the same state the
widget draws (`timeline_model.TimelineModel.state`): a lane per worker, calls as bars in their
vertex's colour (faded without progress, a red tick when slow), parks as the gaps between them,
snapshot barriers as purple ticks; a lane aggregated per bucket (zoomed out over a busy worker)
as a column per bucket, its height the share of the bucket spent in calls.

>>> from jetbench.core.trace import TraceEvent
>>> from jetbench.notebook.timeline_model import LaneBuffer, TimelineModel
>>> lane = LaneBuffer("w0", "cooperative")
>>> lane.add([TraceEvent("w0", "call", 0, 40_000, tasklet="src#0", vertex="src", progress=True, done=False,
...                      items_in=0, items_out=8, state="PROCESS")], {})
>>> svg = timeline_svg(TimelineModel("demo", slow_ns=1_000_000).state([lane], (0, 100_000), origin_ns=0))
>>> svg.count("<rect"), 'data-lane="w0"' in svg, ">src<" in svg
(3, True, True)
"""

from __future__ import annotations

import html
import re
from typing import Any

#: the live view's vertex colours (widgets/src/timeline_view.js), in the same order
PALETTE = ("#3b8fd9", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
           "#bcbd22", "#7f7f7f", "#1f4e79", "#b35806")
WIDTH, LABEL, LANE, GAP = 900, 110, 18, 6
_PROGRESS, _SLOW, _SNAPSHOT = 1, 2, 8


def colour(vertex: int) -> str:
    return "#999999" if vertex < 0 else PALETTE[vertex % len(PALETTE)]


def _duration(us: float) -> str:
    return f"{us / 1e6:.2f} s" if us >= 1e6 else f"{us / 1e3:.1f} ms" if us >= 1e3 else f"{us:.0f} µs"


def timeline_svg(state: dict[str, Any]) -> str:
    """The SVG of a timeline ``state``: lanes over its window, a legend of its vertices."""
    w0, w1 = state.get("window") or (0.0, 1.0)
    span = max(w1 - w0, 1e-9)
    plot = WIDTH - LABEL

    def x(us: float) -> float:
        return LABEL + max(0.0, min(plot, (us - w0) / span * plot))

    vertices = state.get("vertices") or []
    lanes = state.get("lanes") or []
    parts: list[str] = []
    for k, lane in enumerate(lanes):
        y = 4 + k * (LANE + GAP)
        worker = str(lane.get("worker"))
        name = re.sub(r"^jetbench\.[^.]*\.", "", worker)  # as the live view: without "jetbench.<job>."
        parts.append(f'<g data-lane="{html.escape(worker)}"><title>{html.escape(worker)}</title>'
                     f'<text x="0" y="{y + LANE - 5}" font-size="11">{html.escape(name[:18])}</text>'
                     f'<rect x="{LABEL}" y="{y}" width="{plot}" height="{LANE}" fill="#f4f4f5"/>')
        if lane.get("mode") == "buckets":
            width = lane.get("bucket_us", span) / span * plot
            for b, _calls, progress, busy, _noprog, _parked, _parks, _slow, top in lane.get("buckets") or []:
                share = min(busy / max(lane.get("bucket_us", 1.0), 1e-9), 1.0)
                h = max(share * LANE, 0.5)
                opacity = 1.0 if progress else 0.35
                parts.append(f'<rect x="{LABEL + b * width:.1f}" y="{y + LANE - h:.1f}" width="{max(width, 0.5):.1f}" '
                             f'height="{h:.1f}" fill="{colour(top)}" fill-opacity="{opacity}"/>')
        else:
            for call in lane.get("calls") or []:
                start, duration, vertex, flags = call[0], call[1], call[2], call[3]
                x0, x1 = x(start), x(start + duration)
                opacity = 1.0 if flags & _PROGRESS else 0.35
                parts.append(f'<rect x="{x0:.1f}" y="{y + 2}" width="{max(x1 - x0, 0.5):.1f}" height="{LANE - 4}" '
                             f'fill="{colour(vertex)}" fill-opacity="{opacity}"/>')
                if flags & _SLOW:
                    parts.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1.0):.1f}" height="2" fill="#dc2626"/>')
        for t, _tasklet in lane.get("marks") or []:
            parts.append(f'<rect x="{x(t) - 0.5:.1f}" y="{y - 2}" width="1.5" height="{LANE + 4}" fill="#7c3aed"/>')
        parts.append("</g>")
    y = 4 + len(lanes) * (LANE + GAP)
    parts.append(f'<text x="{LABEL}" y="{y + 10}" font-size="10" fill="#6b7280">{_duration(w0)}</text>'
                 f'<text x="{WIDTH}" y="{y + 10}" font-size="10" fill="#6b7280" text-anchor="end">{_duration(w1)}</text>')
    legend_x = LABEL + 80
    for i, name in enumerate(vertices):
        if legend_x > WIDTH - 60:
            break
        parts.append(f'<rect x="{legend_x}" y="{y + 2}" width="9" height="9" fill="{colour(i)}"/>'
                     f'<text x="{legend_x + 12}" y="{y + 10}" font-size="10">{html.escape(str(name))}</text>')
        legend_x += 24 + 6 * len(str(name))
    height = y + 16
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" '
            f'style="max-width: 100%; height: auto; font-family: sans-serif">{"".join(parts)}</svg>')


__all__ = ["PALETTE", "colour", "timeline_svg"]
