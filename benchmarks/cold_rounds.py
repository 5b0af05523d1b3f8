"""What a real sleep does to the next round: the idle-CPU job (`jetbench.experiments.idle_job`)
under the timer strategy (1000 us floor), once sleeping between rounds as usual and once
spin-waiting instead (the same wake-up times, but the thread never leaves the core, so its
caches stay warm).

    .venv/bin/python benchmarks/cold_rounds.py [--rates 1000 250000] [--seconds 3] [--repeat 3]

Prints, per rate, each tasklet's busy time per call (median over the repeats) after a sleep and
after a spin-wait, the round's total, and their ratio. The spin-wait run is the baseline; the
two alternate so that a drifting machine affects both alike.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

from jetbench.core import ExecutionService, JobCancelled
from jetbench.core.clock import SYSTEM_CLOCK, Clock
from jetbench.experiments.idle_job import idle_job
from jetbench.experiments.point import make_source


class SpinClock:
    """The real clock, except that sleeping spin-waits: the thread never leaves the core and is
    never woken early. (Not a `SystemClock`, so the timer idler sleeps on it, not on its parker.)"""

    monotonic = staticmethod(time.monotonic)
    monotonic_ns = staticmethod(time.monotonic_ns)
    time_ns = staticmethod(time.time_ns)

    @staticmethod
    def sleep(seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass


def busy_per_call_us(rate: float, spin: bool, seconds: float) -> dict[str, float]:
    """Tasklet name -> mean busy microseconds per call over ``seconds`` after 1 s of warm-up."""
    clock: Clock = SpinClock() if spin else SYSTEM_CLOCK
    service = ExecutionService(min_idle_us=1000, max_idle_us=1000, idle="timer", clock=clock)
    job = service.submit(idle_job(make_source("generator", rate, seconds + 1)))
    time.sleep(1)
    before = {t.name: (t.busy_ns, t.calls) for t in job.tasklets}
    time.sleep(seconds)
    after = {t.name: (t.busy_ns, t.calls) for t in job.tasklets}
    job.cancel()
    with contextlib.suppress(JobCancelled):
        job.join(timeout=30)
    return {name: (after[name][0] - b[0]) / 1e3 / max(1, after[name][1] - b[1]) for name, b in before.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", type=float, nargs="+", default=[1000, 250_000])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for rate in args.rates:
        runs: dict[bool, list[dict[str, float]]] = {True: [], False: []}
        for _ in range(args.repeat):
            for spin in (True, False):
                runs[spin].append(busy_per_call_us(rate, spin, args.seconds))
        medians = {spin: {name: statistics.median(r[name] for r in rs) for name in rs[0]}
                   for spin, rs in runs.items()}
        print(f"\n{rate:,.0f} items/s, busy us per call (median of {args.repeat}):")
        print(f"  {'tasklet':<22}{'after sleep':>12}{'after spin':>12}")
        for name in medians[True]:
            print(f"  {name:<22}{medians[False][name]:12.1f}{medians[True][name]:12.1f}")
        cold, hot = sum(medians[False].values()), sum(medians[True].values())
        print(f"  {'round':<22}{cold:12.1f}{hot:12.1f}   ratio {cold / hot:.2f}, +{cold - hot:.0f} us")


if __name__ == "__main__":
    main()
