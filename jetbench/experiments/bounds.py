"""What no idle strategy can beat on this machine: limits worked out from a sweep's own rows.

A worker that sleeps between rounds wakes every ``G`` seconds on average and then runs one
round carrying the ``rate * G`` items that came due meanwhile. From the sweep:

- ``wake_s``: CPU of one bare wake-up (the bare-sleep row with the longest floor);
- ``shortest_sleep_s``: how long the shortest sleep really lasts, wake-up included (the
  bare-sleep row with the shortest floor: one over its wake-ups per second);
- ``round_s + item_s * n``: CPU of one round carrying ``n`` items, fitted over the rows whose
  worker never slept (CPU >= 90 % of a core), so with hot caches, the cheapest rounds there are.

Then, with a CPU share ``B`` (fraction of a core): ``G >= (wake_s + round_s) / (B - item_s *
rate)``, and in time, ``G >= (shortest_sleep_s + round_s) / (1 - item_s * rate)``. The oldest
item of a round has waited about ``G`` less one gap between items, so that is the lowest p99
latency reachable; conversely a p99 limit ``L`` caps ``G`` at ``L + 1 / rate`` and so sets
the least CPU. Both ignore the time to carry the item to the probe and the cold caches
after a real sleep, so they are optimistic: a limit beyond them cannot be met by sleeping.

>>> costs = IdleCosts(wake_s=35e-6, shortest_sleep_s=110e-6, round_s=30e-6, item_s=0.6e-6)
>>> round(costs.p99_bound_ms(10_000, cpu_percent=15), 3)      # within 15 % of a core
0.351
>>> round(costs.cpu_bound_percent(1_000, p99_ms=0.6), 2)      # p99 <= 0.6 ms at 1k items/s
4.12
>>> costs.cpu_bound_percent(50_000, p99_ms=0.1)               # shorter than any sleep allows
inf
>>> round(costs.cpu_percent_at(1_000, wakeups_per_s=1000, rounds_per_s=1000), 2)  # 1 item a wake
6.56
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class IdleCosts:
    """The machine's cost of idling and of one round of the job, in seconds of CPU or wall time."""

    wake_s: float
    shortest_sleep_s: float
    round_s: float
    item_s: float

    def min_gap_s(self, rate: float, cpu_share: float) -> float:
        """The shortest mean gap between wake-ups within ``cpu_share`` of a core (inf if none)."""
        load = self.item_s * rate
        if cpu_share <= load or load >= 1:
            return math.inf
        by_cpu = (self.wake_s + self.round_s) / (cpu_share - load)
        by_time = (self.shortest_sleep_s + self.round_s) / (1 - load)
        return max(by_cpu, by_time)

    def p99_bound_ms(self, rate: float, cpu_percent: float) -> float:
        """The lowest p99 latency (ms) reachable at ``rate`` within ``cpu_percent`` of a core."""
        return max(0.0, self.min_gap_s(rate, cpu_percent / 100) - 1 / rate) * 1e3

    def cpu_bound_percent(self, rate: float, p99_ms: float) -> float:
        """The least CPU (% of a core) for a p99 latency of ``p99_ms`` at ``rate`` (inf if
        sleeping can't reach it at all)."""
        gap = p99_ms / 1e3 + 1 / rate
        load = self.item_s * rate
        if load >= 1 or gap < (self.shortest_sleep_s + self.round_s) / (1 - load):
            return math.inf
        return 100 * ((self.wake_s + self.round_s) / gap + load)


    def cpu_percent_at(self, rate: float, wakeups_per_s: float, rounds_per_s: float) -> float:
        """CPU (% of a core) of ``wakeups_per_s`` bare wake-ups and ``rounds_per_s`` hot rounds
        carrying ``rate`` items per second: a strategy's own counts priced with hot caches, so
        the least it could use without waking or going round less often."""
        return 100 * (wakeups_per_s * self.wake_s + rounds_per_s * self.round_s + rate * self.item_s)


def idle_costs(points: pd.DataFrame) -> IdleCosts | None:
    """`IdleCosts` from a sweep's rows (one per point, e.g. `summarize`'s); None when the sweep
    lacks a bare-sleep row or a row whose worker never slept."""
    bare = points[(points["strategy"] == "bare-sleep") & (points["wakeups_per_s"] > 0)]
    if not len(bare) or "iterations_per_s" not in points:
        return None
    longest = bare.loc[bare["min_idle_us"].idxmax()]
    shortest = bare.loc[bare["min_idle_us"].idxmin()]
    spinning = points[(points["strategy"] != "bare-sleep") & (points["worker_cpu_percent"] >= 90)
                      & (points["iterations_per_s"] > 0)]
    if not len(spinning):
        return None
    per_round = spinning["worker_cpu_percent"] / 100 / spinning["iterations_per_s"]
    items = spinning["achieved_rate"] / spinning["iterations_per_s"]
    round_s, item_s = _fit_line([float(x) for x in items], [float(y) for y in per_round])
    return IdleCosts(
        wake_s=float(longest["cpu_percent"] / 100 / longest["wakeups_per_s"]),
        shortest_sleep_s=float(1 / shortest["wakeups_per_s"]),
        round_s=round_s,
        item_s=item_s,
    )


def _fit_line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares ``y = a + b x`` with ``a, b >= 0``.

    With one point, or xs spanning less than a factor of 2 (a quick sweep's spinning rows all
    carry about as many items per round), the slope cannot be told from the noise: then
    ``b = 0`` and ``a`` = the smallest y, which keeps the bound optimistic instead of reading a
    per-item cost large enough to fill a core out of two nearly equal rounds.

    >>> _fit_line([2, 22], [31, 41])
    (30.0, 0.5)
    >>> _fit_line([7.9, 8.4], [33.0, 32.0])
    (32.0, 0.0)
    """
    if min(xs) <= 0 or max(xs) < 2 * min(xs):
        return min(ys), 0.0
    try:
        slope, intercept = statistics.linear_regression(xs, ys)
    except statistics.StatisticsError:  # fewer than two points, or all x equal
        return min(ys), 0.0
    if slope <= 0:
        return min(ys), 0.0
    if intercept < 0:
        return 0.0, min(y / x for x, y in zip(xs, ys, strict=True) if x > 0)
    return intercept, slope
