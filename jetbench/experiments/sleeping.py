"""What idling costs on this machine: real sleep length and CPU per wake-up, and the
"bare-sleep" baseline: a process that only sleeps at a given floor, doing no work."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class SleepCost:
    requested_us: float
    actual_us: float  # mean real length of one sleep
    cpu_per_wakeup_us: float  # thread CPU time per sleep/wake-up
    cpu_percent: float  # of one core, for a loop doing only these sleeps

    def as_dict(self) -> dict:
        return asdict(self)


def measure_sleep(requested_us: float, seconds: float = 0.5) -> SleepCost:
    """Sleep ``requested_us`` repeatedly for about ``seconds``; measure length and CPU cost."""
    delay = requested_us / 1e6
    n = 0
    w0, c0 = time.perf_counter(), time.thread_time()
    end = w0 + seconds
    while time.perf_counter() < end:
        time.sleep(delay)
        n += 1
    wall, cpu = time.perf_counter() - w0, time.thread_time() - c0
    return SleepCost(requested_us, wall / n * 1e6, cpu / n * 1e6, 100.0 * cpu / wall)


def sleep_granularity(requested_us: tuple[float, ...] = (0, 10, 25, 50, 100, 250, 500, 1000),
                      seconds: float = 0.3) -> list[SleepCost]:
    """`measure_sleep` for each requested length."""
    return [measure_sleep(us, seconds) for us in requested_us]
