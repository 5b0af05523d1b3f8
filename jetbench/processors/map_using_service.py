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
from .builder_kind import TIMESTAMPED, Kind, Param, Reader
from .emitter import EmittingProcessor
from .planning import Planner, PlanNode, StageSpec, plan_unary
from .supplier import ProcessorSupplier, made_by


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


def map_using_service(
    service_factory: Callable[[], Any], fn: Callable[[Any, Any], Any], timestamped: bool = False
) -> ProcessorSupplier:
    """A vertex supplier emitting ``fn(service, item)``, with one service per instance."""
    _check_service("map_using_service", service_factory, fn)
    return ProcessorSupplier(MapUsingServiceP, service_factory, fn, timestamped,
                             label=f"map_using_service({getattr(fn, '__name__', fn)})")


# -- in the Pipeline API ------------------------------------------------------------------------


@dataclass(frozen=True)
class MapUsingServiceSpec(StageSpec):
    """``stage.map_using_service(service_factory, fn)``: one vertex, items keep their timestamps."""

    service_factory: Callable[[], Any]
    fn: Callable[[Any, Any], Any]
    kind: ClassVar[str] = "map_using_service"

    def plan(self, planner: Planner, node: PlanNode) -> None:
        plan_unary(planner, node, lambda ts: map_using_service(self.service_factory, self.fn, timestamped=ts))


# -- in the DAG builder ---------------------------------------------------------------------------

#: the service parameter of the service kinds
SERVICE = Param("service", "code", "dict()", args=(),
                help="makes the service, once per instance: an expression, or a function body")


def _read(supplier: Any, reader: Reader) -> dict[str, Any] | None:
    if not made_by(supplier, MapUsingServiceP):
        return None
    return {"service": reader.code(supplier.service_factory, "service", ()),
            "fn": reader.code(supplier.fn, "fn", ("service", "x")), "timestamped": bool(supplier.timestamped)}


BUILDER_KINDS = (
    Kind("map_using_service", "map using service", "transform", True, True,
         (SERVICE,
          Param("fn", "code", "x", args=("service", "x"), help="the new item, from the service and x (may block)"),
          TIMESTAMPED),
         lambda p, f, ns: map_using_service(f["service"], f["fn"], p["timestamped"]),
         lambda p, f: (f"map_using_service({f['service']}, {f['fn']}, {p['timestamped']!r})",
                       {"from jetbench.processors.map_using_service import map_using_service"}),
         "fn(service, x) on a thread of its own (blocking calls allowed)", read=_read),
)
