"""Idling: what a worker does after a round in which no tasklet made progress.

Jet parks the thread for a time that doubles from a minimum to a maximum on each consecutive
idle round and resets after any productive round. `IdleConfig` holds the bounds and is read on
every park, so `ExecutionService.set_idle` takes effect on running workers at once. An `Idler`
is one worker's strategy: `BackoffIdler` (Jet's) or `TimerIdler` (sleeps until work is due).
"""

from __future__ import annotations

import abc
import contextlib
import math
import threading
from collections.abc import Callable, Sequence
from typing import ClassVar, Protocol

from .clock import SYSTEM_CLOCK, Clock, SystemClock
from .errors import JetbenchError


class IdleConfig:
    """Thread-safe, mutable min/max park times in microseconds.

    >>> cfg = IdleConfig(25, 500)
    >>> [cfg.park_ns(n) // 1000 for n in range(1, 7)]
    [25, 50, 100, 200, 400, 500]
    >>> cfg.set(min_idle_us=1000)  # max below min is raised to min, as in Jet
    >>> cfg.min_idle_us, cfg.max_idle_us
    (1000.0, 1000.0)
    """

    def __init__(self, min_idle_us: float = 25, max_idle_us: float = 500):
        self._lock = threading.Lock()
        self._min_ns = 0
        self._max_ns = 0
        self.set(min_idle_us, max_idle_us)

    @property
    def min_idle_us(self) -> float:
        return self._min_ns / 1000

    @property
    def max_idle_us(self) -> float:
        return self._max_ns / 1000

    @property
    def min_ns(self) -> int:
        """The shortest park, in nanoseconds."""
        return self._min_ns

    @property
    def max_ns(self) -> int:
        """The longest park, in nanoseconds."""
        return self._max_ns

    def set(self, min_idle_us: float | None = None, max_idle_us: float | None = None) -> None:
        """Change either bound; a max below the min is raised to the min."""
        for name, value in (("min_idle_us", min_idle_us), ("max_idle_us", max_idle_us)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value < 0):
                raise JetbenchError(f"{name} must be a number >= 0, got {value!r}")
        with self._lock:
            min_ns = self._min_ns if min_idle_us is None else int(min_idle_us * 1000)
            max_ns = self._max_ns if max_idle_us is None else int(max_idle_us * 1000)
            self._min_ns, self._max_ns = min_ns, max(min_ns, max_ns)

    def park_ns(self, idle_round: int) -> int:
        """Park time for the ``idle_round``-th consecutive idle round (1-based)."""
        min_ns, max_ns = self._min_ns, self._max_ns
        if idle_round > 40:
            return max_ns
        park = min_ns << (idle_round - 1) if idle_round > 0 else min_ns
        return park if park < max_ns else max_ns

    def __repr__(self) -> str:
        return f"IdleConfig(min_idle_us={self.min_idle_us:g}, max_idle_us={self.max_idle_us:g})"


class Wakeable(Protocol):
    """What an idler asks of a tasklet: when it can next make progress (see `ProcessorTasklet.wake_time`)."""

    def wake_time(self) -> float | None: ...


