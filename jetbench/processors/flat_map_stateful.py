"""Keyed state with event-time timers: `FlatMapStatefulP`, Jet's ``flatMapStateful`` (per key a
state object and a function called per item) with a Beam/Flink-style event-time timer per key.

Input items are ``(ts, item)`` pairs, partitioned by ``key_fn(item)``. For each key the processor
keeps a state, made by ``create_fn()`` when the key is first seen, and at most one timer (an
event time). The user's functions get a `Keyed` cell for the key: ``k.key``, ``k.state`` (read
it, change it, or replace it), ``k.timer`` (set it to an event time, or None to cancel) and
``k.time`` (the item's timestamp, or the timer's time):

* ``fn(k, item)`` for every item; returns an iterable of results (or None): each goes out as
  ``(ts, result)`` with the item's timestamp;
* ``on_timer(k)`` when the key's timer fires; returns an iterable of results (or None), each
  stamped with the timer's time (never below the watermark already forwarded, so never late).
  Before the call the timer is cleared (set it again to re-arm). Without ``on_timer`` a firing
  timer drops the key's state: an expiry, as Jet's ``mapStateful`` TTL.

A key whose state is None and whose timer is None after a call is forgotten (the next item of the
key starts from ``create_fn()`` again).

Timers. A timer at ``t`` fires once a watermark above ``t`` arrives, that is once no item with a
timestamp at or before ``t`` can come any more (Beam's "the watermark passed t"); timers fire in
order of time, then the watermark is forwarded. At the end of the input every timer still set
fires once, in order of time, as if the watermark had reached +infinity (a timer at
``math.inf`` fires only then: Beam's end of the global window); a timer set by ``on_timer`` at
that point does not fire again.

Items are handed to ``fn`` as they arrive. With ``sorted_input=True`` (Beam's
``@RequiresTimeSortedInput``) they are held back until the watermark passes them and handed over
in timestamp order (equal timestamps by ``order_key(item)`` when given, else in arrival order),
items and timers interleaved by time (an item at ``t`` before a timer at ``t``): then results do
not depend on how the inputs interleave.

Batches. ``fn_all(k, pairs)``, optional, is a batch form of ``fn`` (as Beam's batched DoFns
``process_batch``): called once per key per input batch with that key's ``(ts, item)`` pairs in
arrival order (``k.time`` the last one's timestamp), it must leave ``k`` as calling ``fn`` on each
item in turn (``k.time`` its timestamp) would and return the ``(ts, result)`` pairs those calls
would emit (or None), so its loop can stay in one frame. The processor then groups a batch by key
in one pass and calls ``fn_all`` per key: results come out per key in order, keys in the order
first seen in the batch. Not in sorted mode (items and timers interleave there).

``fn_items(k, items)``, optional instead of ``fn_all``, is the batch form for a ``fn`` that does
not read ``k.time`` (its times, if any, come from the items themselves): called once per key per
input batch with that key's items alone, in arrival order, with ``k.time`` the batch's largest
timestamp, it must leave ``k`` as calling ``fn`` on each item in turn would and return the
results (or None), each stamped with ``k.time``. Grouping the items alone, without a pair per
item, costs about a tenth less than ``fn_all``'s pairs (Q9's winning bids: the vertex 403.4 ->
367.6 M instructions over 100k events).

Input forms. Items come as ``(ts, item)`` pairs or, from a producer that emits them, as a
stamped chunk's columns (``accepts_stamped``): ``fn`` and sorted mode read the columns zipped
as they go, the batch path groups them into each key's pairs (what ``fn_all`` takes). Results
go out as ``(ts, result)`` pairs either way.

Snapshots: each key's state and timer, and in sorted mode each held-back item, under the key
itself (so, restored, each goes to the instance that owns the key, as the partitioned edge
routes it); the instance's last forwarded watermark under a broadcast key.

>>> from jetbench.core.inbox import Inbox
>>> from jetbench.core.items import Watermark
>>> from jetbench.core.outbox import Outbox
>>> from jetbench.core.processor import ProcessorContext
>>> def running_total(k, x):
...     k.state += x
...     k.timer = k.time + 10          # forget the key 10 ms after its last item
...     return [(k.key, k.state)]
>>> p = FlatMapStatefulP(lambda x: x % 2, int, running_total)
>>> box = Outbox(ordinal_count=1, capacity=100)
>>> p.init(box, ProcessorContext("totals", 0, 0, 1, 1))
>>> p.process(0, Inbox([(1, 3), (2, 4), (5, 5)]))
>>> box.take_bucket(0)
[(1, (1, 3)), (2, (0, 4)), (5, (1, 8))]
>>> p.try_process_watermark(Watermark(13)), sorted(p.keys)   # key 0's timer (12) fired
(True, [1])
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from itertools import count, repeat
from operator import itemgetter
from typing import Any, ClassVar

from ..core.dag import Routing
from ..core.errors import JetbenchError
from ..core.inbox import Inbox
from ..core.items import BroadcastKey, Watermark
from ..core.outbox import Outbox
from ..core.processor import Processor, ProcessorContext
from .due_keys import DueKeys
from .emitter import Emitter
from .kind_params import KindParamError, KindParams, code, flag
from .planning import EventKey, Output, Planner, PlanNode, StageSpec
from .snapshotting import EntrySaver
from .transform_chain import grouped_by

_INF = math.inf
_first = itemgetter(0)
_second = itemgetter(1)
_fourth = itemgetter(3)
_NOTHING = object()  # "no watermark being handled"
_STATE = "state"
_ITEM = "item"
_PROGRESS = "FlatMapStatefulP"

#: ``fn_all(k, pairs)``: the batch form of ``fn`` over one key's ``(ts, item)`` pairs of a batch
FnAll = Callable[["Keyed", list[tuple[Any, Any]]], list[tuple[Any, Any]] | None]
#: ``fn_items(k, items)``: the batch form of a ``fn`` that reads no ``k.time``, over one key's items of a batch
FnItems = Callable[["Keyed", list[Any]], Iterable[Any] | None]


class Keyed:
    """One key as ``fn`` and ``on_timer`` see it: ``key``, ``state`` (replace it freely; None
    with no timer forgets the key), ``timer`` (an event time in ms, or None) and ``time`` (the
    item's timestamp, or the firing timer's time)."""

    __slots__ = ("key", "state", "time", "timer")

    def __init__(self) -> None:
        self.key: Any = None
        self.state: Any = None
        self.timer: Any = None
        self.time: Any = None

    def __repr__(self) -> str:
        return f"Keyed(key={self.key!r}, state={self.state!r}, timer={self.timer!r}, time={self.time!r})"


class FlatMapStatefulP(Processor):
    """Per key a state and an event-time timer; see the module's documentation."""

    snapshot_support: ClassVar[str] = "supported"

    def __init__(self, key_fn: Callable[[Any], Hashable], create_fn: Callable[[], Any],
                 fn: Callable[[Keyed, Any], Iterable[Any] | None],
                 on_timer: Callable[[Keyed], Iterable[Any] | None] | None = None, sorted_input: bool = False,
                 order_key: Callable[[Any], Any] | None = None, fn_all: FnAll | None = None,
                 fn_items: FnItems | None = None):
        self.key_fn = key_fn
        self.create_fn = create_fn
        self.fn = fn
        self.on_timer = on_timer
        self.sorted_input = sorted_input
        self.order_key = order_key
        self.fn_all = fn_all
        self.fn_items = fn_items
        #: a batch's pairs (or, for ``fn_items``, its items) by key in one pass, keys in the order
        #: first seen; a one-expression ``key_fn`` is written into the loop (`grouped_by`)
        self._group_pairs = grouped_by(key_fn, pairs=True)
        self._group_items = grouped_by(key_fn)
        #: key -> [state, timer or None, the time the key is filed under in ``_timers`` or None]
        self.keys: dict[Hashable, list[Any]] = {}
        #: timers: keys filed under their times; a filing is stale when the key's entry says it
        #: is filed under another time (or none), and a timer moved later stays filed where it was
        self._timers = DueKeys()
        self._held: list[tuple[Any, Any, int, Any]] = []  # sorted mode: (ts, order, seq, item) not yet handed over
        self._seq = 0
        self._cell = Keyed()
        self._wm_out: float = -_INF  # the last watermark forwarded
        self._handling: Any = _NOTHING  # the watermark whose timers fired but which is not yet forwarded
        self._completing = False
        self._saver = EntrySaver()
        self._restored: list[tuple[int, int, float]] = []
        self.accepts_stamped = True  # a stamped chunk is read as its columns (and pairs as pairs)

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        self._emitter = Emitter(outbox)

    # -- one key --------------------------------------------------------------------------------

    def _store(self, key: Hashable, entry: list[Any] | None, cell: Keyed, arm: bool = True) -> None:
        """Keep what a call left in ``cell``; a new timer, or one moved earlier, is filed under
        its time (none when ``arm`` is False: the timer is dropped)."""
        state, timer = cell.state, cell.timer if arm else None
        if state is None and timer is None:
            if entry is not None:
                del self.keys[key]
            return
        if entry is None:
            entry = self.keys[key] = [state, None, None]
        else:
            entry[0] = state
        old = entry[1]
        if timer != old or (timer is not None and entry[2] is None):
            entry[1] = timer
            if timer is not None:
                filed = entry[2]
                if filed is None or timer < filed:
                    entry[2] = timer
                    self._timers.file(timer, key)
            # else: a timer cancelled or moved later stays filed where it was, and is dropped or
            # filed again at its new time when that time comes up (`_fire_due`): one filing per
            # firing, not one per move

    def _fire_due(self, limit: float, out: list[Any], inclusive: bool = False) -> None:
        """Fire, in order of time, every live timer before ``limit`` (at it too when
        ``inclusive``), timers set meanwhile included; stale filings are dropped."""
        timers, keys, cell, on_timer = self._timers, self.keys, self._cell, self.on_timer
        times, due = timers.times, timers.due
        get = keys.get
        wm_out, arm = self._wm_out, not self._completing
        while times:
            t = times[0]
            if not (t < limit or (inclusive and t == limit)):
                return
            for key in due.pop(heapq.heappop(times)):  # the earliest time's keys (see `DueKeys`)
                entry = get(key)
                if entry is None or entry[2] != t:
                    continue  # stale: the key's timer moved earlier, or the key is gone
                timer = entry[1]
                if timer != t:  # cancelled, or moved later since it was filed: file it there
                    entry[2] = timer
                    if timer is not None:
                        timers.file(timer, key)
                    continue
                if on_timer is None:  # an expiry: the key's state goes with its timer
                    del keys[key]
                    continue
                cell.key, cell.time, cell.state, cell.timer = key, t, entry[0], None
                entry[1] = entry[2] = None
                results = on_timer(cell)
                if cell.state is None and (cell.timer is None or not arm):
                    del keys[key]  # the usual end of a key: forgotten without a call of _store
                else:
                    self._store(key, entry, cell, arm)
                if results is not None:
                    stamp = t if t >= wm_out else wm_out
                    for result in results:
                        out.append((stamp, result))

    def _advance(self, limit: float, out: list[Any]) -> None:
        """Hand over the held items before ``limit`` and fire the timers before it, by time (an
        item at ``t`` before a timer at ``t``)."""
        held = self._held
        if held:
            # the held items are sorted here rather than kept in a heap as they come: they come
            # nearly in order, which a sort takes in about one compare each, where a heap pays
            # two tuple compares per level per item (seq is unique: the items are never compared)
            held.sort()
            n = bisect_left(held, limit, key=_first)
            if n:
                ready = held[:n]
                del held[:n]
                self._hand_over(ready, out)
        self._fire_due(limit, out)

    def _hand_over(self, ready: list[tuple[Any, Any, int, Any]], out: list[Any]) -> None:
        """`_items` for sorted mode: ``ready``'s ``(ts, order, seq, item)`` in order, the timers
        before each item's time fired first (timers an item sets included)."""
        self._items(zip(map(_first, ready), map(_fourth, ready)), out, self._timers.times)  # noqa: B905 - as long

    # -- input and output -----------------------------------------------------------------------

    def process(self, ordinal: int, inbox: Inbox) -> None:
        stamped = inbox.stamped  # a stamped chunk's columns (else pairs): read as they are
        if self.sorted_input:
            order_key = self.order_key
            if stamped:
                ts_column, items = inbox.take_stamped()
            else:
                pairs = inbox.take()
                ts_column, items = list(map(_first, pairs)), list(map(_second, pairs))
            orders: Iterable[Any] = repeat(0) if order_key is None else map(order_key, items)
            # (ts, order, seq, item) per item, made in C; sorted when a watermark hands them over
            self._held += zip(ts_column, orders, count(self._seq + 1), items)  # noqa: B905 - as long
            self._seq += len(items)
            return
        emitter = self._emitter
        room = emitter.free_room()
        if room <= 0:
            return
        if self.fn_items is not None:
            if stamped:
                ts_column, items = inbox.take_stamped(room)
            else:
                pairs = inbox.take(room)
                ts_column, items = list(map(_first, pairs)), list(map(_second, pairs))
            out = self._call_groups(self._group_items(items), max(ts_column)) if items else None
        elif stamped:
            ts_column, items = inbox.take_stamped(room)
            if self.fn_all is None:
                out = self._items(zip(ts_column, items), [])  # noqa: B905 - as long (Stamped)
            else:
                # zip makes each key's (ts, item) pairs in C (a pair kept in a group is not reused)
                out = self._call_groups(self._group_pairs(zip(ts_column, items)))  # noqa: B905 - as long
        else:
            pairs = inbox.take(room)
            out = self._items(pairs, []) if self.fn_all is None else self._call_groups(self._group_pairs(pairs))
        if out:
            emitter.emit(out)

    def _items(self, batch: Iterable[tuple[Any, Any]], out: list[Any], times: list[Any] | None = None) -> list[Any]:
        """``fn`` on each ``(ts, item)`` of a batch in one frame, results appended to ``out``
        (returned). With ``times`` (sorted mode: the timers' heap itself, so that a timer set by
        ``fn`` shows in it at once) the timers before each item's time fire first. A key whose
        call left its state object and its timer as they were (the common case: a state changed
        in place) is not stored again."""
        keys, key_fn, fn, create_fn, cell = self.keys, self.key_fn, self.fn, self.create_fn, self._cell
        get = keys.get
        for ts, item in batch:
            if times and times[0] < ts:
                self._fire_due(ts, out)
            key = key_fn(item)
            entry = get(key)
            cell.key = key
            cell.time = ts
            if entry is None:
                cell.state, cell.timer = create_fn(), None
                results = fn(cell, item)
                self._store(key, None, cell)
            else:
                state, timer = cell.state, cell.timer = entry[0], entry[1]
                results = fn(cell, item)
                if cell.state is not state or cell.timer != timer or (timer is not None and entry[2] is None):
                    self._store(key, entry, cell)
            if results is not None:
                for result in results:
                    out.append((ts, result))
        return out

    def _call_groups(self, groups: dict[Hashable, list[Any]], time: Any = None) -> list[Any]:
        """The batch path: ``fn_all`` once per key of a batch grouped by key into pairs, or
        ``fn_items`` once per key of a batch grouped into items (``time``: the batch's largest
        timestamp, ``k.time`` and each result's)."""
        out: list[Any] = []
        keys, cell, create_fn = self.keys, self._cell, self.create_fn
        get, due, times = keys.get, self._timers.due, self._timers.times
        fn_all: Any = self.fn_all if time is None else self.fn_items
        assert fn_all is not None  # process() takes this path only with one of them
        cell.time = time
        for key, pairs in groups.items():
            entry = get(key)
            cell.key = key
            if time is None:
                cell.time = pairs[-1][0]
            if entry is None:  # a new key: stored here (`_store` inline) unless it left nothing
                cell.state = create_fn()
                cell.timer = None
                results = fn_all(cell, pairs)
                timer = cell.timer
                if timer is not None:
                    keys[key] = [cell.state, timer, timer]
                    filed = due.get(timer)  # `DueKeys.file` inline: a new key's timer, the common case here
                    if filed is None:
                        due[timer] = [key]
                        heapq.heappush(times, timer)
                    else:
                        filed.append(key)
                elif cell.state is not None:
                    keys[key] = [cell.state, None, None]
            else:
                state = cell.state = entry[0]
                timer = cell.timer = entry[1]
                results = fn_all(cell, pairs)
                # store a key whose state was replaced or whose timer moved
                if cell.state is not state or cell.timer != timer or (timer is not None and entry[2] is None):
                    self._store(key, entry, cell)
            if results:
                out += results if time is None else zip(repeat(time), results)
        return out

    def try_process_watermark(self, watermark: Watermark) -> bool:
        emitter = self._emitter
        if self._handling != watermark.timestamp:
            if not emitter.flush():  # results of items before the watermark go first
                return False
            out: list[Any] = []
            self._advance(watermark.timestamp, out)
            if out:
                emitter.emit(out)
            self._handling = watermark.timestamp
        if not emitter.flush() or not self.outbox.offer(watermark):
            return False
        self._handling = _NOTHING
        if watermark.timestamp > self._wm_out:
            self._wm_out = watermark.timestamp
        return True

    def complete(self) -> bool:
        emitter = self._emitter
        if not self._completing:
            if not emitter.flush():
                return False
            self._completing = True
            out: list[Any] = []
            self._advance(_INF, out)  # held items, and timers before infinity, in order of time
            self._fire_due(_INF, out, inclusive=True)  # what is left: timers at infinity (none re-armed now)
            if out:
                emitter.emit(out)
        return emitter.flush()

    # -- snapshots ------------------------------------------------------------------------------

    def _state(self) -> Iterator[tuple[Any, Any]]:
        ctx = self.context
        yield BroadcastKey((_PROGRESS, ctx.global_index, ctx.total_parallelism)), self._wm_out
        for key, entry in list(self.keys.items()):
            yield key, (_STATE, entry[0], entry[1])
        key_fn = self.key_fn
        for ts, _, _, item in sorted(self._held, key=_held_order):
            yield key_fn(item), (_ITEM, ts, item)

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():  # results made before the barrier go first
            return False
        return self._saver.save(self.outbox, self._state)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        keys = self.keys
        for key, value in inbox.take():
            if isinstance(key, BroadcastKey):
                tag = key.key
                if type(tag) is tuple and len(tag) == 3 and tag[0] == _PROGRESS:
                    self._restored.append((tag[1], tag[2], value))
                continue
            if value[0] == _ITEM:
                self._seq += 1
                order = 0 if self.order_key is None else self.order_key(value[2])
                self._held.append((value[1], order, self._seq, value[2]))
                continue
            if key in keys:
                raise JetbenchError(f"vertex {self.context.vertex_name!r}: the state of key {key!r} was restored "
                                    "twice (two instances saved it)")
            keys[key] = [value[1], value[2], None]

    def finish_snapshot_restore(self) -> bool:
        ctx = self.context
        restored, self._restored = self._restored, []
        own = [wm for k, n, wm in restored if k == ctx.global_index and n == ctx.total_parallelism]
        if own:
            self._wm_out = own[0]
        elif restored:  # another parallelism: the lowest watermark any instance forwarded
            self._wm_out = min(wm for _, _, wm in restored)
        for key, entry in self.keys.items():
            timer = entry[1]
            if timer is not None and entry[2] is None:
                entry[2] = timer
                self._timers.file(timer, key)
        return True


