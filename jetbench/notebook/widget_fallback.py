"""A static copy (a "snapshot" of its view) beside a live widget, for when no kernel holds the
widget's model. (Not `jetbench.core.snapshot`, a job's state for fault tolerance.)

A notebook opened again later (or on a page that runs no kernel) cannot show a widget: Jupyter
says "Error displaying widget: model not found". `display_with_snapshot` displays the widget and,
in an output of its own right after it, an HTML snapshot of it (an SVG drawing, a table). While
the widget is live its stylesheet hides the snapshot with one CSS rule, so the snapshot only shows
when the widget cannot::

    .jp-OutputArea-child:has(.ROOT-CLASS) + .jp-OutputArea-child:has(.jetbench-snapshot[data-for="NAME"]) { display: none; }

where ROOT-CLASS is the widget's own root element's class and NAME the ``name`` given here
(`hide_rule` writes it). The snapshot is refreshed with `Snapshot.update` (e.g. after each cell,
or when a job ends), so a saved notebook holds the last state.

>>> html = snapshot_html("<svg/>", "builder", "the DAG")
>>> 'data-for="builder"' in html and "<svg/>" in html and "the DAG" in html
True
>>> hide_rule("jetbench-dashboard", "dashboard").startswith(".jp-OutputArea-child:has(.jetbench-dashboard)")
True
"""

from __future__ import annotations

import html as html_lib
from collections.abc import Callable
from typing import Any

SNAPSHOT_CLASS = "jetbench-snapshot"


def snapshot_html(body: str, name: str, caption: str) -> str:
    """The snapshot's HTML: ``body`` (trusted markup: an SVG drawing, a table) under a one-line
    ``caption`` (plain text), scaled to the cell's width."""
    return (f'<div class="{SNAPSHOT_CLASS}" data-for="{html_lib.escape(name)}" style="max-width: 100%; overflow-x: auto">'
            f'<div style="font-size: 11px; color: #6b7280; margin-bottom: 2px">{html_lib.escape(caption)}</div>'
            f"{body}</div>")


def hide_rule(root_class: str, name: str) -> str:
    """The CSS rule a widget's stylesheet holds so that, live, it hides its snapshot."""
    return (f".jp-OutputArea-child:has(.{root_class}) + "
            f'.jp-OutputArea-child:has(.{SNAPSHOT_CLASS}[data-for="{name}"]) {{ display: none; }}')


class Snapshot:
    """The display of a widget's snapshot: `update` shows ``make()`` again in the same output."""

    def __init__(self, make: Callable[[], str | None], name: str, caption: str):
        self._make = make
        self.name = name
        self.caption = caption
        self._handle: Any = None
        self._shown: str | None = None

    def html(self) -> str:
        try:
            body = self._make()
        except Exception as exc:  # a display never raises
            body = f"<pre>(no snapshot: {html_lib.escape(type(exc).__name__)}: {html_lib.escape(str(exc))})</pre>"
        return snapshot_html(body or "", self.name, self.caption)

    def display(self) -> None:
        from IPython.display import HTML, display

        self._shown = self.html()
        self._handle = display(HTML(self._shown), display_id=True)

    def update(self) -> bool:
        """Show the snapshot again if it changed; True if it did (False if never displayed)."""
        if self._handle is None:
            return False
        text = self.html()
        if text == self._shown:
            return False
        self._shown = text
        from IPython.display import HTML

        self._handle.update(HTML(text))
        return True


class Shown:
    """A display bundle as an object `IPython.display.display` shows: a widget's own view,
    without calling back into the widget's ``_ipython_display_`` (which shows it with its
    snapshot)."""

    def __init__(self, bundle: Any):
        self.bundle = bundle

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.bundle


def display_with_snapshot(widget: Any, make: Callable[[], str | None], name: str, caption: str) -> Snapshot:
    """Display ``widget`` (anything `IPython.display.display` shows) and, right after it, the
    snapshot ``make()`` returns (HTML; None for none); returns the `Snapshot` to update later.
    The widget's stylesheet must hold `hide_rule` (its root class, ``name``)."""
    from IPython.display import display

    display(widget)
    snap = Snapshot(make, name, caption)
    snap.display()
    return snap
