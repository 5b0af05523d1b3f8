"""Small processors and helpers shared by the engine tests (real threads, no mocks).

Suppliers here keep every processor they create (`Supplier.created`) so a test can look at the
instances after the job; lists and dicts are appended to from worker threads, which is safe
under the GIL.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from jetbench import DAG, Edge, Processor, Watermark


class Supplier:
    """Calls ``factory()`` once per processor instance and remembers the instances."""

    def __init__(self, factory: Callable[[], Processor]):
        self.factory = factory
        self.created: list[Processor] = []
        self._lock = threading.Lock()

    def __call__(self) -> Processor:
        p = self.factory()
        with self._lock:
            self.created.append(p)
        return p

    def by_index(self) -> dict[int, Processor]:
        return {p.context.global_index: p for p in self.created}


class Lifecycle:
    """Shared log of lifecycle calls: (vertex, index, event) tuples, plus close counts."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int, str]] = []
        self.closes: Counter = Counter()
        self.instances: list[Tracked] = []  # every processor created with this lifecycle

    def log(self, p: Processor, event: str) -> None:
        ctx = getattr(p, "context", None)
        key = (ctx.vertex_name, ctx.global_index) if ctx else (getattr(p, "label", "?"), -1)
        self.events.append((*key, event))
        if event == "close":
            self.closes[key] += 1


class Tracked(Processor):
    """Base for test processors: records lifecycle calls into an optional `Lifecycle`."""

    def __init__(self, lifecycle: Lifecycle | None = None):
        self.lifecycle = lifecycle
        self.closed = 0
        self.initialized = False
        if lifecycle is not None:
            lifecycle.instances.append(self)

    def init(self, outbox, context) -> None:
        super().init(outbox, context)
        self.initialized = True
        if self.lifecycle is not None:
            self.lifecycle.log(self, "init")

    def close(self) -> None:
        self.closed += 1
        if self.lifecycle is not None:
            self.lifecycle.log(self, "close")


class ListSource(Tracked):
    """Offers items one by one, at most ``per_call`` per `complete()` call; counts refusals.

    With ``split`` a list is split over instances by stride (instance k of n: items[k::n]);
    otherwise every instance emits all items. ``tag`` wraps items as (global_index, item).
    Items may include `Watermark` objects, offered like any item.
    """

    def __init__(
        self,
        items: Iterable[Any],
        per_call: int | None = None,
        split: bool = True,
        tag: bool = False,
        ordinal: Any = None,
        lifecycle: Lifecycle | None = None,
    ):
        super().__init__(lifecycle)
        self.items = list(items)
        self.per_call = per_call
        self.split = split
        self.tag = tag
        self.ordinal = ordinal
        self.pos = 0
        self.refusals = 0
        self.offered: list[Any] = []

    def init(self, outbox, context) -> None:
        super().init(outbox, context)
        if self.split:
            self.items = self.items[context.global_index :: context.total_parallelism]
        if self.tag:
            self.items = [
                x if isinstance(x, Watermark) else (context.global_index, x) for x in self.items
            ]

    def complete(self) -> bool:
        budget = self.per_call if self.per_call is not None else len(self.items)
        emitted = 0
        while self.pos < len(self.items):
            if emitted >= budget:
                return False
            item = self.items[self.pos]
            if not self.outbox.offer(item, self.ordinal):
                self.refusals += 1
                return False
            self.offered.append(item)
            self.pos += 1
            emitted += 1
        return True


class RecordingSink(Tracked):
    """Records ``(global_index, item)`` into a shared list and its own; optional slowness.

    ``max_per_call`` limits the items taken per `process` call (cooperative slow sink);
    ``sleep_s`` sleeps per call (use with ``cooperative=False``). Watermarks are recorded as
    ``(global_index, Watermark)`` when ``record_watermarks``.
    """

    def __init__(
        self,
        shared: list | None = None,
        max_per_call: int | None = None,
        sleep_s: float = 0.0,
        cooperative: bool = True,
        record_watermarks: bool = False,
        lifecycle: Lifecycle | None = None,
    ):
        super().__init__(lifecycle)
        self.shared = shared if shared is not None else []
        self.items: list[Any] = []
        self.events: list[tuple] = []  # ("item", ordinal, item) / ("wm", ts) / ("complete_edge", o)
        self.max_per_call = max_per_call
        self.sleep_s = sleep_s
        self.is_cooperative = cooperative
        self.record_watermarks = record_watermarks
        self.processed = 0
        self.empty_inbox_calls = 0

    def process(self, ordinal: int, inbox) -> None:
        if not inbox:
            self.empty_inbox_calls += 1
        if self.sleep_s:
            time.sleep(self.sleep_s)
        n = 0
        while inbox and (self.max_per_call is None or n < self.max_per_call):
            item = inbox.remove()
            self.items.append(item)
            self.shared.append((self.context.global_index, item))
            self.events.append(("item", ordinal, item))
            self.processed += 1
            n += 1

    def try_process_watermark(self, watermark: Watermark) -> bool:
        self.events.append(("wm", watermark.timestamp))
        if self.record_watermarks:
            self.shared.append((self.context.global_index, watermark))
        return True

    def complete_edge(self, ordinal: int) -> bool:
        self.events.append(("complete_edge", ordinal))
        return True

    def complete(self) -> bool:
        self.events.append(("complete",))
        return True


def linear_dag(
    source_supplier: Callable[[], Processor],
    sink_supplier: Callable[[], Processor],
    source_lp: int | None = 1,
    sink_lp: int | None = 1,
    configure: Callable[[Edge], Edge] = lambda e: e,
) -> DAG:
    """source -> sink with one edge configured by ``configure``."""
    dag = DAG()
    src = dag.new_vertex("source", source_supplier, source_lp)
    snk = dag.new_vertex("sink", sink_supplier, sink_lp)
    dag.edge(configure(Edge.between(src, snk)))
    return dag


def wait_until(
    predicate: Callable[[], bool], timeout: float = 5.0, interval: float = 0.002
) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
