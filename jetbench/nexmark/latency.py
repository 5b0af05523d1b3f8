"""Result latency of a rate-limited Nexmark run.

`settled_latency()` is the latency sink (``jetbench.sinks.latency``: ``now - ts`` per result)
leaving out results stamped later than their arrival: when a bounded input ends, the windows
still open in event time are flushed at once, before their end comes on the wall clock, and
their "latency" would be negative. Those are counted apart (``flushed``). A windowed result's
timestamp is its window's end, so its latency is how long after the window closed it arrived.
"""

from __future__ import annotations

from typing import Any

from ..core.inbox import Inbox
from ..pipeline.connectors import Sink
from ..processors.latency_sink import LATENCY_SAMPLE_LIMIT, LatencySinkP, summarize_latency
from ..processors.snapshotting import instance_key, own_values
from ..processors.supplier import ProcessorSupplier


class SettledLatencySinkP(LatencySinkP):
    """`LatencySinkP` counting apart the results stamped later than their arrival.

    Snapshots: the latency sink's state, then the ``flushed`` count under this instance's own
    key; a restored instance adds up what the instances it stands for counted."""

    def __init__(self, limit: int = LATENCY_SAMPLE_LIMIT):
        super().__init__(limit)
        self.flushed = 0
        self._base_saved = False  # this snapshot's latency state is in; the count is still to go

    def save_to_snapshot(self) -> bool:
        if not self._base_saved:
            if not super().save_to_snapshot():
                return False
            self._base_saved = True
        if not self.outbox.offer_to_snapshot(instance_key("SettledLatencySinkP", self.context), self.flushed):
            return False
        self._base_saved = False
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        mine, _, rest = own_values(inbox, "SettledLatencySinkP", self.context)
        self.flushed += sum(mine)
        super().restore_from_snapshot(Inbox(rest))

    def process(self, ordinal: int, inbox: Inbox) -> None:
        now = self.context.clock.time_ns() / 1e6
        items = inbox.take()
        settled = [item for item in items if item[0] <= now]
        self.flushed += len(items) - len(settled)
        super().process(ordinal, Inbox(settled))

    def result_part(self) -> tuple[Any, ...]:
        return (*super().result_part(), self.flushed)


def _summarize(parts: list[tuple[Any, ...]]) -> dict[str, Any]:
    summary = summarize_latency([p[:4] for p in parts])  # type: ignore[misc]
    summary["flushed"] = sum(p[4] for p in parts)
    return summary


def settled_latency() -> Sink:
    supplier = ProcessorSupplier(SettledLatencySinkP, LATENCY_SAMPLE_LIMIT, label="settled_latency()",
                                 merge_results=_summarize)
    return Sink("latency", supplier, accepts_timestamped=True, requires_timestamped=True)
