"""Mapping through an asyncio service: `AsyncMapP`, cooperative, with a bounded number of calls
in flight.

The service is created once per processor instance by ``service_factory()`` and closed with
the processor. With ``timestamped=True`` (set by the planner) items are ``(ts, x)`` and the
output is ``(ts, await fn(service, x))``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from ..core.errors import JetbenchError
from ..core.inbox import Inbox
from ..core.items import Watermark
from ..core.outbox import Outbox
from ..core.processor import ProcessorContext
from .emitter import EmittingProcessor
from .kind_params import KindParams, code, flag, number
from .map_using_service import _close_service, service_factory_param
from .planning import Planner, PlanNode, StageSpec, plan_unary
from .snapshotting import instance_key, own_values

#: Seconds `AsyncMapP.close` waits for its event loop to cancel the calls in flight and stop.
ASYNC_SHUTDOWN_TIMEOUT_S = 5.0

#: a call in flight: (its item's timestamp or None, its item, its future)
_Call = tuple[Any, Any, concurrent.futures.Future[Any]]

class AsyncMapP(EmittingProcessor):
    """Emits the results of ``await async_fn(service, item)``, with up to ``max_concurrent``
    calls in flight on an asyncio loop that runs on the processor's own daemon thread
    (``jetbench.async-<vertex>-<index>``, started in ``init``, stopped and joined in ``close``).

    Cooperative: ``process``/``complete`` never wait; they submit with
    ``asyncio.run_coroutine_threadsafe`` and poll the futures. Results leave in input order
    (``preserve_order``) or as they finish. A watermark waits until every call submitted before
    it has been emitted. The first exception of a call is raised again here, failing the job.

    ``service_factory()`` runs in ``init``; if it returns an awaitable, that is awaited on the
    loop (for services that must be created inside it). ``service.close()`` may be sync or async.

    Snapshots (Jet's unordered async mapping does the same): the results already taken go out
    first; the calls still in flight are not waited for: their items are saved, in order,
    under a broadcast key naming the instance, and a restored instance calls ``async_fn``
    again for each of them before any new item. A result that left after the barrier belongs
    to the next snapshot, so none is lost and, with exactly-once, none doubled.
    """

    snapshot_support: ClassVar[str] = "supported"

    def __init__(
        self,
        service_factory: Callable[[], Any],
        async_fn: Callable[[Any, Any], Coroutine[Any, Any, Any]],
        max_concurrent: int = 16,
        preserve_order: bool = True,
        timestamped: bool = False,
    ):
        self.service_factory = service_factory
        self.async_fn = async_fn
        self.max_concurrent = max_concurrent
        self.preserve_order = preserve_order
        self.timestamped = timestamped
        self.service: Any = None
        self._has_service = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        # (ts or None, item, future) in submission order
        self._in_flight: deque[_Call] = deque()

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(
            target=loop.run_forever,
            name=f"jetbench.async-{context.vertex_name}-{context.global_index}",
            daemon=True,
        )
        self._thread.start()
        service = self.service_factory()
        if inspect.isawaitable(service):
            service = self._run_on_loop(service)
        self.service = service
        self._has_service = True

    def _run_on_loop(self, awaitable: Awaitable[Any]) -> Any:
        async def wrapper() -> Any:
            return await awaitable

        loop = self._loop
        assert loop is not None  # called by init, which has started the loop
        return asyncio.run_coroutine_threadsafe(wrapper(), loop).result(ASYNC_SHUTDOWN_TIMEOUT_S)

    # -- processing ----------------------------------------------------------------------------

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if not self._emit_done():
            return
        in_flight = self._in_flight
        free = self.max_concurrent - len(in_flight)
        if free <= 0:
            return
        loop, fn, service = self._loop, self.async_fn, self.service
        assert loop is not None  # started by init, cleared only by close
        submit = asyncio.run_coroutine_threadsafe
        append = in_flight.append
        if self.timestamped:
            for ts, x in inbox.take(free):
                append((ts, x, submit(fn(service, x), loop)))
        else:
            for x in inbox.take(free):
                append((None, x, submit(fn(service, x), loop)))

    def try_process(self) -> bool:
        self._emit_done()  # results that finished while no input arrived
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        # everything submitted before the watermark must leave before it
        if not self._emit_done() or self._in_flight:
            return False
        return self.outbox.offer(watermark)

    def complete(self) -> bool:
        return self._emit_done() and not self._in_flight

    def _emit_done(self) -> bool:
        """Emit the finished results the outbox has room for; True if nothing is left pending
        in the emitter. Raises the exception of a failed call."""
        emitter = self._emitter
        if not emitter.flush():
            return False
        in_flight = self._in_flight
        if not in_flight:
            return True
        room = emitter.room()
        if room <= 0:
            return False
        done: list[_Call]
        if self.preserve_order:
            done = []
            while in_flight and len(done) < room and in_flight[0][2].done():
                done.append(in_flight.popleft())
            if not done:  # fail fast: a later call may have failed while the head still runs
                for _, _, future in in_flight:
                    if future.done() and not future.cancelled():
                        error = future.exception()
                        if error is not None:
                            raise error
        else:
            waiting: deque[_Call]
            done, waiting = [], deque()
            for entry in in_flight:
                (done if len(done) < room and entry[2].done() else waiting).append(entry)
            self._in_flight = waiting
        if not done:
            return True
        if self.timestamped:
            out = [(ts, future.result()) for ts, _, future in done]
        else:
            out = [future.result() for _, _, future in done]
        return emitter.emit(out)

    # -- snapshots -----------------------------------------------------------------------------

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():  # results taken before the barrier go first
            return False
        calls = [(ts, x) for ts, x, _ in self._in_flight]
        return self.outbox.offer_to_snapshot(instance_key("AsyncMapP", self.context), calls)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        mine, _, _ = own_values(inbox, "AsyncMapP", self.context)
        loop, fn, service = self._loop, self.async_fn, self.service
        assert loop is not None  # started by init
        submit = asyncio.run_coroutine_threadsafe
        for calls in mine:
            for ts, x in calls:
                self._in_flight.append((ts, x, submit(fn(service, x), loop)))

    # -- teardown ------------------------------------------------------------------------------

    def close(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None:
            return
        assert thread is not None  # init sets both
        self._loop = self._thread = None
        self._in_flight = deque()
        has_service, self._has_service = self._has_service, False
        service, self.service = self.service, None
        try:
            shutdown = asyncio.run_coroutine_threadsafe(self._shutdown(service, has_service), loop)
            try:
                shutdown.result(ASYNC_SHUTDOWN_TIMEOUT_S)
            finally:
                loop.call_soon_threadsafe(loop.stop)
                thread.join(ASYNC_SHUTDOWN_TIMEOUT_S)
        finally:
            if thread.is_alive():
                raise JetbenchError(f"thread {thread.name} did not stop within {ASYNC_SHUTDOWN_TIMEOUT_S} s")
            loop.close()

    @staticmethod
    async def _shutdown(service: Any, has_service: bool) -> None:
        """On the loop: cancel the calls still running, close the service, end async generators."""
        current = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not current]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        try:
            if has_service:
                closing = _close_service(service)
                if inspect.isawaitable(closing):
                    await closing
        finally:
            await asyncio.get_running_loop().shutdown_asyncgens()


@dataclass(frozen=True, eq=False, repr=False)
class MapUsingServiceAsync(KindParams, StageSpec):
    """The parameters of a map through an asyncio service, its vertex supplier
    (``map_using_service_async``: ``await async_fn(service, item)``, up to ``max_concurrent``
    calls in flight per instance, in input order unless ``preserve_order=False``) and its
    pipeline stage (``stage.map_using_service_async(service_factory, async_fn, max_concurrent)``:
    one vertex, items keep their timestamps; the plan sets ``timestamped``).

    >>> async def lookup(service, x):
    ...     return service.get(x, x)
    >>> map_using_service_async(dict, lookup, max_concurrent=0)
    Traceback (most recent call last):
        ...
    jetbench.processors.kind_params.KindParamError: map_using_service_async: max_concurrent must be an int >= 1, got 0
    """

    service_factory: Callable[[], Any] = service_factory_param()
    async_fn: Callable[[Any, Any], Coroutine[Any, Any, Any]] = code(
        "x", args=("service", "x"), asynchronous=True, was=("fn",),
        help="the body of an async function of service and x (use await), or an expression")
    max_concurrent: int = number(16, integer=True, minimum=1, help="calls in flight per instance")
    preserve_order: bool = flag(True, help="results in input order (else as they finish)")
    timestamped: bool = flag(help="items are (ts, item) pairs: work on the item, keep ts")
    processor = AsyncMapP
    function = "map_using_service_async"
    kind: ClassVar[str] = "map_using_service_async"

    def describe(self) -> str:
        return f"map_using_service_async({getattr(self.async_fn, '__name__', self.async_fn)})"

    def plan(self, planner: Planner, node: PlanNode) -> None:
        plan_unary(planner, node, lambda ts: replace(self, timestamped=ts))


#: the vertex supplier of a map through an asyncio service (its declaration, `MapUsingServiceAsync`)
map_using_service_async = MapUsingServiceAsync
MapUsingServiceAsyncSpec = MapUsingServiceAsync


BUILDER_KINDS = (
    MapUsingServiceAsync.builder_kind(
        id="map_using_service_async", label="map using async service", category="transform", inputs=True,
        outputs=True, description="await async_fn(service, x), several calls in flight, on an asyncio loop"),
)
