"""The test-stream source: scripted ``(timestamp, item)`` events, emitted in order by one instance.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..core.errors import JetbenchError
from .builder_kind import Kind, Param, Reader, eval_expr
from .items_source import ItemsSourceP
from .supplier import ProcessorSupplier, made_by


class TestStreamP(ItemsSourceP):
    """Emits scripted ``(timestamp, item)`` events in order, from global instance 0 only;
    snapshots save its position in the script (see `ItemsSourceP`)."""

    __test__ = False  # not a pytest test class

    def __init__(self, events: tuple[tuple[float, Any], ...]):
        super().__init__(events)
        self.events = events

    def _my_part(self, items: Iterable[Any], n: int, k: int) -> Iterable[Any]:
        return self.events if k == 0 else ()


def test_stream_source(events: Iterable[tuple[float, Any]]) -> ProcessorSupplier:
    """A vertex supplier emitting scripted ``(timestamp, item)`` events in the given order.

    >>> test_stream_source([(0, "a"), (5, "b")])
    test_stream(2 events)
    """
    checked = []
    for i, event in enumerate(events):
        try:
            ts, item = event
        except (TypeError, ValueError):
            raise JetbenchError(f"test_stream: event {i} must be a (timestamp, item) pair, got {event!r}") from None
        if isinstance(ts, bool) or not isinstance(ts, int | float):
            raise JetbenchError(f"test_stream: event {i} has a non-numeric timestamp {ts!r}")
        checked.append((ts, item))
    return ProcessorSupplier(TestStreamP, tuple(checked), label=f"test_stream({len(checked)} events)")


test_stream_source.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def _read(supplier: Any, reader: Reader) -> dict[str, Any] | None:
    if not made_by(supplier, TestStreamP):
        return None
    return {"events": reader.literal(list(supplier.events), "events")}


BUILDER_KINDS = (
    Kind("test_stream", "test stream", "source", False, True,
         (Param("events", "expr", "[(0, 'a'), (400, 'b'), (1200, 'c')]",
                help="(timestamp ms, item) pairs, emitted in this order (evaluated at run)"),),
         lambda p, f, ns: test_stream_source(eval_expr(p["events"], ns, "events")),
         lambda p, f: (f"test_stream_source({p['events'].strip()})",
                       {"from jetbench.processors.test_stream_source import test_stream_source"}),
         "scripted (ts, item) events from one instance; follow with insert watermarks", read=_read),
)
