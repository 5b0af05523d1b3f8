"""The measurement behind ``bench spark-windows`` and ``bench spark-joins``: one job three ways
on one embedded session (the idiomatic DataFrame job, SparkRunner with the operation lowered to
Spark, SparkRunner with it kept in Python), each run ``warmups`` times first, then timed
``repeat`` times, interleaved; the median is kept and the three results compared. The DataFrame
job runs with Spark's adaptive execution on, as in a PySpark user's session.

>>> print("\\n".join(comparison_lines("windows", 1.0, 2.0, 3.0, ratio=0.5, speedup=1.5)))
  DataFrame job (baseline)     :    1.000 s
  SparkRunner, Spark's windows :    2.000 s  ratio 0.500  (DataFrame time / SparkRunner time; higher is better)
  SparkRunner, Python windows  :    3.000 s  (Spark's windows 1.50x faster)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from .common import interleaved, load_average, with_adaptive

#: the three jobs' names in `measure`'s ``jobs``
JOBS = ("dataframe", "sparkrunner", "sparkrunner_python")


@dataclass(frozen=True)
class LoweringTimes:
    """`measure`'s result: median wall seconds per job name, the DataFrame job's result, and
    what the reports' ``extra`` holds (master, repeat, events path, whether the operation was
    lowered, cpus and load averages)."""

    seconds: Mapping[str, float]
    reference: Any
    results_equal: bool
    extra: dict[str, Any]

    @property
    def ratio(self) -> float:
        """DataFrame time / SparkRunner time (higher is better)."""
        return self.seconds["dataframe"] / self.seconds["sparkrunner"]

    @property
    def lowering_speedup(self) -> float:
        """The Python path's time / the lowered path's time."""
        return self.seconds["sparkrunner_python"] / self.seconds["sparkrunner"]


def measure(master: str, events: int, keys: int, repeat: int, warmups: int, lowered_key: str,
            jobs: Callable[[Any, str], tuple[dict[str, Callable[[], Any]], Callable[[], bool]]]) -> LoweringTimes:
    """Make the events (``events`` of ``keys`` keys, one per ms) on ``master`` (the embedded
    session is started there, and the caller's session restored afterwards) and time
    ``jobs(spark, path)``: the three jobs of `JOBS` and a check that the lowered run lowers
    (``extra[lowered_key]``)."""
    from ..spark import datasets, session
    from ..spark._session import sessions_restored

    load_before = load_average()
    with sessions_restored():
        spark = session(master, fast_start=False)  # heavy work: the JVM's optimising compiler
        path = datasets.events_path(events, keys, interval_ms=1, session=spark)
        fns, lowers = jobs(spark, path)
        # the baseline as in a PySpark user's session: Spark's adaptive execution on
        fns = {**fns, "dataframe": partial(with_adaptive, spark, True, fns["dataframe"])}
        for _ in range(warmups):
            for fn in fns.values():
                fn()
        timings = interleaved(fns, repeat)
        lowered = lowers()
    results = [t.result for t in timings.values()]
    return LoweringTimes(
        seconds={name: t.wall_s for name, t in timings.items()},
        reference=results[0],
        results_equal=all(r == results[0] for r in results),
        extra={"master": master, "repeat": repeat, "events_path": path, lowered_key: lowered,
               "cpus": os.cpu_count(), "load_average_before": load_before, "load_average_after": load_average()},
    )


def comparison_lines(what: str, dataframe_s: float, sparkrunner_s: float, python_s: float, *, ratio: float,
                     speedup: float) -> list[str]:
    """The three timings as the reports print them (``what``: "windows", "join"), with the
    report's ``ratio`` and ``lowering_speedup``."""
    labels = ["DataFrame job (baseline)", f"SparkRunner, Spark's {what}", f"SparkRunner, Python {what}"]
    width = max(map(len, labels)) + 1
    dataframe, lowered, python = (label.ljust(width) for label in labels)
    return [
        f"  {dataframe}: {dataframe_s:8.3f} s",
        f"  {lowered}: {sparkrunner_s:8.3f} s  ratio {ratio:.3f}"
        "  (DataFrame time / SparkRunner time; higher is better)",
        f"  {python}: {python_s:8.3f} s  (Spark's {what} {speedup:.2f}x faster)",
    ]
