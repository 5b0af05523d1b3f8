"""Stateful mapping: Jet's ``mapStateful``, ``filterStateful`` and ``flatMapStateful``, one
state object per key (``group_by(key_fn).map_stateful(...)``) or one for all items
(``stage.map_stateful(...)``), with an optional time-to-live on streams.

``create_fn()`` makes a key's state when its first item comes; ``fn(state, key, item)`` (keyed)
or ``fn(state, item)`` (global) mutates it and gives: the new item (``map``; None: nothing),
whether to keep the item (``filter``), or an iterable of new items (``flat_map``; None:
nothing). On timestamped items (a stream) a ``ttl`` (ms) evicts the state of a key whose latest
item is more than ``ttl`` behind the watermark (its timestamp ``< watermark - ttl``); an item
that late is dropped (counted in ``late_events_dropped``). ``on_evict(state, key, watermark)``
(global: ``on_evict(state, watermark)``) may give a last item (``flat_map``: items), emitted
before the watermark and stamped with the time the state expired (its latest item's timestamp
plus ``ttl``). When the input completes every state left is evicted (``watermark`` infinite). (Jet's keyed ``filterStateful`` passes no key;
here every keyed function gets the key, so the three read alike.)

>>> from jetbench import Pipeline, run, sinks, sources
>>> p = Pipeline()
>>> def running_total(state, key, amount):
...     state[0] += amount
...     return key, state[0]
>>> sales = p.read_from(sources.items([("tea", 3), ("pen", 2), ("tea", 4)]))
>>> _ = sales.group_by(lambda s: s[0]).map_stateful(lambda: [0], lambda st, k, s: running_total(st, k, s[1])) \\
...     .write_to(sinks.collect())
>>> run(p)
[('tea', 3), ('pen', 2), ('tea', 7)]
>>> p = Pipeline()
>>> def new(seen, x):
...     fresh = x not in seen
...     seen.add(x)
...     return fresh
>>> _ = p.read_from(sources.items([1, 2, 1, 3, 2])).filter_stateful(set, new).write_to(sinks.collect())
>>> run(p)
[1, 2, 3]
>>> p = Pipeline()
>>> events = p.read_from(sources.test_stream([(0, ("a", 1)), (5, ("b", 1)), (100, ("a", 1)), (400, ("c", 1))]))
>>> def count(state, key, event):
...     state[0] += 1
...     return None
>>> _ = events.group_by(lambda e: e[0]).map_stateful(lambda: [0], count, ttl=50,
...     on_evict=lambda state, key, wm: (key, state[0])).write_to(sinks.collect())
>>> sorted(run(p))
[('a', 2), ('b', 1), ('c', 1)]
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from ..core.errors import JetbenchError
from ..core.inbox import Inbox
from ..core.items import Watermark
from .due_keys import DueKeys
from .emitter import EmittingProcessor
from .kind_params import KindParamError, KindParams, choice, code, flag, number
from .planning import Planner, PlanNode, StageSpec, plan_by_key
from .snapshotting import EntrySaver, instance_key, own_values

#: what ``fn`` gives: a new item, whether to keep the item, or new items
MODES = ("map", "filter", "flat_map")

_INF = float("inf")


def _first(entry: tuple[Any, ...]) -> Any:
    return entry[0]


class MapStatefulP(EmittingProcessor):
    """One state per key (``key_fn(item)``; one for all items when None): see the module.

    State: key -> ``[state, latest timestamp, time it is filed under for eviction]``.

    Snapshots: the results of items taken before the barrier go out first; then one
    ``(key, (state, latest timestamp))`` entry per key (restored into the instance owning the
    key; a key restored twice is an error: states cannot be merged) and the instance's last
    watermark and late-event count under a broadcast key (restored: the lowest watermark).
    """

    snapshot_support: ClassVar[str] = "supported"

    def __init__(self, key_fn: Callable[[Any], Hashable] | None, create_fn: Callable[[], Any],
                 fn: Callable[..., Any], mode: str = "map", ttl: int | float | None = None,
                 on_evict: Callable[..., Any] | None = None, timestamped: bool = False):
        self.key_fn = key_fn
        self.create_fn = create_fn
        self.fn = fn
        self.mode = mode
        self.ttl = ttl
        self.on_evict = on_evict
        self.timestamped = timestamped
        self.states: dict[Hashable, list[Any]] = {}
        self._deadlines = DueKeys()
        self._last_wm: float = -_INF
        self.late_events_dropped = 0
        self._saver = EntrySaver()
        self._restored: list[Any] = [[], []]

    def process(self, ordinal: int, inbox: Inbox) -> None:
        emitter = self._emitter
        room = emitter.free_room()
        if room <= 0:
            return
        states, key_fn, fn = self.states, self.key_fn, self.fn
        timestamped, ttl = self.timestamped, self.ttl
        low = self._last_wm - ttl if ttl is not None else -_INF
        out: list[Any] = []
        for entry in inbox.take(room):
            if timestamped:
                ts, item = entry
                if ts < low:
                    self.late_events_dropped += 1
                    continue
            else:
                ts, item = None, entry
            key = None if key_fn is None else key_fn(item)
            held = states.get(key)
            if held is None:
                held = states[key] = [self.create_fn(), ts, None]
                if ttl is not None:
                    held[2] = ts + ttl
                    self._deadlines.file(ts + ttl, key)
            elif timestamped and ts > held[1]:
                held[1] = ts
            result = fn(held[0], item) if key_fn is None else fn(held[0], key, item)
            self._add(out, ts, item, result)
        if out:
            emitter.emit(out)

    def _add(self, out: list[Any], ts: Any, item: Any, result: Any) -> None:
        """What ``fn`` (or ``on_evict``) gave, as output items (with ``ts`` when timestamped)."""
        mode = self.mode
        if mode == "filter":
            news: Iterable[Any] = (item,) if result else ()
        elif mode == "map":
            news = () if result is None else (result,)
        else:
            news = () if result is None else result
        if self.timestamped:
            out.extend((ts, new) for new in news)
        else:
            out.extend(news)

    def try_process_watermark(self, watermark: Watermark) -> bool:
        if not self._emitter.flush():
            return False
        wm = watermark.timestamp
        if wm > self._last_wm:
            self._last_wm = wm
            if self.ttl is not None:
                self._evict(wm)
                if not self._emitter.flush():
                    return False  # the watermark goes out after the evicted keys' last items
        return self.outbox.offer(watermark)

    def _evict(self, wm: float) -> None:
        """Evict every key whose latest timestamp is below ``wm - ttl`` (its deadline, latest +
        ttl, ``< wm``); ``on_evict``'s items are stamped with the deadline. At completion ``wm``
        is infinite: every key goes, in order of deadline."""
        assert self.ttl is not None
        times, due, states, ttl = self._deadlines.times, self._deadlines.due, self.states, self.ttl
        evicted: list[tuple[Any, Hashable, Any]] = []
        while times and times[0] < wm:
            for key in due.pop(heapq.heappop(times)):
                held = states.get(key)
                if held is None or held[2] is None:
                    continue
                deadline = held[1] + ttl
                if deadline < wm:
                    del states[key]
                    evicted.append((deadline, key, held[0]))
                elif deadline != held[2]:  # a later item moved it: filed again, once
                    held[2] = deadline
                    self._deadlines.file(deadline, key)
        if self.on_evict is None or not evicted:
            return
        evicted.sort(key=_first)  # in order of deadline (stable: ties in the order filed)
        out: list[Any] = []
        for deadline, key, state in evicted:
            result = self.on_evict(state, wm) if self.key_fn is None else self.on_evict(state, key, wm)
            self._add(out, deadline, None, result)
        if out:
            self._emitter.emit(out)

    def complete(self) -> bool:
        if self.ttl is not None and self.states and not self._emitter.pending:
            self._evict(_INF)  # the end of a stream: no state outlives it (as a last watermark would)
        return self._emitter.flush()

    # -- snapshots ------------------------------------------------------------------------------

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():
            return False
        return self._saver.save(self.outbox, self._state)

    def _state(self) -> list[tuple[Any, Any]]:
        entries: list[tuple[Any, Any]] = [(instance_key("MapStatefulP", self.context),
                                           (self._last_wm, self.late_events_dropped))]
        entries += [(key, (held[0], held[1])) for key, held in self.states.items()]
        return entries

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        mine, every, rest = own_values(inbox, "MapStatefulP", self.context)
        self._restored[0] += mine
        self._restored[1] += every
        for key, (state, latest) in rest:
            if key in self.states:
                raise JetbenchError(f"vertex {self.context.vertex_name!r}: the state of key {key!r} was restored "
                                    "twice; states cannot be merged")
            self.states[key] = [state, latest, None]

    def finish_snapshot_restore(self) -> bool:
        mine, every = self._restored
        self._restored = [[], []]
        if mine or every:
            self._last_wm = min(v[0] for v in (mine or every))
            self.late_events_dropped = sum(v[1] for v in mine)
        if self.ttl is not None:
            for key, held in self.states.items():
                held[2] = held[1] + self.ttl
                self._deadlines.file(held[2], key)
        return True


@dataclass(frozen=True, eq=False, repr=False)
class MapStateful(KindParams, StageSpec):
    """The parameters of stateful mapping, its vertex supplier (``map_stateful``) and its
    pipeline stage (``stage.map_stateful(...)``, ``filter_stateful``, ``flat_map_stateful``,
    after ``group_by(key_fn)`` keyed).

    Planning: keyed, one vertex behind an edge partitioned by the item's key; global, one
    vertex of parallelism 1 behind an all-to-one edge; items keep their timestamps (the plan
    sets ``timestamped``). The builder offers the keyed form (its functions take the key).
    """

    key_fn: Callable[[Any], Hashable] | None = code("x", optional=True, required=True,
                                                    help="the key of an item (its state's key)")
    create_fn: Callable[[], Any] = code("[0]", args=(), help="a key's new state: an expression, or a function body")
    fn: Callable[..., Any] = code("state[0] += 1\nreturn (key, state[0])", args=("state", "key", "x"),
                                  help="per item, with its key's state: map: the new item (None: none); "
                                       "filter: keep x when true; flat_map: the new items")
    mode: str = choice(MODES, "map", help="what fn gives")
    ttl: int | float | None = number(None, shown="", minimum=0, strict=True, optional=True,
                                     help="ms: evict a key's state once its latest item is this far behind "
                                          "the watermark (timestamped items; empty: never)")
    on_evict: Callable[..., Any] | None = code("", args=("state", "key", "wm"), optional=True,
                                               help="on eviction: a last item (flat_map: items; empty: none)")
    timestamped: bool = flag(help="items are (ts, item) pairs: fn sees the item, results keep ts")
    processor = MapStatefulP
    function = "map_stateful"
    kind: ClassVar[str] = "map_stateful"

    def check(self) -> None:
        if self.ttl is not None and not self.timestamped:
            raise KindParamError(f"{self.mode}_stateful: ttl needs timestamped items ((ts, item) pairs: event time "
                                 "and watermarks), e.g. add_timestamps() first")
        if self.on_evict is not None and self.ttl is None:
            raise KindParamError(f"{self.mode}_stateful: on_evict needs a ttl (without one no state is evicted)")
        if self.on_evict is not None and self.mode == "filter":
            raise KindParamError("filter_stateful: on_evict gives items, a filter none")

    def describe(self) -> str:
        return f"{self.mode}_stateful({getattr(self.fn, '__name__', self.fn)}{', keyed' if self.key_fn else ''})"

    def plan(self, planner: Planner, node: PlanNode) -> None:
        plan_by_key(planner, node, self.key_fn, lambda ts: replace(self, timestamped=ts))


#: the vertex supplier of stateful mapping (its declaration, `MapStateful`)
map_stateful = MapStateful


def _check(v: dict[str, Any], inbound: list[dict[str, Any]], outbound: list[dict[str, Any]]) -> list[tuple[str, str]]:
    if not str(v["params"].get("key_fn") or "").strip():
        return [("key_fn: the builder offers the keyed form (its functions take the key)", "error")]
    return []


def _edge_defaults(p: dict[str, Any], ordinal: int) -> dict[str, Any]:
    key = p.get("key_fn") or "x"
    return {"routing": "partitioned", "key": f"(lambda x: {key})(x[1])" if p.get("timestamped") else key}


BUILDER_KINDS = (
    MapStateful.builder_kind(id="map_stateful", label="map stateful", category="transform", inputs=True,
                             outputs=True, check=_check, edge_defaults=_edge_defaults,
                             description="per-key state: map, filter or flat_map with it; a ttl on streams"),
)
