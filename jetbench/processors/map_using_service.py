"""Mapping through a blocking service: `MapUsingServiceP`, on a thread of its own.

The service is created once per processor instance by ``service_factory()`` and closed with
the processor. With ``timestamped=True`` (set by the planner) items are ``(ts, x)`` and the
output is ``(ts, fn(service, x))``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from ..core.errors import JetbenchError
from ..core.inbox import Inbox
from ..core.outbox import Outbox
from ..core.processor import ProcessorContext
from .emitter import EmittingProcessor
from .planning import Planner, PlanNode, StageSpec, plan_unary
from .supplier import ProcessorSupplier


def _close_service(service: Any) -> Any:
    """Call ``service.close()`` if it has one; return what it returned (maybe an awaitable)."""
    close = getattr(service, "close", None)
    return close() if callable(close) else None


class MapUsingServiceP(EmittingProcessor):
    """Emits ``fn(service, item)`` per item; ``fn`` may block (non-cooperative processor)."""

    is_cooperative = False

    def __init__(self, service_factory: Callable[[], Any], fn: Callable[[Any, Any], Any], timestamped: bool = False):
        self.service_factory = service_factory
        self.fn = fn
        self.timestamped = timestamped
        self.service: Any = None
        self._has_service = False

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        self.service = self.service_factory()
        self._has_service = True

    def process(self, ordinal: int, inbox: Inbox) -> None:
        emitter = self._emitter
        room = emitter.free_room()
        if room <= 0:
            return
        fn, service = self.fn, self.service
        if self.timestamped:
            out = [(ts, fn(service, x)) for ts, x in inbox.take(room)]
        else:
            out = [fn(service, x) for x in inbox.take(room)]
        if out:
            emitter.emit(out)

    def complete(self) -> bool:
        return self._emitter.flush()

    def close(self) -> None:
        if self._has_service:
            self._has_service = False
            service, self.service = self.service, None
            _close_service(service)


def _check_service(label: str, service_factory: Any, fn: Any) -> None:
    if not callable(service_factory):
        raise JetbenchError(f"{label}: service_factory must be callable, got {service_factory!r}")
    if not callable(fn):
        raise JetbenchError(f"{label}: the mapping function must be callable, got {fn!r}")


class MapUsingService(ProcessorSupplier):
    """Supplier of `MapUsingServiceP`; ``service_factory``, ``fn`` and ``timestamped`` are its params."""

    def __init__(self, service_factory: Callable[[], Any], fn: Callable[[Any, Any], Any], timestamped: bool = False):
        _check_service("map_using_service", service_factory, fn)
        super().__init__(MapUsingServiceP, service_factory, fn, timestamped, label="map_using_service")

    def __repr__(self) -> str:
        return f"{self.label}({getattr(self.fn, '__name__', self.fn)})"


def map_using_service(
    service_factory: Callable[[], Any], fn: Callable[[Any, Any], Any], timestamped: bool = False
) -> MapUsingService:
    """A vertex supplier emitting ``fn(service, item)``, with one service per instance."""
    return MapUsingService(service_factory, fn, timestamped)




# -- in the Pipeline API ------------------------------------------------------------------------


@dataclass(frozen=True)
class MapUsingServiceSpec(StageSpec):
    """``stage.map_using_service(service_factory, fn)``: one vertex, items keep their timestamps."""

    service_factory: Callable[[], Any]
    fn: Callable[[Any, Any], Any]
    kind: ClassVar[str] = "map_using_service"

    def plan(self, planner: Planner, node: PlanNode) -> None:
        plan_unary(planner, node, lambda ts: map_using_service(self.service_factory, self.fn, timestamped=ts))
