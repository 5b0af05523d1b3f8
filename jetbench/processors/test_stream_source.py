"""The test-stream source: scripted ``(timestamp, item)`` events, emitted in order by one instance.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..core.errors import JetbenchError
from .items_source import ItemsSourceP


class TestStreamSource:
    """Supplier emitting scripted ``(timestamp, item)`` events in order, from instance 0 only."""

    __test__ = False  # not a pytest test class

    def __init__(self, events: Iterable[tuple[float, Any]]):
        checked = []
        for i, event in enumerate(events):
            try:
                ts, item = event
            except (TypeError, ValueError):
                raise JetbenchError(f"test_stream: event {i} must be a (timestamp, item) pair, got {event!r}") from None
            if isinstance(ts, bool) or not isinstance(ts, int | float):
                raise JetbenchError(f"test_stream: event {i} has a non-numeric timestamp {ts!r}")
            checked.append((ts, item))
        self.events = tuple(checked)

    def __call__(self) -> ItemsSourceP:
        # an iterator (not a sequence) is read by global instance 0 alone
        return ItemsSourceP(iter(self.events))

    def __repr__(self) -> str:
        return f"test_stream({len(self.events)} events)"

