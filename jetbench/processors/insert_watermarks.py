"""Event-time watermarks: `InsertWatermarksP` timestamps items and emits watermarks into the stream.

Policy: *limiting lag* (Jet's ``WatermarkPolicy.limitingLag``) throttled to frames: the candidate
``max timestamp seen - allowed_lag`` is floored to a multiple of ``throttle_frame`` and emitted
as a `Watermark` when it exceeds the last one emitted, so watermarks never decrease and only go
out when they cross a frame boundary. The watermark goes right after the item that raised it
(as Jet's ``EventTimeMapper`` does, per event), so the output does not depend on how the input
is batched; a batch that raises no watermark (the common case) is emitted whole. An input with
no item for ``idle_timeout_ms`` of wall time sends the idle marker once, until items arrive again.

Items come out as ``(ts, item)`` pairs, emitted as columns (`Emitter.emit_stamped`: a timestamps
list beside the items list, no tuple per item; a consumer that does not read columns gets the
pairs). Late items (below the last watermark) pass through, the window processors downstream
drop them.

>>> from jetbench.core.inbox import Inbox
>>> from jetbench.core.outbox import Outbox
>>> from jetbench.core.processor import ProcessorContext
>>> p = InsertWatermarksP(ts_fn=lambda x: x * 100, allowed_lag=0, throttle_frame=1000)
>>> box = Outbox(ordinal_count=1)
>>> p.init(box, ProcessorContext("wm", 0, 0, 1, 1))
>>> p.process(0, Inbox([3, 15, 12, 9]))
>>> box.take_bucket(0)
[(300, 3)]
>>> p.try_process(), box.pending_watermark
(False, Watermark(0))
>>> _ = box.take_watermark()
>>> p.try_process(), box.take_bucket(0)
(False, [(1500, 15)])
>>> p.try_process(), box.pending_watermark
(False, Watermark(1000))
>>> _ = box.take_watermark()
>>> p.try_process(), box.take_bucket(0)
(True, [(1200, 12), (900, 9)])
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from operator import itemgetter
from typing import Any, ClassVar

from ..core.clock import SYSTEM_CLOCK
from ..core.dag import Routing
from ..core.inbox import Inbox
from ..core.items import IDLE_MESSAGE, Chunk, Stamped, Watermark, chunk_tail, unzip_pairs
from ..core.native import mypyc_attr
from ..core.outbox import Outbox
from ..core.processor import Processor, ProcessorContext
from .emitter import Emitter
from .kind_params import KindParams, code, number, planned
from .planning import Output, Planner, PlanNode, StageSpec
from .snapshotting import instance_key, own_values

_first = itemgetter(0)


def _first_reaching(stamps: list[Any], threshold: Any, start: int) -> int:
    """The first index from ``start`` whose timestamp is at or above ``threshold`` (else the length)."""
    n = len(stamps)
    i = start
    while i < n:
        if stamps[i] >= threshold:
            return i
        i += 1
    return n


def _raise_threshold(wm: int, frame: Any, lag: Any) -> float:
    """The lowest timestamp that may raise the watermark above ``wm``: ``wm + frame + lag``, less
    a margin for float rounding (a float ``ts - lag`` can round up onto the next frame:
    ``-1e-95 - 1 == -1.0``), so that such an item is still looked at; `InsertWatermarksP._split`
    steps over the items of the margin that do not raise it.

    >>> t = _raise_threshold(-2, 1, 1)
    >>> t < 0 and -1e-95 >= t and -1e-14 < t
    True
    """
    threshold = wm + frame + lag
    lowered: float = threshold - (abs(wm + frame) + abs(lag) + abs(threshold)) * 2.0 ** -51
    return lowered


@mypyc_attr(allow_interpreted_subclasses=True)
class InsertWatermarksP(Processor):
    """Timestamps items (``(ts_fn(item), item)``, or passes ``(ts, item)`` through when ``ts_fn``
    is None) and inserts limiting-lag watermarks throttled to ``throttle_frame``.

    ``idle_timeout_ms`` of None or <= 0 disables the idle marker. Counters:
    ``watermarks_emitted`` (real watermarks), ``idle_messages_emitted``.

    Snapshots: the items and watermarks decided before the barrier go out first; then the
    instance saves, under a broadcast key, its watermark state: the last watermark, the
    threshold that raises the next one, whether the input was idle, and the counters. A
    restored instance takes its own (at another parallelism, the lowest last watermark saved,
    as Jet does); an instance that was idle sends the idle marker again at once, since the
    restored job downstream has not seen it.
    """

    snapshot_support: ClassVar[str] = "supported"

    def __init__(
        self,
        ts_fn: Callable[[Any], int | float] | None,
        allowed_lag: int | float,
        throttle_frame: int,
        idle_timeout_ms: int | float | None = 60_000,
        ordered: bool = False,
    ):
        self.ts_fn = ts_fn
        #: the input's timestamps never decrease (a source that says so): a batch's last timestamp
        #: is its largest, and the items that raise the watermark are found by bisection
        self.ordered = ordered
        self.allowed_lag = allowed_lag
        self.throttle_frame = throttle_frame
        self.idle_timeout_ms = idle_timeout_ms if idle_timeout_ms and idle_timeout_ms > 0 else None
        self.watermarks_emitted = 0
        self.idle_messages_emitted = 0
        self.last_watermark: int | None = None  # the last watermark decided (queued or emitted)
        #: the smallest timestamp that raises the watermark: last + frame + lag
        self._threshold: float = -math.inf
        #: stamped chunks and watermarks decided but not yet accepted by the outbox, in order
        self._queue: deque[Chunk | Watermark] = deque()
        self._last_item_at = 0.0
        self._monotonic: Callable[[], float] = SYSTEM_CLOCK.monotonic  # the context's clock, from init
        self._idle = False  # the idle marker went out; cleared by the next item
        self.accepts_stamped = True  # a timestamped input (ts_fn None) is read as columns

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        self._emitter = Emitter(outbox)
        self._monotonic = context.clock.monotonic
        self._last_item_at = self._monotonic()

    def _flush(self) -> bool:
        """Push out what a refusing outbox left behind, in order; True when nothing is left."""
        emitter = self._emitter
        if not emitter.flush():
            return False
        queue = self._queue
        while queue:
            head = queue[0]
            if isinstance(head, Watermark):
                if not self.outbox.offer(head):
                    return False
                queue.popleft()
                if head.is_idle_marker:
                    self.idle_messages_emitted += 1
                else:
                    self.watermarks_emitted += 1
            else:
                queue.popleft()
                if not emitter.emit(head):
                    return False
        return True

    def process(self, ordinal: int, inbox: Inbox) -> None:
        emitter = self._emitter
        if (emitter.pending or self._queue) and not self._flush():
            return
        room = emitter.room()
        if room <= 0:
            return
        ts_fn = self.ts_fn
        if ts_fn is None and not inbox.stamped:
            # (ts, item) pairs from a producer that emits pairs go on as they came: unzipping
            # them here would only make the next vertex that reads pairs zip them again
            pairs = inbox.take(room)
            if not pairs:
                return
            self._last_item_at = self._monotonic()
            self._idle = False
            try:
                top = pairs[-1][0] if self.ordered else max(map(_first, pairs))
            except (TypeError, IndexError, KeyError):
                unzip_pairs(pairs)  # names the entry that is not a pair
                raise
            if top < self._threshold:  # no watermark in this batch
                emitter.emit(pairs)
                return
            self._split(pairs, list(map(_first, pairs)))
            self._flush()
            return
        if ts_fn is None:
            stamps, batch = inbox.take_stamped(room)
        else:
            batch = inbox.take(room)
            stamps = list(map(ts_fn, batch))
        if not batch:
            return
        top = stamps[-1] if self.ordered or len(stamps) == 1 else max(stamps)
        self._last_item_at = self._monotonic()
        self._idle = False
        if top < self._threshold:  # no watermark in this batch
            emitter.emit_stamped(stamps, batch)
            return
        self._split(Stamped(stamps, batch), stamps)
        self._flush()

    def _split(self, out: Chunk, stamps: list[Any]) -> None:
        """Queue ``out`` (timestamps ``stamps``) with a watermark after each item that raises it.

        Every timestamp seen before is below the threshold, so the first item at or above it
        holds the running maximum there, and after a watermark the next threshold is above that
        maximum: finding the items that raise the watermark needs no running maximum per item."""
        queue = self._queue
        lag, frame = self.allowed_lag, self.throttle_frame
        threshold = self._threshold
        n = len(stamps)
        start = 0
        ordered = self.ordered
        i = bisect_left(stamps, threshold) if ordered else _first_reaching(stamps, threshold, 0)
        while i < n:
            top = stamps[i]
            wm = int((top - lag) // frame) * frame
            if self.last_watermark is None or wm > self.last_watermark:
                queue.append(out.slice(start, i + 1) if isinstance(out, Stamped) else out[start : i + 1])
                queue.append(Watermark(wm))
                start = i + 1
                self.last_watermark = wm
                threshold = _raise_threshold(wm, frame, lag)
                i = bisect_left(stamps, threshold, start) if ordered else _first_reaching(stamps, threshold, start)
            else:  # float rounding at the threshold: look further (a watermark grows with the stamp)
                i += 1
        if start < n:
            queue.append(chunk_tail(out, start))
        self._threshold = threshold

    def next_wake_time(self) -> float | None:
        """For a timer-aware idle strategy: when the idle timeout fires (``context.clock.monotonic()``
        seconds), +inf if only new input can make progress, None while output is pending."""
        if self._emitter.pending or self._queue:
            return None
        if self.idle_timeout_ms is None or self._idle:
            return math.inf
        return self._last_item_at + self.idle_timeout_ms / 1000.0

    def try_process(self) -> bool:
        if (self._emitter.pending or self._queue) and not self._flush():
            return False
        timeout = self.idle_timeout_ms
        if (
            timeout is not None
            and not self._idle
            and (self._monotonic() - self._last_item_at) * 1000.0 >= timeout
        ):
            self._idle = True
            self._queue.append(IDLE_MESSAGE)
            return self._flush()
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        """Upstream watermarks are swallowed: this processor defines event time from here on."""
        return self._flush()

    def complete(self) -> bool:
        return self._flush()

    # -- snapshots ------------------------------------------------------------------------------

    def save_to_snapshot(self) -> bool:
        if (self._emitter.pending or self._queue) and not self._flush():
            return False
        return self.outbox.offer_to_snapshot(
            instance_key("InsertWatermarksP", self.context),
            (self.last_watermark, self._threshold, self._idle, self.watermarks_emitted, self.idle_messages_emitted))

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        mine, every, _ = own_values(inbox, "InsertWatermarksP", self.context)
        if len(mine) == 1:
            last, threshold, idle, self.watermarks_emitted, self.idle_messages_emitted = mine[0]
        else:
            known = [v for v in (mine or every) if v[0] is not None]
            if not known:
                return
            last, threshold, idle = min(known, key=_first)[:3]
        self.last_watermark, self._threshold = last, threshold
        if idle and self.idle_timeout_ms is not None:  # the idle marker goes out again at once
            self._last_item_at = self._monotonic() - self.idle_timeout_ms / 1000.0


@mypyc_attr(native_class=False)  # a plain dataclass (a ProcessorSupplier), as StageSpec (interpreted) is
@dataclass(frozen=True, eq=False, repr=False)
class InsertWatermarks(KindParams, StageSpec):
    """The parameters of watermark insertion, its vertex supplier (``insert_watermarks``:
    ``(ts, item)`` pairs and limiting-lag watermarks) and its pipeline stage
    (``stage.add_timestamps(ts_fn, allowed_lag)``; the plan sets ``throttle_frame`` to the
    pipeline's watermark frame).

    ``ts_fn=None``: the input already consists of ``(ts, item)`` pairs. ``ordered``: the input's
    timestamps never decrease (the planner says so after a source that does), so a batch's last
    timestamp is its largest and no batch is scanned for its maximum; were they to decrease, a
    watermark would only come later than it could, never earlier. ``allowed_lag`` (ms, a
    number >= 0) and ``throttle_frame`` (ms, an int > 0) are checked here, a wrong one named.

    Planning: isolated from the stage before, as in Jet, so each upstream instance's order
    survives into its own watermarks (unicast when this stage has fewer instances).

    >>> insert_watermarks(None, allowed_lag=20, throttle_frame=100)
    insert_watermarks(lag=20, frame=100)
    """

    ts_fn: Callable[[Any], int | float] | None = code(
        "", optional=True, was=("ts",), help="event time (ms) of x (empty: x is a (ts, item) pair)")
    allowed_lag: int | float = number(0, shown=0.0, minimum=0, help="ms")
    throttle_frame: int = number(1000, integer=True, minimum=0, strict=True, help="ms")
    idle_timeout_ms: int | float | None = number(60_000, shown=60_000.0, optional=True,
                                     help="ms without items before the input counts as idle (empty: never)")
    ordered: bool = planned(False)
    processor = InsertWatermarksP
    function = "insert_watermarks"
    kind: ClassVar[str] = "timestamps"

    def describe(self) -> str:
        return f"insert_watermarks(lag={self.allowed_lag}, frame={self.throttle_frame}{', ordered' if self.ordered else ''})"

    def output_timestamped(self, inputs: bool) -> bool:
        return True

    def plan(self, planner: Planner, node: PlanNode) -> None:
        supplier = replace(self, throttle_frame=planner.watermark_frame)
        up = node.upstream[0]
        upstream = planner.output(up)
        lp = node.local_parallelism or upstream.vertex.local_parallelism
        vertex = planner.vertex(node.name, supplier, lp)
        up_lp = upstream.vertex.local_parallelism
        isolated = up_lp is None and lp is None or (up_lp is not None and lp is not None and lp >= up_lp)
        planner.connect(up, vertex, routing=Routing.ISOLATED if isolated else Routing.UNICAST, plain=True)
        planner.produce(node, Output(vertex, True))


#: the vertex supplier of watermark insertion (its declaration, `InsertWatermarks`)
insert_watermarks = InsertWatermarks
#: ``stage.add_timestamps(...)`` as a pipeline stage
TimestampsSpec = InsertWatermarks


BUILDER_KINDS = (
    InsertWatermarks.builder_kind(id="insert_watermarks", label="insert watermarks", category="window",
                                  inputs=True, outputs=True, description="timestamps items and emits watermarks"),
)