class Idler(abc.ABC):
    """One worker's idle strategy. The worker calls `idle` after a round without progress and
    `after_progress` after one with; other threads call `wake` when they hand it work.

    The base keeps what every strategy shares: the bounds (`config`), the `clock`, the counters
    (`parks`, `parked_ns`: the park time asked for; `woken`: parks another thread cut short,
    which only a strategy that can be woken counts) and the backoff park itself.
    """

    #: the strategy's name, as ``ExecutionService(idle=...)`` takes it
    name: ClassVar[str]

    def __init__(self, config: IdleConfig, clock: Clock = SYSTEM_CLOCK,
                 sleep: Callable[[float], object] | None = None):
        self.config = config
        self.clock = clock
        self.parks = 0
        self.parked_ns = 0
        self.woken = 0
        self._sleep: Callable[[float], object] = sleep or clock.sleep

    @abc.abstractmethod
    def idle(self, idle_round: int, tasklets: Sequence[Wakeable] = ()) -> None:
        """Called after the ``idle_round``-th consecutive round in which no tasklet progressed."""

    def after_progress(self, tasklets: Sequence[Wakeable]) -> None:
        """Called after a round that made progress; Jet's strategy does nothing here."""
        return None

    def wake(self) -> None:
        """Another thread has work for this worker (only timer-aware idlers can be woken)."""
        return None

    def replaced_by(self, other: Idler) -> Idler:
        """``other``, carrying this idler's counters over (switching strategy on a live worker)."""
        other.parks, other.parked_ns = self.parks, self.parked_ns
        self.wake()  # a worker asleep on the old idler wakes and picks the new one up
        return other

    def back_off(self, idle_round: int) -> None:
        """Sleep for `IdleConfig.park_ns` of the idle round (a park of 0 yields the GIL): Jet's
        park, which every strategy falls back on when it cannot tell when work comes."""
        ns = self.config.park_ns(idle_round)
        self.parks += 1
        self.parked_ns += ns
        self._sleep(ns / 1e9)


class BackoffIdler(Idler):
    """Jet's strategy: sleep for `IdleConfig.park_ns` of the idle round, blind to what is due.

    Sleeps on ``clock`` (a `MockClock` in tests), or on ``sleep`` if given.
    """

    name = "backoff"

    def idle(self, idle_round: int, tasklets: Sequence[Wakeable] = ()) -> None:
        self.back_off(idle_round)