def _held_order(held: tuple[Any, Any, int, Any]) -> tuple[Any, Any, int]:
    return held[0], held[1], held[2]


@dataclass(frozen=True, eq=False, repr=False)
class FlatMapStateful(KindParams, StageSpec):
    """The parameters of keyed state with an event-time timer, its vertex supplier
    (``flat_map_stateful``: `FlatMapStatefulP`, ``(ts, item)`` pairs in, partitioned by
    ``key_fn(item)``, ``(ts, result)`` pairs out) and its pipeline stage
    (``stage.apply(FlatMapStatefulSpec(key_fn, create_fn, fn, on_timer, sorted_input, order_key,
    fn_all, fn_items))`` on a timestamped stage). ``fn_all`` and ``fn_items`` are batch forms of
    ``fn`` (not with ``sorted_input``, see the module's documentation).

    Planning: one vertex behind an edge partitioned by ``key_fn`` of the item, so each key lives
    in one instance.

    >>> flat_map_stateful(len, list, lambda k, x: [x], fn_all=len, fn_items=len)
    Traceback (most recent call last):
        ...
    jetbench.processors.kind_params.KindParamError: flat_map_stateful: give one batch form of fn, fn_all or fn_items, not both
    """

    key_fn: Callable[[Any], Hashable] = code("x", was=("key",), help="the key of an item (the x of a (ts, x) pair)")
    create_fn: Callable[[], Any] = code("None", args=(), was=("create",), help="a key's new state: an expression, or a function body")
    fn: Callable[[Keyed, Any], Iterable[Any] | None] = code(
        "[x]", args=("k", "x"), help="per item: the results (an iterable); k.key, k.state, k.timer (event time), k.time")
    on_timer: Callable[[Keyed], Iterable[Any] | None] | None = code(
        "", args=("k",), optional=True, help="when k.timer passes: the results (empty: the timer drops the key's state)")
    sorted_input: bool = flag(help="hand items over in timestamp order, as the watermark passes")
    order_key: Callable[[Any], Any] | None = code(
        "", optional=True, when=("sorted_input", (True,)),
        help="sorted input: the order of items with equal timestamps (empty: arrival)")
    fn_all: FnAll | None = code(
        "", args=("k", "pairs"), optional=True, when=("sorted_input", (False,)),
        help="optional batch form of fn: one key's (ts, x) pairs of a batch at once; the (ts, result) pairs")
    fn_items: FnItems | None = code(
        "", args=("k", "items"), optional=True, when=("sorted_input", (False,)),
        help="optional batch form of a fn that reads no k.time, instead of fn_all: one key's items of a "
             "batch at once (k.time the batch's latest); the results")
    processor = FlatMapStatefulP
    function = "flat_map_stateful"
    kind: ClassVar[str] = "flat_map_stateful"
    uses_watermarks: ClassVar[bool] = True

    def check(self) -> None:
        if self.fn_all is not None and self.fn_items is not None:
            raise KindParamError("flat_map_stateful: give one batch form of fn, fn_all or fn_items, not both")
        for name in ("fn_items", "fn_all"):
            if getattr(self, name) is not None and self.sorted_input:
                raise KindParamError(f"flat_map_stateful: {name} (a batch form of fn) does not go with sorted_input, "
                                     "where items are handed over one by one between timers")

    def describe(self) -> str:
        return f"flat_map_stateful({getattr(self.fn, '__name__', self.fn)})"

    def output_timestamped(self, inputs: bool) -> bool:
        return True

    def plan(self, planner: Planner, node: PlanNode) -> None:
        (up,) = node.upstream
        if not planner.output(up).timestamped:
            raise JetbenchError(f"stage {node.name!r}: flat_map_stateful needs timestamped items (event time "
                                "drives its timers): use a timestamped source or add_timestamps() first")
        vertex = planner.vertex(node.name, self, node.local_parallelism)
        planner.connect(up, vertex, routing=Routing.PARTITIONED, key_fn=EventKey(self.key_fn))
        planner.produce(node, Output(vertex, True))


#: the vertex supplier of keyed state with a timer (its declaration, `FlatMapStateful`)
flat_map_stateful = FlatMapStateful
#: the same as a pipeline stage
FlatMapStatefulSpec = FlatMapStateful


# -- in the DAG builder ---------------------------------------------------------------------------


BUILDER_KINDS = (
    FlatMapStateful.builder_kind(id="flat_map_stateful", label="flat map stateful", category="window", inputs=True,
                                 outputs=True, description="per-key state and an event-time timer over (ts, item) pairs"),
)
