"""The idle-CPU sweep: every (rate, floor, strategy) point in a fresh subprocess."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from ..core.errors import JetbenchError
from ..core.idle import IDLE_STRATEGIES
from .point import SOURCES

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_RATES = (1_000, 10_000, 50_000, 250_000, 500_000, 1_000_000)
DEFAULT_FLOORS = (25, 1000)
DEFAULT_STRATEGIES = ("backoff", "timer")
class SweepSettings(TypedDict):
    rates: tuple[float, ...]
    min_idle_us: tuple[float, ...]
    seconds: float
    warmup: float


#: The quick sweep (``jetbench idle-experiment --quick``, CI).
QUICK: SweepSettings = {"rates": (1_000, 250_000), "min_idle_us": (25, 1000), "seconds": 1.0, "warmup": 0.5}


def default_out_dir() -> Path:
    return Path(os.environ.get("JETBENCH_CACHE", Path.home() / ".cache" / "jetbench")) / "experiments"


def sweep_points(rates: Iterable[float], min_idle_us: Iterable[float], strategies: Iterable[str],
                 seconds: float, warmup: float, source: str = "generator", bare_sleep: bool = True,
                 max_idle_us: float | None = None) -> list[dict[str, Any]]:
    """The parameter sets of a sweep: the job points, then a bare-sleep row per floor."""
    floors = list(min_idle_us)
    points = [
        {"rate": r, "min_idle_us": f, "strategy": s, "seconds": seconds, "warmup": warmup, "source": source,
         "max_idle_us": max_idle_us}
        for r, f, s in itertools.product(rates, floors, strategies)
    ]
    if bare_sleep:
        points += [{"rate": 0, "min_idle_us": f, "strategy": "bare-sleep", "seconds": seconds, "warmup": 0.0}
                   for f in floors]
    return points


def run_in_subprocess(params: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
    """Run one point via ``python -m jetbench.experiments`` and return its row. The default
    timeout allows for a Spark source's JVM start (seconds, more on a loaded machine)."""
    if timeout is None:
        startup = 180 if params.get("source") == "spark" else 60
        timeout = startup + 3 * (params.get("seconds", 10) + params.get("warmup", 2))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "jetbench.experiments", json.dumps(params)],
            capture_output=True, text=True, timeout=timeout, check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise JetbenchError(f"sweep point {params} did not finish within {timeout:.0f} s; "
                            f"its last output:\n{(exc.stderr or b'')[-2000:]!r}") from None
    if done.returncode != 0:
        raise JetbenchError(f"sweep point {params} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _listed(values: Any) -> Any:
    """A list of an iterable's values (read once), anything else as it is, for checking."""
    if isinstance(values, Iterable) and not isinstance(values, str | bytes):
        return list(values)
    return values


def check_sweep_args(rates: Sequence[float], min_idle_us: Sequence[float], seconds: float, warmup: float,
                     source: str, strategies: Sequence[str], max_idle_us: float | None, repeats: int) -> None:
    """Raise `JetbenchError` naming the first bad argument, before any point starts.

    >>> check_sweep_args([1000], [25], 1.0, 0.5, "generator", ["timer"], None, 1)
    >>> check_sweep_args([1000, -5], [25], 1.0, 0.5, "generator", ["timer"], None, 1)
    Traceback (most recent call last):
    ...
    jetbench.core.errors.JetbenchError: idle_sweep: rates must be numbers > 0, got -5
    """
    def number(value: object) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool) and value == value

    for name, values, low, strict in (("rates", rates, 0, True), ("min_idle_us", min_idle_us, 0, False)):
        if not isinstance(values, list | tuple | range) or not values:
            raise JetbenchError(f"idle_sweep: {name} must be a non-empty sequence of numbers, got {values!r}")
        for v in values:
            if not number(v) or (v <= low if strict else v < low):
                raise JetbenchError(f"idle_sweep: {name} must be numbers {'>' if strict else '>='} {low}, got {v!r}")
    if not number(seconds) or seconds <= 0:
        raise JetbenchError(f"idle_sweep: seconds must be a number > 0, got {seconds!r}")
    if not number(warmup) or warmup < 0:
        raise JetbenchError(f"idle_sweep: warmup must be a number >= 0, got {warmup!r}")
    if source not in SOURCES:
        raise JetbenchError(f"idle_sweep: source must be one of {list(SOURCES)}, got {source!r}")
    if not isinstance(strategies, list | tuple) or not strategies or any(s not in IDLE_STRATEGIES for s in strategies):
        raise JetbenchError(
            f"idle_sweep: strategies must be a non-empty list drawn from {sorted(IDLE_STRATEGIES)}, got {strategies!r}")
    if max_idle_us is not None and (not number(max_idle_us) or max_idle_us < 0):
        raise JetbenchError(f"idle_sweep: max_idle_us must be None or a number >= 0, got {max_idle_us!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise JetbenchError(f"idle_sweep: repeats must be an int >= 1, got {repeats!r}")


def idle_sweep(
    rates: Sequence[float] = DEFAULT_RATES,
    min_idle_us: Sequence[float] = DEFAULT_FLOORS,
    seconds: float = 10.0,
    warmup: float = 2.0,
    source: str = "generator",
    strategies: Sequence[str] = DEFAULT_STRATEGIES,
    max_idle_us: float | None = None,
    csv_path: str | Path | None = None,
    progress: bool = True,
    repeats: int = 1,
) -> pd.DataFrame:
    """Run the idle-CPU job (`idle_job`) at every rate x idle floor x strategy, each in a fresh
    subprocess, plus a bare-sleep row per floor; return a DataFrame (also written to
    ``csv_path``, by default ``~/.cache/jetbench/experiments/idle_sweep.csv``).

    ``repeats`` > 1 runs the whole set of points that many times, one full pass after another
    (so a noisy spell on the machine spreads over every configuration instead of spoiling one);
    rows carry a ``repeat`` number and `summarize` takes their medians.

    Columns include ``rate``, ``min_idle_us``, ``strategy``, ``cpu_percent`` (process, % of one
    core), ``worker_cpu_percent``, ``achieved_rate``, ``kept_up``, ``latency_p50_ms``,
    ``latency_p99_ms``, ``latency_max_ms`` (due time -> the probe map, oldest item per batch),
    ``wakeups_per_s``.
    """
    import pandas as pd

    rates, min_idle_us, strategies = (_listed(v) for v in (rates, min_idle_us, strategies))
    check_sweep_args(rates, min_idle_us, seconds, warmup, source, strategies, max_idle_us, repeats)
    points = sweep_points(rates, min_idle_us, strategies, seconds, warmup, source, max_idle_us=max_idle_us)
    if source == "spark":
        from .spark_source import prepare_spark_dataset

        for rate in rates:  # made by Spark here, outside every point: the points only read it
            prepare_spark_dataset(rate * (seconds + warmup))
    rows = []
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(points) * repeats, desc="idle sweep", unit="point", file=sys.stderr)
    try:
        for repeat, params in itertools.product(range(repeats), points):
            if bar is not None:
                bar.set_postfix_str(f"{params['strategy']} {params['min_idle_us']}us {params['rate']:,}/s")
            rows.append({**run_in_subprocess(params), "repeat": repeat})
            if bar is not None:
                bar.update()
    finally:
        if bar is not None:
            bar.close()
    frame = pd.DataFrame(rows)
    path = Path(csv_path) if csv_path is not None else default_out_dir() / "idle_sweep.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    frame.attrs["csv_path"] = str(path)
    return frame
