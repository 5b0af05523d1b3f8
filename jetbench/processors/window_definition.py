"""Window definitions and the window result type (re-exported as ``jetbench.window``).

Event time is a number in milliseconds. Windows are aligned to 0: a tumbling window of size
1000 covers [0, 1000), [1000, 2000), ...; a sliding window (size, slide) is made of frames of
length ``slide``, and covers ``size // slide`` consecutive frames.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from ..core.errors import JetbenchError


class WindowResult(NamedTuple):
    """One window's aggregate: ``[start, end)``, the grouping key (None when not grouped), the value."""

    start: float  # ms; an int for sliding windows, the event times of a session (maybe floats)
    end: float
    key: Any
    value: Any


@dataclass(frozen=True)
class WindowDefinition:
    """``kind`` is "sliding" (tumbling = sliding with slide == size) or "session";
    ``early_results_ms``: see `early_results_period`."""

    kind: str
    size: int = 0
    slide: int = 0
    gap: int = 0
    early_results_ms: int = 0

    def early_results_period(self, ms: int) -> WindowDefinition:
        """This definition with early results (Jet's ``setEarlyResultsPeriod``): every ``ms`` of
        processing time (the processor context's clock), each window not closed yet emits its
        current result, the same `WindowResult` as the final one (Jet marks it ``isEarly``;
        jetbench does not: the last result of a window and key is its final one, emitted when
        the watermark passes the window's end, as without early results). 0: none. The
        operation must combine (an early result is made from a copy of the accumulators).

        >>> from jetbench import window
        >>> window.tumbling(1000).early_results_period(200)
        tumbling(1000).early_results_period(200)
        """
        if ms != 0:
            _positive("early results period", ms)
        return replace(self, early_results_ms=ms)

    @property
    def frame_size(self) -> int:
        """Watermark throttling and frame length: the slide (the gap for session windows)."""
        return self.slide if self.kind == "sliding" else self.gap

    @property
    def is_tumbling(self) -> bool:
        return self.kind == "sliding" and self.size == self.slide

    def __repr__(self) -> str:
        early = f".early_results_period({self.early_results_ms})" if self.early_results_ms else ""
        if self.kind == "session":
            return f"session({self.gap}){early}"
        return (f"tumbling({self.size})" if self.is_tumbling else f"sliding({self.size}, {self.slide})") + early


def _positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise JetbenchError(f"{name} must be a positive int (milliseconds), got {value!r}")


def tumbling(size: int) -> WindowDefinition:
    """Back-to-back windows of ``size`` ms."""
    _positive("tumbling window size", size)
    return WindowDefinition("sliding", size, size)


def sliding(size: int, slide: int) -> WindowDefinition:
    """Windows of ``size`` ms starting every ``slide`` ms; ``size`` must be a multiple of ``slide``."""
    _positive("sliding window size", size)
    _positive("sliding window slide", slide)
    if size % slide:
        raise JetbenchError(f"sliding window size ({size}) must be a multiple of its slide ({slide})")
    return WindowDefinition("sliding", size, slide)


def session(gap: int) -> WindowDefinition:
    """A window per burst of events; it closes after ``gap`` ms with no event for its key."""
    _positive("session window gap", gap)
    return WindowDefinition("session", gap=gap)


def check_window_key(key_fn: Any) -> Any:
    """``key_fn`` of a window processor: a callable, or None for one global window."""
    if key_fn is not None and not callable(key_fn):
        raise JetbenchError(f"window aggregation: key_fn must be callable or None, got {key_fn!r}")
    return key_fn
