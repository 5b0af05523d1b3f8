"""Watermarks kept per partition and coalesced (Jet's ``EventTimeMapper``, as its Kafka source
uses it): each partition's watermark trails the highest timestamp it delivered by ``allowed_lag``,
floored to ``throttle_frame``; the source's watermark is the least over the partitions that are
not idle, never decreasing. A partition without a record for ``idle_timeout_ms`` of wall time is
idle (left out) until its next record; when every partition is idle, the top watermark goes out
and then the idle marker. An instance that reads no partition is idle from the start.

>>> wm = PartitionWatermarks(2, allowed_lag=0, throttle_frame=10, idle_timeout_ms=1000)
>>> wm.observe(0, 25, now=0.0), wm.observe(1, 13, now=0.0), wm.observe(0, 47, now=0.0)
(None, Watermark(10), None)
>>> wm.poll(now=2.0)   # both idle: the top watermark, then the idle marker
[Watermark(40), Watermark(IDLE)]
>>> wm.observe(1, 44, now=2.5)   # partition 1 is back (44 floors to 40, not above the last)
"""

from __future__ import annotations

import math
from typing import Any

from ..core.items import IDLE_MESSAGE, Watermark


class PartitionWatermarks:
    """The watermark state of one source instance over its ``partitions`` partitions (by index)."""

    def __init__(self, partitions: int, allowed_lag: float, throttle_frame: int,
                 idle_timeout_ms: float | None, now: float = 0.0):
        self.allowed_lag = allowed_lag
        self.throttle_frame = throttle_frame
        self.idle_timeout_s = idle_timeout_ms / 1000.0 if idle_timeout_ms and idle_timeout_ms > 0 else None
        #: per partition: its own watermark (-inf before its first record)
        self.partition_wm: list[float] = [-math.inf] * partitions
        self._last_seen = [now] * partitions
        self._idle = [False] * partitions
        self.last_emitted: float = -math.inf
        #: the idle marker went out (cleared by the next record)
        self.idle_sent = False

    def _frame(self, ts: float) -> float:
        return (int(ts - self.allowed_lag) // self.throttle_frame) * self.throttle_frame

    def observe(self, partition: int, ts: float, now: float) -> Watermark | None:
        """A record of ``partition`` with timestamp ``ts`` was read: the watermark to emit after
        it, if the coalesced one rose."""
        self._last_seen[partition] = now
        self._idle[partition] = False
        self.idle_sent = False
        wm = self._frame(ts)
        if wm > self.partition_wm[partition]:
            self.partition_wm[partition] = wm
        return self._coalesced()

    def _coalesced(self) -> Watermark | None:
        active = [w for w, idle in zip(self.partition_wm, self._idle, strict=True) if not idle]
        if not active:
            return None
        candidate = min(active)
        if candidate > self.last_emitted and candidate != -math.inf:
            self.last_emitted = candidate
            return Watermark(int(candidate))
        return None

    def poll(self, now: float) -> list[Watermark]:
        """What the passing of wall time emits: partitions gone idle may release the watermark;
        when every partition is idle, the top watermark and the idle marker (once)."""
        out: list[Watermark] = []
        timeout = self.idle_timeout_s
        if timeout is not None:
            for p, seen in enumerate(self._last_seen):
                if not self._idle[p] and now - seen >= timeout:
                    self._idle[p] = True
        if all(self._idle):
            if not self.idle_sent and (timeout is not None or not self._idle):
                top = max(self.partition_wm, default=-math.inf)
                if top > self.last_emitted and top != -math.inf:
                    self.last_emitted = top
                    out.append(Watermark(int(top)))
                out.append(IDLE_MESSAGE)
                self.idle_sent = True
            return out
        wm = self._coalesced()
        if wm is not None:
            out.append(wm)
        return out

    def next_change(self) -> float | None:
        """When (monotonic seconds) the next partition goes idle; None if none will."""
        if self.idle_timeout_s is None or self.idle_sent:
            return None
        pending = [seen for seen, idle in zip(self._last_seen, self._idle, strict=True) if not idle]
        return min(pending) + self.idle_timeout_s if pending else None

    def restart_clock(self, now: float) -> None:
        """Count every partition's time without records from ``now`` (reading begins)."""
        self._last_seen = [now] * len(self._last_seen)

    def state(self, partition: int) -> float:
        return self.partition_wm[partition]

    def restore(self, partition: int, wm: Any, last_emitted: Any) -> None:
        if wm is not None and wm > self.partition_wm[partition]:
            self.partition_wm[partition] = wm
        if last_emitted is not None and last_emitted > self.last_emitted:
            self.last_emitted = last_emitted


__all__ = ["PartitionWatermarks"]
