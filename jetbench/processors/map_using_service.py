"""Mapping through a blocking service: `MapUsingServiceP`, on a thread of its own.

The service is created once per processor instance by ``service_factory()`` and closed with
the processor. With ``timestamped=True`` (set by the planner) items are ``(ts, x)`` and the
output is ``(ts, fn(service, x))``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from ..core.inbox import Inbox
from ..core.outbox import Outbox
from ..core.processor import ProcessorContext
from .emitter import EmittingProcessor
from .kind_params import KindParams, choice, code, flag
from .planning import Planner, PlanNode, StageSpec, plan_unary


def _close_service(service: Any) -> Any:
    """Call ``service.close()`` if it has one; return what it returned (maybe an awaitable)."""
    close = getattr(service, "close", None)
    return close() if callable(close) else None


#: what ``fn(service, item)`` gives: the new item, whether to keep the item, or new items
SERVICE_MODES = ("map", "filter", "flat_map")


class MapUsingServiceP(EmittingProcessor):
    """Per item, ``fn(service, item)``; ``fn`` may block (non-cooperative processor). By
    ``mode``: emits the result (``map``), the item when the result is true (``filter``) or every
    item of the result (``flat_map``, None: none)."""

    is_cooperative = False

    def __init__(self, service_factory: Callable[[], Any], fn: Callable[[Any, Any], Any], timestamped: bool = False,
                 mode: str = "map"):
        self.service_factory = service_factory
        self.fn = fn
        self.timestamped = timestamped
        self.mode = mode
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
        fn, service, mode = self.fn, self.service, self.mode
        out: list[Any]
        if self.timestamped:
            if mode == "map":
                out = [(ts, fn(service, x)) for ts, x in inbox.take(room)]
            elif mode == "filter":
                out = [(ts, x) for ts, x in inbox.take(room) if fn(service, x)]
            else:
                out = [(ts, y) for ts, x in inbox.take(room) for y in fn(service, x) or ()]
        elif mode == "map":
            out = [fn(service, x) for x in inbox.take(room)]
        elif mode == "filter":
            out = [x for x in inbox.take(room) if fn(service, x)]
        else:
            out = [y for x in inbox.take(room) for y in fn(service, x) or ()]
        if out:
            emitter.emit(out)

    def close(self) -> None:
        if self._has_service:
            self._has_service = False
            service, self.service = self.service, None
            _close_service(service)


def service_factory_param() -> Any:
    """The ``service_factory`` parameter of the service kinds."""
    return code("dict()", args=(), was=("service",),
                help="makes the service, once per instance: an expression, or a function body")


@dataclass(frozen=True, eq=False, repr=False)
class MapUsingService(KindParams, StageSpec):
    """The parameters of a map (filter, flat_map: ``mode``) through a blocking service, its
    vertex supplier (``map_using_service``: ``fn(service, item)``, one service per instance) and
    its pipeline stage (``stage.map_using_service(service_factory, fn)``,
    ``filter_using_service``, ``flat_map_using_service``: one vertex, items keep their
    timestamps; the plan sets ``timestamped``).

    >>> map_using_service(dict, dict.get)
    map_using_service(get)
    """

    service_factory: Callable[[], Any] = service_factory_param()
    fn: Callable[[Any, Any], Any] = code("x", args=("service", "x"),
                                         help="the new item, from the service and x (may block)")
    timestamped: bool = flag(help="items are (ts, item) pairs: work on the item, keep ts")
    mode: str = choice(SERVICE_MODES, "map", help="what fn gives: the new item, keep x when true, the new items")
    processor = MapUsingServiceP
    function = "map_using_service"
    kind: ClassVar[str] = "map_using_service"

    def describe(self) -> str:
        return f"{self.mode}_using_service({getattr(self.fn, '__name__', self.fn)})"

    def plan(self, planner: Planner, node: PlanNode) -> None:
        plan_unary(planner, node, lambda ts: replace(self, timestamped=ts))


#: the vertex supplier of a map through a blocking service (its declaration, `MapUsingService`)
map_using_service = MapUsingService
MapUsingServiceSpec = MapUsingService


BUILDER_KINDS = (
    MapUsingService.builder_kind(id="map_using_service", label="map using service", category="transform",
                                 inputs=True, outputs=True,
                                 description="fn(service, x) on a thread of its own (blocking calls allowed): map, filter or flat_map"),
)
