"""The Processor contract (Jet's ``Processor``), in Python.

A processor receives batches in an `Inbox` per inbound ordinal and emits into an `Outbox` with a
bounded bucket per outbound ordinal. Cooperative processors must not block: when the outbox
refuses an item they keep their state, return, and re-offer the same item on the next call.

>>> from jetbench.core.processor import Processor
>>> class Doubler(Processor):
...     def process(self, ordinal, inbox):
...         while inbox:
...             if not self.outbox.offer(2 * inbox.peek()):
...                 return  # outbox full: keep the item, we are called again
...             inbox.remove()
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from .clock import SYSTEM_CLOCK, Clock
from .native import mypyc_attr

if TYPE_CHECKING:
    from .inbox import Inbox
    from .items import Watermark
    from .outbox import Outbox


@dataclass(frozen=True)
class ProcessorContext:
    """Where a processor instance sits: its vertex and its index among the vertex's instances,
    and the `Clock` it reads the time from (``context.clock.monotonic()``; a `MockClock` in tests)."""

    vertex_name: str
    local_index: int
    global_index: int
    local_parallelism: int
    total_parallelism: int
    logger: logging.Logger = field(default=logging.getLogger("jetbench.processor"), compare=False)
    clock: Clock = field(default=SYSTEM_CLOCK, compare=False)
    #: the job's processing guarantee (``JobConfig.processing_guarantee``): a transactional sink
    #: holds items back until the snapshot covering them commits unless it is ``"none"``
    processing_guarantee: str = "none"


@mypyc_attr(allow_interpreted_subclasses=True)  # compiled (jetbench.core.compiled), subclassed in plain Python
class Processor:
    """Base class of every processor; override what you need.

    Lifecycle, all on one thread at a time: ``init`` once; then ``process(ordinal, inbox)`` while
    items arrive (``try_process`` when the inbox is empty, ``try_process_watermark`` for each
    coalesced watermark); ``complete_edge(ordinal)`` when an inbound ordinal is exhausted;
    ``complete()`` after all inputs are exhausted (a source, with no inputs, emits from here);
    ``close()`` always last, also after a failure. The boolean methods return True when done and
    are called again otherwise.

    Snapshots (only in a job with a processing guarantee, see `jetbench.core.job_config`), as in
    Jet, all called on the processor's own thread between the calls above, never during one:

    * ``save_to_snapshot()``: phase 1, once the snapshot barrier has come on every active input
      (or, with no input left, when the snapshot starts): offer the state as ``(key, value)``
      entries with ``self.outbox.offer_to_snapshot(key, value)``; False when the snapshot bucket
      (or the output) refused something: it is called again, and only it, until True. It may
      emit output first (e.g. results still pending from ``complete()``). A plain key goes back,
      on restore, to the instance that owns it (``hash(key) % parallelism``, as a partitioned
      edge routes); a `jetbench.core.items.BroadcastKey` goes to every instance.
    * ``snapshot_commit_prepare()``: still phase 1, after the state is saved: a transactional
      sink prepares what it received before the barrier. Then the barrier goes downstream.
    * ``snapshot_commit_finish(success)``: phase 2, once the whole snapshot is in the store
      (``success``) or failed: commit (or roll back into the next transaction). It runs beside
      new processing and must eventually return True.
    * ``restore_from_snapshot(inbox)``: before any input, in a NEW instance, with this
      instance's entries as ``(key, value)`` pairs; like ``process``, leave what is not handled.
    * ``finish_snapshot_restore()``: after the last entry; True when done.

    ``snapshot_support`` says how the processor takes part: ``"stateless"`` (nothing to save,
    the default), ``"supported"`` (implements the methods) or ``"unsupported"`` (keeps state it
    cannot save: a job asking for a guarantee refuses it at submit, naming the vertex). A class
    that overrides ``save_to_snapshot`` counts as supporting snapshots.
    """

    #: ``"stateless"``, ``"supported"`` or ``"unsupported"`` (see above)
    snapshot_support: ClassVar[str] = "stateless"

    #: False gives the processor a dedicated thread and a blocking outbox that never refuses.
    is_cooperative: bool = True
    #: True: the processor reads a timestamped input as columns, ``inbox.take_stamped()`` (and
    #: may emit columns, ``outbox.offer_stamped``); its inbox then holds a `Stamped` chunk's
    #: lists as they came. False (the default): timestamped items arrive as ``(ts, item)`` pairs,
    #: however the producer emitted them. Either way the item API (``peek``, ``poll``, ``take``)
    #: sees pairs.
    accepts_stamped: bool = False
    #: True for sinks whose ``result_part()`` makes up the job's result.
    collects: bool = False

    outbox: Outbox
    context: ProcessorContext

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        """Called once before anything else; may block. Keep the outbox for later calls."""
        self.outbox = outbox
        self.context = context

    def process(self, ordinal: int, inbox: Inbox) -> None:
        """Handle items from ``inbox`` (all from ``ordinal``); leave unhandled items in it."""
        raise NotImplementedError(
            f"{type(self).__name__} received items on ordinal {ordinal} but does not implement process()"
        )

    def try_process_watermark(self, watermark: Watermark) -> bool:
        """Handle a coalesced watermark; the default forwards it to every outbound ordinal."""
        return self.outbox.offer(watermark)

    def try_process(self) -> bool:
        """Called whenever the inbox is empty, for work not driven by data (timers, flushes)."""
        return True

    def complete_edge(self, ordinal: int) -> bool:
        """Inbound ``ordinal`` has delivered everything."""
        return True

    def complete(self) -> bool:
        """All inbound edges are exhausted; emit final results. Sources emit from here."""
        return True

    def close(self) -> None:
        """Release resources. Always called last, even after a failure or without ``init``."""

    def save_to_snapshot(self) -> bool:
        """Phase 1 of a snapshot: offer the state through ``outbox.offer_to_snapshot``; True when
        all of it is in (the default saves nothing)."""
        return True

    def snapshot_commit_prepare(self) -> bool:
        """Phase 1, after the state is saved: prepare the transaction of what came before the
        barrier (a transactional sink); True when done."""
        return True

    def snapshot_commit_finish(self, success: bool) -> bool:
        """Phase 2: the snapshot is in the store (``success``) or failed; commit or roll back.
        Must eventually return True."""
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        """Take this instance's ``(key, value)`` entries of the snapshot restored; leave unhandled
        ones in ``inbox``. The default refuses entries: only a processor that saved state gets any."""
        if inbox:
            from .errors import JetbenchError

            raise JetbenchError(f"{type(self).__name__} got {len(inbox)} snapshot entries to restore but does "
                                "not implement restore_from_snapshot()")

    def finish_snapshot_restore(self) -> bool:
        """Every entry has been restored; True when done."""
        return True

    def metrics(self) -> dict[str, int]:
        """The processor's own counters for `Job.metrics` (e.g. ``late_events_dropped``).

        The default reports the ``late_events_dropped`` attribute when the processor has one.
        """
        late = getattr(self, "late_events_dropped", None)
        return {} if late is None else {"late_events_dropped": late}

    def result_part(self) -> Any:
        """What this instance contributes to ``Job.result`` (only read when ``collects`` is True)."""
        return None
