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
from typing import TYPE_CHECKING, Any

from .clock import SYSTEM_CLOCK, Clock

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


class Processor:
    """Base class of every processor; override what you need.

    Lifecycle, all on one thread at a time: ``init`` once; then ``process(ordinal, inbox)`` while
    items arrive (``try_process`` when the inbox is empty, ``try_process_watermark`` for each
    coalesced watermark); ``complete_edge(ordinal)`` when an inbound ordinal is exhausted;
    ``complete()`` after all inputs are exhausted (a source, with no inputs, emits from here);
    ``close()`` always last, also after a failure. The boolean methods return True when done and
    are called again otherwise.
    """

    #: False gives the processor a dedicated thread and a blocking outbox that never refuses.
    is_cooperative: bool = True
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

    def metrics(self) -> dict[str, int]:
        """The processor's own counters for `Job.metrics` (e.g. ``late_events_dropped``).

        The default reports the ``late_events_dropped`` attribute when the processor has one.
        """
        late = getattr(self, "late_events_dropped", None)
        return {} if late is None else {"late_events_dropped": late}

    def result_part(self) -> Any:
        """What this instance contributes to ``Job.result`` (only read when ``collects`` is True)."""
        return None
