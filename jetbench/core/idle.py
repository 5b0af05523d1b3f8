"""Idling: what a worker does after a round in which no tasklet made progress.

Jet parks the thread for a time that doubles from a minimum to a maximum on each consecutive
idle round and resets after any productive round. `IdleConfig` holds the bounds and is read on
every park, so `ExecutionService.set_idle` takes effect on running workers at once.
"""

from __future__ import annotations

import threading
import time

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


class BackoffIdler:
    """Sleeps for `IdleConfig.park_ns` and counts how long it asked to sleep.

    A park of 0 yields the GIL (``sleep(0)``) instead of sleeping.
    """

    __slots__ = ("config", "parks", "parked_ns")

    def __init__(self, config: IdleConfig):
        self.config = config
        self.parks = 0
        self.parked_ns = 0

    def idle(self, idle_round: int) -> None:
        ns = self.config.park_ns(idle_round)
        self.parks += 1
        self.parked_ns += ns
        time.sleep(ns / 1e9)