class Parker:
    """A wake-up signal to sleep on: `park` returns at the timeout or as soon as `wake` is called.

    A wake with nobody parked is kept for the next park (one at most). Built on a plain lock,
    whose timed acquire waits in C: cheaper per park than ``threading.Event.wait``, which
    runs a condition variable in Python (measured here: ~37 against ~45-60 µs of CPU per 1 ms park).

    >>> p = Parker()
    >>> p.wake(); p.wake()      # kept once, not counted
    >>> p.park(5.0)             # returns at once: a wake was pending
    True
    >>> p.park(0.001)           # nothing pending: times out
    False
    """

    __slots__ = ("_lock", "_yield")

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()  # locked = no wake pending
        self._yield = clock.sleep

    def park(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds; True if woken (the wake is consumed)."""
        if timeout <= 0:
            woken = self._lock.acquire(blocking=False)
            self._yield(0)  # yield the GIL, as a zero park does
            return woken
        return self._lock.acquire(timeout=timeout)

    def wake(self) -> None:
        """Wake the parked thread, or the next `park`; any thread may call it.

        Cheap when a wake is already pending (a producer may call it on every offer)."""
        lock = self._lock
        if lock.locked():  # else a wake is pending already
            with contextlib.suppress(RuntimeError):  # another thread's wake got there first
                lock.release()


class TimerIdler(Idler):
    """Timer-aware idling: sleep exactly until the earliest time a tasklet says it can progress.

    Each tasklet's ``wake_time()`` gives a ``clock.monotonic()`` deadline, +inf ("only input
    from another tasklet wakes me") or None ("can't tell"). With every deadline known the worker
    waits until the earliest one, capped at ``max_idle_us``, on a `Parker` that other threads
    wake when they hand it work (`wake`). If any tasklet can't tell, it falls back to backoff.
    On a clock other than the real one (a `MockClock`), it waits with ``clock.sleep`` instead;
    ``wait`` overrides either.

    It also paces: after a productive round, if every tasklet is drained and only timed work
    remains, it sleeps until that work is due but no sooner than ``min_idle_us`` after its
    previous deadline (a periodic tick, so it never drifts behind due times; after falling
    behind, from now), so the floor becomes a coalescing interval. (Jet's rule idles only after a round without
    progress, which in CPython never comes once items arrive faster than a round takes.) But
    while work that was due before the round began is still waiting (a backlog: a source held
    back by its full outbox, or after a pause), it goes round again at once.

    >>> from jetbench.core.clock import MockClock
    >>> cfg = IdleConfig(25, 500)
    >>> class Due:
    ...     def __init__(self, t): self.t = t
    ...     def wake_time(self): return self.t
    >>> clock = MockClock(start=10.0)
    >>> idler = TimerIdler(cfg, clock=clock)
    >>> idler.idle(1, [Due(10.0002), Due(float("inf"))])
    >>> idler.idle(1, [Due(99.0)])      # capped at max_idle_us
    >>> idler.idle(3, [Due(None)])      # unknown: backoff (3rd round: 4 x 25 us)
    >>> [round(w * 1e6) for w in clock.sleeps]
    [200, 500, 100]
    """

    name = "timer"

    def __init__(
        self,
        config: IdleConfig,
        clock: Clock = SYSTEM_CLOCK,
        wait: Callable[[float], object] | None = None,
    ):
        self._parker = Parker(clock)
        if wait is None and isinstance(clock, SystemClock):
            wait = self._parker.park
        super().__init__(config, clock, sleep=wait)
        self._last_deadline = -math.inf
        self._round_start = -math.inf  # when the worker's current round began
        self.fallbacks = 0
        self.skipped = 0
        self.backlog_rounds = 0  # productive rounds followed at once by another, to catch up

    def idle(self, idle_round: int, tasklets: Sequence[Wakeable] = ()) -> None:
        earliest = _earliest_wake(tasklets)
        if earliest is None:
            self.fallbacks += 1
            self.back_off(idle_round)
        else:
            self._park_until(earliest)
        self._round_start = self.clock.monotonic()

    def after_progress(self, tasklets: Sequence[Wakeable]) -> None:
        earliest = _earliest_wake(tasklets)
        if earliest is not None and earliest > 0.0:
            if earliest < self._round_start:
                self.backlog_rounds += 1
            else:
                floor_s = self.config.min_ns / 1e9
                now = self.clock.monotonic()
                tick = self._last_deadline + floor_s
                if tick < now:  # fell behind: the next tick counts from now
                    tick = now + floor_s
                self._park_until(max(earliest, tick))
                if earliest > now:
                    # Anchor the next tick on the work's own due time, so the tick snaps onto due
                    # times instead of locking at an arbitrary phase behind them.
                    self._last_deadline = min(self._last_deadline, earliest)
        self._round_start = self.clock.monotonic()

    def _park_until(self, deadline: float) -> None:
        max_ns = self.config.max_ns
        now = self.clock.monotonic()
        delay_ns = max_ns if deadline == math.inf else int((deadline - now) * 1e9)
        if delay_ns > max_ns:
            delay_ns, deadline = max_ns, now + max_ns / 1e9
        self._last_deadline = deadline
        if delay_ns <= 0:
            self.skipped += 1
            return
        self.parks += 1
        self.parked_ns += delay_ns
        if self._sleep(delay_ns / 1e9) is True:
            self.woken += 1

    def wake(self) -> None:
        self._parker.wake()


def _earliest_wake(tasklets: Sequence[Wakeable]) -> float | None:
    """The earliest ``wake_time()`` of ``tasklets``; None if any of them can't tell."""
    earliest = math.inf
    for t in tasklets:
        due = t.wake_time()
        if due is None:
            return None
        if due < earliest:
            earliest = due
    return earliest


IDLE_STRATEGIES: dict[str, type[Idler]] = {"backoff": BackoffIdler, "timer": TimerIdler}


def make_idler(strategy: str, config: IdleConfig, clock: Clock = SYSTEM_CLOCK) -> Idler:
    """The idler named ``strategy`` ("backoff" or "timer"), reading and sleeping on ``clock``."""
    try:
        kind = IDLE_STRATEGIES[strategy]
    except KeyError:
        raise JetbenchError(f"unknown idle strategy {strategy!r}; choose from {sorted(IDLE_STRATEGIES)}") from None
    return kind(config, clock)
