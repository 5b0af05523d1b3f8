"""The event-stream source: scripted ``(timestamp, item)`` events, emitted in order by one instance
(what ``jetbench.sources.test_stream`` reads, Beam's TestStream; the builder's "test stream").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .items_source import ItemsSourceP
from .kind_params import KindParamError, KindParams, expr


class EventStreamP(ItemsSourceP):
    """Emits scripted ``(timestamp, item)`` events in order, from global instance 0 only;
    snapshots save its position in the script (see `ItemsSourceP`)."""

    def __init__(self, events: tuple[tuple[float, Any], ...]):
        super().__init__(events)
        self.events = events

    def _my_part(self, items: Iterable[Any], n: int, k: int) -> Iterable[Any]:
        return self.events if k == 0 else ()


@dataclass(frozen=True, eq=False, repr=False)
class EventStreamSource(KindParams):
    """The event-stream source's parameter and vertex supplier (``event_stream_source``):
    scripted ``(timestamp, item)`` events, emitted in the given order.

    >>> event_stream_source([(0, "a"), (5, "b")])
    test_stream(2 events)
    """

    events: Iterable[tuple[float, Any]] = expr("[(0, 'a'), (400, 'b'), (1200, 'c')]",
                                               help="(timestamp ms, item) pairs, emitted in this order (evaluated at run)")
    processor = EventStreamP
    function = "event_stream_source"

    def __post_init__(self) -> None:
        try:  # read once, here: an iterator too
            object.__setattr__(self, "events", list(self.events))
        except TypeError:
            raise KindParamError(f"test_stream: events must be an iterable of (timestamp, item) pairs, "
                                 f"got {self.events!r}") from None
        super().__post_init__()

    def check(self) -> None:
        for i, event in enumerate(self.events):
            try:
                ts, _ = event
            except (TypeError, ValueError):
                raise KindParamError(f"test_stream: event {i} must be a (timestamp, item) pair, got {event!r}") from None
            if isinstance(ts, bool) or not isinstance(ts, int | float):
                raise KindParamError(f"test_stream: event {i} has a non-numeric timestamp {ts!r}")

    def arguments(self) -> dict[str, Any]:
        return {"events": tuple((ts, item) for ts, item in self.events)}

    def describe(self) -> str:
        return f"test_stream({len(self.params['events'])} events)"


#: the event-stream source's vertex supplier (its declaration, `EventStreamSource`)
event_stream_source = EventStreamSource


BUILDER_KINDS = (
    EventStreamSource.builder_kind(id="test_stream", label="test stream", category="source", inputs=False,
                                   outputs=True,
                                  description="scripted (ts, item) events from one instance; follow with insert watermarks"),
)
