"""The generator source: Jet's ``GeneratorP``, items at a fixed rate on the wall clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from ..core.clock import SYSTEM_CLOCK
from ..core.inbox import Inbox
from ..core.native import mypyc_attr
from ..core.outbox import Outbox
from ..core.processor import ProcessorContext
from .emitter import EmittingProcessor
from .kind_params import KindParams, code, flag, number
from .snapshotting import restored_position, save_position

#: the end of an unbounded generator: a sequence number never reached (36 years at 10^9 items/s),
#: small enough to stay a native int when compiled (``sys.maxsize`` would be a boxed one)
_UNBOUNDED: Final = 1 << 60


@mypyc_attr(allow_interpreted_subclasses=True)
class GeneratorP(EmittingProcessor):
    """Jet's GeneratorP: emits items at ``rate_per_s`` (over all instances) on the wall clock.

    Sequence number ``s`` is due ``s / rate_per_s`` seconds after ``init``;
    instance k of n emits s = k, k + n, ... Each ``complete()`` emits what is due, up to the
    outbox's room, as one batch, and offers nothing when nothing is due (so the worker idles).
    Items are ``item_fn(s)`` (default ``s``), or ``(ts, item)`` when ``timestamped``, where
    ``ts`` is the wall-clock time (epoch ms) at which the item was *due*: the moment the event
    happened, so end-to-end latency includes any time it waited for the worker to wake up.
    With ``count`` the instances emit sequence numbers ``0 .. count - 1`` between them and
    complete; without it they never complete. `next_wake_time` tells a timer-aware idle
    strategy when the next item is due.

    Snapshots: each instance saves its next sequence number and the run's start (epoch ms); a
    restored instance goes on from that number at once (what was due while the job was down is
    due now) and stamps items as the original run would have.
    """

    snapshot_support: ClassVar[str] = "supported"

    def __init__(
        self,
        rate_per_s: float,
        item_fn: Callable[[int], Any] | None = None,
        timestamped: bool = True,
        count: int | None = None,
    ):
        self.rate_per_s = rate_per_s
        self.item_fn = item_fn
        self.timestamped = timestamped
        self.count = count
        self._start_ns = 0
        self._monotonic_ns: Callable[[], int] = SYSTEM_CLOCK.monotonic_ns  # the context's clock, from init

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        self._step = context.total_parallelism
        self._next = context.global_index  # the next sequence number this instance emits
        #: the sequence number this instance stops before (a count: int arithmetic, compiled native)
        self._end: int = _UNBOUNDED if self.count is None else self.count
        self._monotonic_ns = context.clock.monotonic_ns
        self._start_ns = self._monotonic_ns()
        self._start_epoch_ms = context.clock.time_ns() / 1e6

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():
            return False
        return save_position(self.outbox, "GeneratorP", self.context, self._next, self._start_epoch_ms)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        saved = restored_position(inbox, "GeneratorP", self.context)
        if saved is None:
            return
        seq, start_epoch_ms = saved
        self._next = seq
        self._start_epoch_ms = start_epoch_ms
        # sequence number ``seq`` is due now: the schedule goes on from here
        self._start_ns = self._monotonic_ns() - int(seq * 1_000_000_000 / self.rate_per_s)

    def next_wake_time(self) -> float | None:
        """When (``context.clock.monotonic()`` seconds) this instance's next item is due."""
        if self._next >= self._end:
            return None
        return self._start_ns / 1e9 + self._next / self.rate_per_s

    def complete(self) -> bool:
        emitter = self._emitter
        if emitter.pending and not emitter.flush():
            return False
        seq, step, end = self._next, self._step, self._end
        if seq >= end:
            return True
        # highest sequence number due by now, over all instances
        due = int((self._monotonic_ns() - self._start_ns) * self.rate_per_s // 1_000_000_000)
        if due >= end:
            due = end - 1
        if due < seq:
            return False
        n = min((due - seq) // step + 1, emitter.room())
        if n <= 0:
            return False
        stop = seq + n * step
        self._next = stop
        seqs = range(seq, stop, step)
        fn = self.item_fn
        items = list(seqs) if fn is None else [fn(s) for s in seqs]
        if self.timestamped:  # (ts, item) pairs, emitted as columns
            t0, ms_per_item = self._start_epoch_ms, 1000.0 / self.rate_per_s
            emitter.emit_stamped([t0 + s * ms_per_item for s in seqs], items)
        else:
            emitter.emit(items)
        return stop >= end and not emitter.pending


@mypyc_attr(native_class=False)  # a plain dataclass (a ProcessorSupplier), not a native class
@dataclass(frozen=True, eq=False, repr=False)
class GeneratorSource(KindParams):
    """The generator's parameters and vertex supplier (``generator_source``): `GeneratorP`,
    ``item_fn(seq)`` at ``rate_per_s`` items per second over all instances (a number > 0),
    ``count`` of them in all (an int >= 0; None: unbounded), checked here, a wrong one named
    (fields of a plain dataclass: compiled, no bare TypeError refuses a wrong type first).

    >>> generator_source(1000, count=10)
    generator(1000/s, count=10)
    """

    rate_per_s: int | float = number(shown=1000.0, minimum=0, strict=True, help="items per second over all instances")
    item_fn: Callable[[int], Any] | None = code("", args=("s",), optional=True,
                                                help="item for sequence number s (empty: s)")
    timestamped: bool = flag(True, shown=False, help="emit (ts, item) pairs")
    count: int | None = number(None, shown=1000, integer=True, minimum=0, optional=True,
                           help="total items (empty: never ends)")
    processor = GeneratorP
    function = "generator_source"

    def describe(self) -> str:
        return f"generator({self.rate_per_s:g}/s, count={self.count})"


#: the generator's vertex supplier (its declaration, `GeneratorSource`)
generator_source = GeneratorSource


BUILDER_KINDS = (
    GeneratorSource.builder_kind(id="generator", label="generator", category="source", inputs=False, outputs=True,
                                 description="items at a rate on the wall clock"),
)
