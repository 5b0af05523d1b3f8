"""Batch emission to every outbound ordinal, keeping what the outbox refuses: lists of items
(`Emitter.emit`), or a timestamped stream's columns (`Emitter.emit_stamped`)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import Any, Final

from ..core.items import Chunk, Stamped, Watermark, chunk_copy
from ..core.native import mypyc_attr
from ..core.outbox import Outbox
from ..core.processor import Processor, ProcessorContext

_UNBOUNDED: Final = 1 << 30


class Emitter:
    """Offers lists to every outbound ordinal of an outbox; a refused remainder waits in
    ``pending`` and must be flushed (`flush`) before new items are produced.
    """

    __slots__ = ("outbox", "pending", "_ordinals", "_single")

    def __init__(self, outbox: Outbox):
        self.outbox = outbox
        self.pending: list[tuple[int, Chunk]] = []
        self._ordinals = range(outbox.ordinal_count)
        #: one outbound ordinal, the common case (compiled, ``len()`` of a range is a generic call)
        self._single = outbox.ordinal_count == 1

    def room(self) -> int:
        """How many items can be offered now to every ordinal (huge for a sink with none)."""
        if self.pending:
            return 0
        outbox = self.outbox
        if self._single:
            return outbox.room(0)
        return min((outbox.room(o) for o in self._ordinals), default=_UNBOUNDED)

    def free_room(self) -> int:
        """Flush the pending remainder, then how many new items fit now (0 while any is left)."""
        if self.pending and not self.flush():
            return 0
        return self.room()

    def flush(self) -> bool:
        """Retry the pending remainder; True when nothing is pending."""
        if self.pending:
            pending, self.pending = self.pending, []
            for ordinal, chunk in pending:
                self._offer(ordinal, chunk)
        return not self.pending

    def emit(self, items: Chunk) -> bool:
        """Offer ``items`` (owned by the emitter from now on) to every ordinal; True if all fit."""
        if self._single:
            self._offer(0, items)
        else:
            for o in self._ordinals:
                self._offer(o, items if o == 0 else chunk_copy(items))
        return not self.pending

    def emit_stamped(self, ts: list[Any], items: list[Any]) -> bool:
        """Offer the items ``items`` with their timestamps ``ts`` (lists owned by the emitter from
        now on) to every ordinal, as columns (`Outbox.offer_stamped`); True if all fit."""
        if not self._single:
            return self.emit(Stamped(ts, items))
        self._offer_columns(0, ts, items)
        return not self.pending

    def emit_from(self, iterator: Iterator[Any]) -> bool:
        """Emit as many items of ``iterator`` as fit now; True once it is exhausted and all of
        its items have gone out (call again until then)."""
        room = self.free_room()
        if room <= 0:
            return False
        chunk = list(islice(iterator, room))
        if chunk:
            self.emit(chunk)
        return len(chunk) < room and not self.pending

    def _offer(self, ordinal: int, chunk: Chunk) -> None:
        if isinstance(chunk, Stamped):
            self._offer_columns(ordinal, chunk.ts, chunk.items)
            return
        n = self.outbox.offer_batch(chunk, ordinal)
        if n < len(chunk):
            self.pending.append((ordinal, chunk[n:]))

    def _offer_columns(self, ordinal: int, ts: list[Any], items: list[Any]) -> None:
        """Offer columns to ``ordinal``; the refused remainder waits in ``pending`` as a `Stamped` chunk."""
        n = self.outbox.offer_stamped(ts, items, ordinal)
        if n < len(items):
            self.pending.append((ordinal, Stamped(ts[n:], items[n:])))


@mypyc_attr(allow_interpreted_subclasses=True)
class EmittingProcessor(Processor):
    """Base of processors that emit through an `Emitter` (``self._emitter``).

    Output the outbox refused waits in the emitter, out of the outbox's sight; so a watermark
    is forwarded only after that output has gone, never ahead of it, and so is a snapshot
    barrier: ``save_to_snapshot`` first flushes that output (it was made from input before the
    barrier), which is all a stateless emitting processor has to save.
    """

    _emitter: Emitter

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        self._emitter = Emitter(outbox)

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return self._emitter.flush() and self.outbox.offer(watermark)

    def complete(self) -> bool:
        """Done once the output the outbox refused has gone (a processor that emits more at
        the end of its input overrides this)."""
        return self._emitter.flush()

    def save_to_snapshot(self) -> bool:
        return self._emitter.flush()
