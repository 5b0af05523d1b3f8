"""Watermark coalescing across inputs (producer queues of an edge, or inbound ordinals)."""

from __future__ import annotations

from .errors import JetbenchError
from .items import IDLE_MESSAGE, Watermark


class WatermarkCoalescer:
    """Merges per-input watermarks into one stream: the minimum over inputs that are neither idle
    nor done, emitted only when it advances. Watermarks must strictly increase per input.

    An idle marker excludes its input until that input sees data or a new watermark; when every
    input is idle or done, the top observed watermark goes out first and then the idle marker.

    >>> c = WatermarkCoalescer(2)
    >>> c.observe(0, Watermark(10)) is None  # input 1 has no watermark yet
    True
    >>> c.observe(1, Watermark(7))
    Watermark(7)
    >>> c.done(1)
    Watermark(10)
    """

    __slots__ = ("_last", "_idle", "_done", "_emitted", "_top", "_idle_forwarded", "idle_pending", "any_idle")

    def __init__(self, input_count: int):
        self._last: list[int | None] = [None] * input_count
        self._idle = [False] * input_count
        self._done = [False] * input_count
        self._emitted: int | None = None
        self._top: int | None = None
        self._idle_forwarded = False
        self.idle_pending = False  # the idle marker must follow the watermark just returned
        self.any_idle = False

    @property
    def last_emitted(self) -> int | None:
        return self._emitted

    @property
    def top_observed(self) -> int | None:
        return self._top

    def observe(self, index: int, watermark: Watermark) -> Watermark | None:
        """Record a watermark from input ``index``; return the new coalesced watermark, if any."""
        if watermark.is_idle_marker:
            self._idle[index] = True
            self.any_idle = True
            return self._coalesce()
        ts = watermark.timestamp
        last = self._last[index]
        if last is not None and ts <= last:
            raise JetbenchError(f"watermarks must increase on input {index}: got {ts} after {last}")
        self._last[index] = ts
        if self._top is None or ts > self._top:
            self._top = ts
        if self._idle[index]:
            self.mark_active(index)
        return self._coalesce()

    def mark_active(self, index: int) -> None:
        """Input ``index`` delivered data: it is no longer idle."""
        if self._idle[index]:
            self._idle[index] = False
            self.any_idle = any(self._idle)
            self._idle_forwarded = False

    def done(self, index: int) -> Watermark | None:
        """Input ``index`` is exhausted: it no longer holds the watermark back."""
        self._done[index] = True
        return self._coalesce()

    def take_idle(self) -> Watermark | None:
        """The idle marker owed after the top watermark, if still due."""
        if self.idle_pending:
            self.idle_pending = False
            if self._all_quiet():
                self._idle_forwarded = True
                return IDLE_MESSAGE
        return None

    def _all_quiet(self) -> bool:
        return all(i or d for i, d in zip(self._idle, self._done, strict=True)) and not all(self._done)

    def _coalesce(self) -> Watermark | None:
        candidate: int | None = None  # the minimum over the live inputs (neither idle nor done)
        for w, i, d in zip(self._last, self._idle, self._done, strict=True):
            if not i and not d:
                if w is None:
                    return None  # a live input has no watermark yet: it holds everything back
                if candidate is None or w < candidate:
                    candidate = w
        if candidate is not None:
            pass
        elif all(self._done):
            return None  # DONE follows; nothing left to hold back
        else:  # every remaining input is idle
            top = self._top
            if top is not None and (self._emitted is None or top > self._emitted):
                self._emitted = top
                self.idle_pending = True
                return Watermark(top)
            if not self._idle_forwarded:
                self._idle_forwarded = True
                return IDLE_MESSAGE
            return None
        if self._emitted is None or candidate > self._emitted:
            self._emitted = candidate
            self._idle_forwarded = False
            return Watermark(candidate)
        return None
