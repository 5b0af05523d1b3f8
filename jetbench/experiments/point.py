"""One point of the idle sweep, run in a fresh process for clean CPU accounting.

    python -m jetbench.experiments '{"rate": 1000, "min_idle_us": 25, "strategy": "backoff"}'

prints one JSON row. Measurements cover only the steady window after ``warmup`` seconds.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from typing import Any

import psutil


def _percentile(samples: list[float], q: float) -> float | None:
    if not samples:
        return None
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


SOURCES = ("generator", "spark")


def make_source(kind: str, rate: float, seconds: float) -> Any:
    """The rate-limited, timestamped source of the experiment."""
    if kind == "generator":
        from .. import sources

        return sources.generator(rate)
    if kind == "spark":
        from .spark_source import spark_replay_source

        return spark_replay_source(rate, seconds)
    raise ValueError(f"unknown source {kind!r}: use one of {list(SOURCES)}")


def run_point(rate: float, min_idle_us: float, strategy: str = "backoff", seconds: float = 10.0,
              warmup: float = 2.0, max_idle_us: float | None = None, source: str = "generator",
              window_ms: int = 1000) -> dict[str, Any]:
    """Run the idle-CPU job (`idle_job`) at ``rate`` and measure CPU, achieved rate, latency and wake-ups."""
    if strategy == "bare-sleep":
        return bare_sleep(min_idle_us, seconds, warmup)
    from ..core import ExecutionService, JobCancelled
    from .idle_job import LatencyProbeP, idle_job

    max_idle = max_idle_us if max_idle_us is not None else max(min_idle_us, 1000)
    service = ExecutionService(min_idle_us=min_idle_us, max_idle_us=max_idle, idle=strategy)
    dag = idle_job(make_source(source, rate, warmup + seconds), window_ms=window_ms)
    proc = psutil.Process()
    job = service.submit(dag, name=f"idle-{strategy}-{min_idle_us}us-{rate}")
    probe = next(t.processor for t in job.tasklets if isinstance(t.processor, LatencyProbeP))
    worker = job.workers[0]
    time.sleep(warmup)

    def snapshot() -> tuple:
        cpu = proc.cpu_times()
        return (time.perf_counter(), cpu.user + cpu.system, worker.cpu_time_s, probe.items,
                worker.idler.parks, worker.iteration_count, len(probe.samples))

    w0, c0, wc0, n0, p0, i0, s0 = snapshot()
    time.sleep(seconds)
    w1, c1, wc1, n1, p1, i1, s1 = snapshot()
    job.cancel()
    with contextlib.suppress(JobCancelled):
        job.join(timeout=30)
    wall = w1 - w0
    latencies = probe.samples[s0:s1]
    achieved = (n1 - n0) / wall
    return {
        "rate": rate,
        "min_idle_us": min_idle_us,
        "max_idle_us": max_idle,
        "strategy": strategy,
        "source": source,
        "seconds": round(wall, 3),
        "cpu_percent": 100.0 * (c1 - c0) / wall,
        "worker_cpu_percent": 100.0 * (wc1 - wc0) / wall,
        "achieved_rate": achieved,
        "kept_up": achieved >= 0.95 * rate,
        "latency_p50_ms": _percentile(latencies, 0.50),
        "latency_p99_ms": _percentile(latencies, 0.99),
        "latency_max_ms": max(latencies) if latencies else None,
        "latency_samples": len(latencies),
        "wakeups_per_s": (p1 - p0) / wall,
        "iterations_per_s": (i1 - i0) / wall,
    }


def bare_sleep(min_idle_us: float, seconds: float = 10.0, warmup: float = 0.0) -> dict[str, Any]:
    """A process that only sleeps ``min_idle_us`` at a time: the physical floor of idling."""
    proc = psutil.Process()
    delay = min_idle_us / 1e6
    end_warmup = time.perf_counter() + warmup
    while time.perf_counter() < end_warmup:
        time.sleep(delay)
    cpu0, w0 = proc.cpu_times(), time.perf_counter()
    n = 0
    end = w0 + seconds
    while time.perf_counter() < end:
        time.sleep(delay)
        n += 1
    cpu1, wall = proc.cpu_times(), time.perf_counter() - w0
    used = (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)
    return {
        "rate": 0,
        "min_idle_us": min_idle_us,
        "max_idle_us": min_idle_us,
        "strategy": "bare-sleep",
        "source": "none",
        "seconds": round(wall, 3),
        "cpu_percent": 100.0 * used / wall,
        "worker_cpu_percent": 100.0 * used / wall,
        "achieved_rate": 0.0,
        "kept_up": True,
        "latency_p50_ms": None,
        "latency_p99_ms": None,
        "latency_max_ms": None,
        "latency_samples": 0,
        "wakeups_per_s": n / wall,
        "iterations_per_s": n / wall,
        "mean_sleep_us": wall / n * 1e6 if n else None,
    }


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    params = json.loads(args[0]) if args else {}
    print(json.dumps(run_point(**params)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
