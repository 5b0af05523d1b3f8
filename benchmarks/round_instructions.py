"""Instructions per round of the idle-CPU job (`jetbench.experiments.idle_job`), counted by callgrind:
the load-independent companion of `round_cost.py`.

    .venv/bin/python benchmarks/round_instructions.py [--rates 1000 250000] [--baseline /tmp/base] [--trace]

The job's 10 tasklets are called round by round on a `MockClock` advanced 1 ms a round, so each
round carries exactly rate/1000 items whatever the host does. Each side runs under
``valgrind --tool=callgrind`` twice, with ``--rounds`` and with ``--rounds`` + ``--more`` rounds
(``PYTHONHASHSEED=0``); the difference divided by ``--more`` is the count per round, set-up and
imports cancelled. Counts move by a few per cent between runs (the garbage collector's timing):
compare differences well above that.

With ``--trace`` this checkout is also counted with its worker tracing (`jetbench.core.trace`: every
call recorded into a ring of ``--trace-capacity`` events, full and dropping its oldest after the
first rounds, as a long traced run is), and the ratio traced / untraced is printed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def run_rounds(rate: float, rounds: int, trace_capacity: int = 0) -> None:
    """``rounds`` rounds of the job at ``rate`` items/s on a mock clock, after 50 to warm up."""
    from jetbench import sources
    from jetbench.core.clock import MockClock
    from jetbench.core.idle import IdleConfig
    from jetbench.core.job import Job
    from jetbench.core.plan import build_plan
    try:
        from jetbench.core.worker import Worker
    except ModuleNotFoundError:  # a --baseline checkout from before the worker loop had its module (e090fca)
        from jetbench.core.execution import _Worker as Worker  # type: ignore[attr-defined,no-redef]
    from jetbench.experiments.idle_job import idle_job

    clock = MockClock()
    tasklets = list(build_plan(idle_job(sources.generator(rate)), 1, 1024, None, clock).tasklets)
    worker = Worker(0, Job("round-instructions"), IdleConfig(1000, 1000), 10**9, "round-instructions")
    if trace_capacity:
        worker.start_trace(trace_capacity)
    # as the worker's round loop picks it (traced only when recording)
    call = worker._call if getattr(worker, "trace_events", None) is None else worker._traced_call
    fresh = hasattr(worker, "_last_ns")  # cleared before each round, as the worker's round loop does
    for _ in range(50 + rounds):
        clock.advance(0.001)
        if fresh:
            worker._last_ns = 0
        for t in tasklets:
            call(t)
    for t in tasklets:
        t.abort()


def count(checkout: Path, rate: float, rounds: int, trace_capacity: int = 0) -> int:
    """Instructions callgrind counts for a whole child run of ``rounds`` rounds in ``checkout``."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory() as tmp:
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/out", sys.executable, __file__,
                "--child", "--rates", str(rate), "--rounds", str(rounds)]
        if trace_capacity:
            argv += ["--trace", "--trace-capacity", str(trace_capacity)]
        out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True, cwd=checkout)
    match = re.search(r"Collected : (\d+)", out.stderr)
    if match is None:
        raise SystemExit(f"no callgrind total in: {out.stderr[-500:]}")
    return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", type=float, nargs="+", default=[1000, 250_000])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--more", type=int, default=1000, help="rounds added in the second run")
    parser.add_argument("--baseline", type=Path, help="another checkout to count too")
    parser.add_argument("--trace", action="store_true", help="count this checkout tracing too")
    parser.add_argument("--trace-capacity", type=int, default=1000, help="events per worker of the trace ring")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_rounds(args.rates[0], args.rounds, args.trace_capacity if args.trace else 0)
        return
    sides = {"this": (HERE, 0)} if args.baseline is None else {"baseline": (args.baseline.resolve(), 0), "this": (HERE, 0)}
    if args.trace:
        sides["traced"] = (HERE, args.trace_capacity)
    print(f"instructions per round (callgrind, {args.rounds}+{args.more} rounds, mock clock)")
    for rate in args.rates:
        per = {side: (count(c, rate, args.rounds + args.more, cap) - count(c, rate, args.rounds, cap)) / args.more
               for side, (c, cap) in sides.items()}
        line = "   ".join(f"{side} {n:11,.0f}" for side, n in per.items())
        if "baseline" in per:
            line += f"   ratio {per['baseline'] / per['this']:.3f}"
        if "traced" in per:
            line += f"   traced/this {per['traced'] / per['this']:.3f}"
        print(f"  {rate:>11,.0f} items/s: {line}")


if __name__ == "__main__":
    main()
