"""Timing and reporting shared by the benchmarks."""

from __future__ import annotations

import gc
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import Field, asdict, dataclass, field
from typing import Any, ClassVar, Self


@dataclass
class Timing:
    wall_s: float
    cpu_s: float
    result: Any = field(repr=False, default=None)


def timed(fn: Callable[[], Any]) -> Timing:
    """Run ``fn`` once with the garbage collector quiet; return wall and process CPU time."""
    gc.collect()
    gc.disable()
    try:
        w0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        return Timing(time.perf_counter() - w0, time.process_time() - c0, result)
    finally:
        gc.enable()


def on_thread(fn: Callable[[], Any]) -> Callable[[], Any]:
    """Wrap ``fn`` to run on a fresh thread, as the engine's workers do: the OS then places
    baseline and engine alike (a loop on the main thread after worker threads ran was measured
    up to 1.5x slower here, unpinned)."""

    def run() -> Any:
        box: list[Any] = []
        t = threading.Thread(target=lambda: box.append(fn()), name="bench-baseline")
        t.start()
        t.join()
        return box[0]

    return run


def interleaved(fns: dict[str, Callable[[], Any]], repeat: int) -> dict[str, Timing]:
    """Run each function ``repeat`` times, interleaved; keep each one's median-wall run."""
    runs: dict[str, list[Timing]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            runs[name].append(timed(fn))
    return {name: sorted(ts, key=lambda t: t.wall_s)[len(ts) // 2] for name, ts in runs.items()}


def with_adaptive(spark: Any, adaptive: bool, job: Callable[[], Any]) -> Any:
    """``job()`` with Spark SQL's adaptive execution on or off (a runtime setting), then the
    session's own setting again. The benchmarks' DataFrame baselines run as in a PySpark user's
    session, with Spark's default (on); the embedded session turns it off for the SparkRunner's
    plans."""
    key = "spark.sql.adaptive.enabled"
    before = spark.conf.get(key)
    spark.conf.set(key, "true" if adaptive else "false")
    try:
        return job()
    finally:
        spark.conf.set(key, before)


def load_average() -> float | None:
    """The 1-minute load average: other work on a shared machine skews every figure (and a
    scaling figure most)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


class ReportFormat:
    """For report dataclasses with an ``extra`` dict: flat JSON, and the extra lines of text."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # every report is a dataclass
    results_equal: bool
    extra: dict[str, Any]

    def to_text(self) -> str:
        raise NotImplementedError

    def to_json(self) -> str:
        data = asdict(self)
        data.update(data.pop("extra"))
        return json.dumps(data)

    def extra_lines(self) -> list[str]:
        return [f"  {key}: {value:,.3f}" if isinstance(value, float) else f"  {key}: {value}"
                for key, value in self.extra.items()]


@dataclass
class BenchReport(ReportFormat):
    """What every benchmark prints; ``ratio`` = jetbench items/s over the plain loop's (wall clock)."""

    benchmark: str
    items: int
    jetbench_items_per_s: float
    baseline_items_per_s: float
    ratio: float
    results_equal: bool
    ratio_basis: str = "wall-clock items/s, median of interleaved repeats, same process"
    extra: dict[str, Any] = field(default_factory=dict)
    #: what the baseline is, for the text report (the JSON carries it too)
    baseline_kind: str = "plain fused Python loop"

    @classmethod
    def of(cls, benchmark: str, items: int, engine: Timing, baseline: Timing, equal: bool, **extra: Any) -> Self:
        jet = items / engine.wall_s
        base = items / baseline.wall_s
        return cls(benchmark, items, jet, base, jet / base, equal, extra=extra)

    def against(self, name: str, other: Timing, **more: Any) -> Self:
        """Add another baseline's figures as ``{name}_items_per_s`` and ``{name}_ratio`` (jetbench
        items/s over its)."""
        per_s = self.items / other.wall_s
        self.extra[f"{name}_items_per_s"] = per_s
        self.extra[f"{name}_ratio"] = self.jetbench_items_per_s / per_s
        self.extra.update(more)
        return self

    def to_text(self) -> str:
        lines = [
            f"{self.benchmark}: {self.items:,} items",
            f"  jetbench : {self.jetbench_items_per_s:>14,.0f} items/s",
            f"  baseline : {self.baseline_items_per_s:>14,.0f} items/s  ({self.baseline_kind})",
            f"  ratio    : {self.ratio:.3f}  ({self.ratio_basis})",
            f"  results equal: {self.results_equal}",
        ]
        return "\n".join(lines + self.extra_lines())
