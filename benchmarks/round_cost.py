"""CPU cost of one round of the idle-CPU job (`jetbench.experiments.idle_job`): its 10 tasklets
called once each, in this thread, on 1 ms ticks (spin-waited, so no sleep and no thread switch
blurs the figure).

    .venv/bin/python benchmarks/round_cost.py [--rates 1000 250000] [--repeat 5]
    .venv/bin/python benchmarks/round_cost.py --baseline /tmp/base   # A/B against another checkout
    .venv/bin/python benchmarks/round_cost.py --pure-vs-compiled      # this checkout's two builds
    .venv/bin/python benchmarks/round_cost.py --trace                 # and this checkout tracing

At 1,000 items/s a round carries one item (the engine's fixed cost per tasklet call); at
250,000 items/s it carries 250 (the per-item cost). With ``--baseline DIR`` (a checkout, e.g.
``git worktree add /tmp/base HEAD~1``) each repeat runs that checkout's engine in a subprocess
and then this one's, interleaved, and the ratio baseline / this is printed: above 1, this
checkout's rounds are cheaper. With ``--pure-vs-compiled`` the two sides are this checkout's
engine interpreted (``JETBENCH_PURE_PYTHON=1``) and compiled with mypyc (``scripts/setup.sh``
builds it; `jetbench.core.compiled`), and the ratio is pure / compiled. With ``--trace`` a side
"traced" is added, this checkout with its worker recording every call (`jetbench.core.trace`, a
ring of ``--trace-capacity`` events), and the ratio traced / this.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def round_cost_us(rate: float, seconds: float, trace_capacity: int = 0) -> float:
    """Mean thread CPU per round, in microseconds, over ``seconds`` of 1 ms ticks."""
    from jetbench import sources
    try:
        from jetbench.core.worker import Worker
    except ModuleNotFoundError:  # a --baseline checkout from before the worker loop had its module
        from jetbench.core.execution import _Worker as Worker  # type: ignore[attr-defined,no-redef]
    from jetbench.core.idle import IdleConfig
    from jetbench.core.job import Job

    try:
        from jetbench.experiments.idle_job import idle_job
    except ModuleNotFoundError:  # a --baseline checkout from before the module's rename
        from jetbench.experiments.job import idle_job  # type: ignore[import-not-found,no-redef]

    job = Job("round-cost")
    dag = idle_job(sources.generator(rate))
    try:
        from jetbench.core.plan import build_plan
    except ImportError:  # a --baseline checkout whose planner still wrote the tasklets into the job
        from jetbench.core.plan import build_tasklets  # type: ignore[attr-defined]

        tasklets = build_tasklets(dag, job, 1, 1024, None)
    else:
        tasklets = list(build_plan(dag, 1, 1024).tasklets)
    worker = Worker(0, job, IdleConfig(1000, 1000), 10**9, "round-cost")
    if trace_capacity:
        worker.start_trace(trace_capacity)
    # as the worker's round loop picks it (traced only when recording)
    call = worker._call if getattr(worker, "trace_events", None) is None else worker._traced_call
    # as the worker's round loop does before each round (a checkout without it times every call alone)
    fresh = hasattr(worker, "_last_ns")
    tick = time.perf_counter()
    end = tick + seconds
    cpu = 0.0
    rounds = 0
    while tick < end:
        tick += 0.001
        while time.perf_counter() < tick:
            pass
        c0 = time.thread_time()
        if fresh:
            worker._last_ns = 0
        for t in tasklets:
            call(t)
        cpu += time.thread_time() - c0
        rounds += 1
    for t in tasklets:
        t.abort()
    return cpu / rounds * 1e6


#: the environment of each side of ``--pure-vs-compiled``
BUILD_ENV = {"pure": {"JETBENCH_PURE_PYTHON": "1"}, "compiled": {"JETBENCH_PURE_PYTHON": "0"}}


def build_of(checkout: Path, extra_env: dict[str, str]) -> str:
    """Which build of the engine a fresh interpreter loads from ``checkout`` with ``extra_env``."""
    code = "from jetbench.core.compiled import build_info; print(build_info().describe())"
    env = {**os.environ, "PYTHONPATH": str(checkout), **extra_env}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                          cwd=checkout).stdout.strip()


def measure_in(checkout: Path, rates: list[float], seconds: float,
               extra_env: dict[str, str] | None = None, trace_capacity: int = 0) -> dict[float, float]:
    """Run `round_cost_us` for each rate in a fresh interpreter importing ``checkout``'s jetbench."""
    env = {**os.environ, "PYTHONPATH": str(checkout), **(extra_env or {})}
    argv = [sys.executable, __file__, "--child", "--seconds", str(seconds), "--rates", *map(str, rates)]
    if trace_capacity:
        argv += ["--trace", "--trace-capacity", str(trace_capacity)]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True, cwd=checkout)
    return dict(zip(rates, json.loads(out.stdout), strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", type=float, nargs="+", default=[1000, 250_000])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="another checkout to compare with, interleaved")
    parser.add_argument("--pure-vs-compiled", action="store_true",
                        help="compare this checkout's engine interpreted with it compiled, interleaved")
    parser.add_argument("--trace", action="store_true", help="add this checkout tracing, interleaved")
    parser.add_argument("--trace-capacity", type=int, default=1000, help="events per worker of the trace ring")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:  # one side of the comparison: a JSON list of costs, one per rate
        import jetbench

        assert Path(jetbench.__file__).is_relative_to(Path.cwd()), jetbench.__file__
        cap = args.trace_capacity if args.trace else 0
        print(json.dumps([round_cost_us(rate, args.seconds, cap) for rate in args.rates]))
        return
    envs: dict[str, dict[str, str]] = {}
    if args.pure_vs_compiled:
        sides = {"pure": HERE, "compiled": HERE}
        envs = BUILD_ENV
        for side in sides:
            print(f"{side}: {build_of(HERE, envs[side])}")
    elif args.baseline is None:
        sides = {"this": HERE}
    else:
        sides = {"baseline": args.baseline.resolve(), "this": HERE}
    traces = {side: 0 for side in sides}
    if args.trace and not args.pure_vs_compiled:
        sides["traced"] = HERE
        traces["traced"] = args.trace_capacity
    runs: dict[str, list[dict[float, float]]] = {side: [] for side in sides}
    for _ in range(args.repeat):
        for side, checkout in sides.items():
            runs[side].append(measure_in(checkout, args.rates, args.seconds, envs.get(side), traces[side]))
    print(f"round cost, thread CPU per round in us (median of {args.repeat}, 1 ms ticks)")
    for rate in args.rates:
        medians = {side: statistics.median(r[rate] for r in rs) for side, rs in runs.items()}
        line = "   ".join(f"{side} {us:7.1f}" for side, us in medians.items())
        if "baseline" in medians:
            line += f"   ratio {medians['baseline'] / medians['this']:.2f}"
        if "pure" in medians:
            line += f"   ratio {medians['pure'] / medians['compiled']:.2f}"
        if "traced" in medians:
            line += f"   traced/this {medians['traced'] / medians['this']:.2f}"
        print(f"  {rate:>11,.0f} items/s: {line}")


if __name__ == "__main__":
    main()
