"""What one non-cooperative vertex costs a slow stream: latency through it and CPU while it waits.

    .venv/bin/python benchmarks/blocking_hop.py [--rates 100 1000] [--seconds 5] [--repeat 3]
    .venv/bin/python benchmarks/blocking_hop.py --baseline /tmp/base   # A/B against another checkout

The job: a timestamped generator at ``rate`` items/s -> ``map_using_service`` (a non-cooperative
vertex: a thread of its own) -> the latency sink, which records ``now - ts`` per item. Each point
runs in a fresh process and prints the latency's p50 and p99 (ms), the process CPU (% of a
core) and how often the dedicated thread went to sleep (parks/s). By default the two ways a
dedicated thread can wait are compared in this checkout (``ExecutionService(noncooperative_idle=
"backoff" | "timer")``); with ``--baseline DIR`` this checkout's default runs against that
checkout's, interleaved. Medians over ``--repeat``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

POINT = """
import json, sys, time
from jetbench import sinks, sources
from jetbench.core import ExecutionService
from jetbench.pipeline import Pipeline

rate, seconds, mode = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
kwargs = {} if mode == "default" else {"noncooperative_idle": mode}
service = ExecutionService(**kwargs)
p = Pipeline()
(p.read_from(sources.generator(rate, count=int(rate * seconds)))
  .map_using_service(lambda: None, lambda service, x: x, name="blocking-map")
  .write_to(sinks.latency()))
cpu0, wall0 = time.process_time(), time.perf_counter()
job = service.submit(p)
result = job.join(timeout=seconds * 4 + 30)
cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
blocking = [w for w in job.workers if w.kind == "blocking"]
parks = sum(w.idler.parks for w in blocking)
print(json.dumps({"p50_ms": result["p50_ms"], "p99_ms": result["p99_ms"], "count": result["count"],
                  "cpu_percent": 100 * cpu / wall, "parks_per_s": parks / wall}))
"""


def run_point(checkout: Path, rate: float, seconds: float, mode: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    out = subprocess.run([sys.executable, "-c", POINT, str(rate), str(seconds), mode], env=env, cwd=checkout,
                         capture_output=True, text=True, check=True, timeout=seconds * 4 + 60)
    row: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", type=float, nargs="+", default=[100, 1000])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="another checkout to compare with, interleaved")
    args = parser.parse_args()
    if args.baseline is None:
        sides = {"backoff": (HERE, "backoff"), "timer": (HERE, "timer")}
    else:
        sides = {"baseline": (args.baseline.resolve(), "default"), "this": (HERE, "default")}
    for rate in args.rates:
        rows: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
        for _ in range(args.repeat):
            for name, (checkout, mode) in sides.items():
                rows[name].append(run_point(checkout, rate, args.seconds, mode))
        for name, runs in rows.items():
            med = {k: statistics.median(r[k] for r in runs) for k in ("p50_ms", "p99_ms", "cpu_percent", "parks_per_s")}
            print(f"rate {rate:>8g}/s  {name:8s}  p50 {med['p50_ms']:6.2f} ms  p99 {med['p99_ms']:6.2f} ms  "
                  f"cpu {med['cpu_percent']:5.2f} %  parks {med['parks_per_s']:7.0f}/s  "
                  f"(items {int(runs[0]['count'])})", flush=True)


if __name__ == "__main__":
    main()
