"""Idle-CPU experiments: the job of Jet's "Idle Green Threads" blog post (2019), swept over rates,
idle floors and idle strategies (the job itself: `jetbench.experiments.idle_job`).

>>> from jetbench.experiments import sweep_points
>>> len(sweep_points([1000, 250_000], [25, 1000], ["backoff", "timer"], 1.0, 0.5))  # 8 + 2 bare-sleep
10
"""

from .bounds import IdleCosts, idle_costs
from .idle_job import LatencyProbeP, idle_job
from .point import bare_sleep, run_point
from .report import (
    JET_BLOG_CPU,
    blog_table,
    plot_cpu_vs_rate,
    plot_latency_vs_floor,
    plot_tradeoff,
    summarize,
    targets,
)
from .sleeping import SleepCost, measure_sleep, sleep_granularity
from .sweep import QUICK, idle_sweep, sweep_points

__all__ = [
    "JET_BLOG_CPU",
    "IdleCosts",
    "QUICK",
    "LatencyProbeP",
    "SleepCost",
    "bare_sleep",
    "blog_table",
    "idle_costs",
    "idle_job",
    "idle_sweep",
    "measure_sleep",
    "plot_cpu_vs_rate",
    "plot_latency_vs_floor",
    "plot_tradeoff",
    "run_point",
    "sleep_granularity",
    "summarize",
    "sweep_points",
    "targets",
]
