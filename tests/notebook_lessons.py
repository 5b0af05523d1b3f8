"""What each teaching notebook must show, shared by the two tests that run them top to bottom:
tests/notebooks/test_notebooks.py (headless, nbclient) and tests/browser/test_notebooks_browser.py
(in `jetbench lab`, in Chromium). Each notebook runs in one of the two, never both."""

from __future__ import annotations

import re
from typing import Any

#: What each notebook must display (by MIME type) for its lesson to be visible: a figure that
#: silently turns into a text repr, or a widget that stops rendering, fails the test.
MUST_DISPLAY = {
    "01-getting-started": {"image/svg+xml", "text/html"},
    "02-cooperative-scheduling": {"application/vnd.jupyter.widget-view+json", "image/png", "image/svg+xml"},
    "03-backpressure-and-queues": {"application/vnd.jupyter.widget-view+json", "image/png", "image/svg+xml"},
    "04-idle-cpu-experiment": {"application/vnd.jupyter.widget-view+json", "image/png", "image/svg+xml"},
    "05-spark-scale-out": {"image/svg+xml", "text/html"},
    "06-writing-processors": {"application/vnd.jupyter.widget-view+json", "text/html"},
    "07-event-time-and-windows": {"text/html"},
    "08-fault-tolerance": {"image/svg+xml", "text/html"},
    "09-nexmark": {"application/vnd.jupyter.widget-view+json", "image/png", "image/svg+xml", "text/html"},
    "10-beam-on-jetbench": {"application/vnd.jupyter.widget-view+json", "image/svg+xml", "text/html"},
    "12-kafka": {"application/vnd.jupyter.widget-view+json"},
}

#: The notebooks the browser test runs top to bottom in `jetbench lab` (their live widgets are
#: what it checks); the headless test runs every other one.
RUN_IN_THE_BROWSER = ("01-getting-started", "02-cooperative-scheduling")


def parameter_overrides(parameters_source: str, overrides: dict[str, Any]) -> list[str]:
    """The lines of the cell a test sets after a notebook's parameters cell (papermill style):
    ``NAME = value`` for each override, each a name the parameters cell (``parameters_source``)
    assigns, so a renamed parameter cannot be overridden silently."""
    assert set(overrides) <= set(re.findall(r"^(\w+) = ", parameters_source, re.M)), overrides
    return [f"{k} = {v!r}" for k, v in overrides.items()]
