"""Time, as the engine reads it: one `Clock` protocol, the real clock, and a mock clock for tests.

Everything in the engine that reads the time or sleeps (idlers, the metrics sampler, a job's
elapsed time, tasklet call timing, processors through ``ProcessorContext.clock``) takes a
`Clock`, defaulting to `SYSTEM_CLOCK`. Tests pass a `MockClock`, whose time moves only when
something sleeps on it or the test advances it.

>>> clock = MockClock(start=100.0)
>>> clock.sleep(0.25)
>>> clock.monotonic(), clock.monotonic_ns()
(100.25, 100250000000)
>>> clock.advance(1.75); clock.monotonic()
102.0
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """What the engine needs of time: a monotonic reading (seconds and nanoseconds), the wall
    time for event timestamps, and a sleep.

    ``monotonic`` and ``monotonic_ns`` read the same clock; only differences between readings
    mean anything. Deadlines a tasklet reports (``wake_time``) are in ``monotonic()`` seconds.
    """

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back."""
        ...

    def monotonic_ns(self) -> int:
        """The same clock as `monotonic`, in nanoseconds."""
        ...

    def time_ns(self) -> int:
        """Wall-clock nanoseconds since the Unix epoch (for event timestamps, not for intervals)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Block the calling thread for ``seconds`` (0 yields the GIL)."""
        ...


class SystemClock:
    """The real clock: the `time` module's functions themselves, so reading it costs no more
    than calling them directly (a bound ``clock.monotonic_ns`` *is* ``time.monotonic_ns``).

    ``monotonic`` is ``time.perf_counter``'s clock on Linux (CLOCK_MONOTONIC), so call timings
    keep the resolution they had.
    """

    __slots__ = ()

    monotonic = staticmethod(time.monotonic)
    monotonic_ns = staticmethod(time.monotonic_ns)
    time_ns = staticmethod(time.time_ns)
    sleep = staticmethod(time.sleep)

    def __repr__(self) -> str:
        return "SYSTEM_CLOCK"


#: The one real clock, the default wherever a `Clock` is taken.
SYSTEM_CLOCK = SystemClock()


class MockClock:
    """A clock for tests: time stands still until something sleeps on it or the test moves it.

    ``sleep(s)`` records ``s`` in `sleeps` and advances the time by it at once (no real
    waiting). ``step`` makes every `monotonic` reading advance the time by that much afterwards,
    for code that reads the clock once per tick (a sampler, a dashboard). The wall time is
    ``epoch_ns`` plus the time moved so far.
    """

    __slots__ = ("_now_ns", "_start_ns", "_step_ns", "epoch_ns", "sleeps")

    def __init__(self, start: float = 0.0, step: float = 0.0, epoch_ns: int = 1_700_000_000 * 10**9):
        self._now_ns = round(start * 1e9)
        self._start_ns = self._now_ns
        self._step_ns = round(step * 1e9)
        self.epoch_ns = epoch_ns
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        now = self._now_ns
        self._now_ns = now + self._step_ns
        return now / 1e9

    def monotonic_ns(self) -> int:
        now = self._now_ns
        self._now_ns = now + self._step_ns
        return now

    def time_ns(self) -> int:
        return self.epoch_ns + self._now_ns - self._start_ns

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if seconds > 0:
            self._now_ns += round(seconds * 1e9)

    def advance(self, seconds: float) -> None:
        """Move the time forward by ``seconds`` without recording a sleep."""
        if seconds < 0:
            raise ValueError(f"a clock never goes back; advance({seconds})")
        self._now_ns += round(seconds * 1e9)

    def __repr__(self) -> str:
        return f"MockClock(now={self._now_ns / 1e9:g})"
