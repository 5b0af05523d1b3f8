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
from ..processors.supplier import ProcessorSupplier


class SettledLatencySinkP(LatencySinkP):
    def __init__(self, limit: int = LATENCY_SAMPLE_LIMIT):
        super().__init__(limit)
        self.flushed = 0

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
