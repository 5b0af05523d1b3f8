"""What one snapshot and one restart cost, A/B against another checkout (issue 16).

    .venv/bin/python benchmarks/snapshot_cost.py [--keys 100000] [--repeat 3]
    .venv/bin/python benchmarks/snapshot_cost.py --baseline /tmp/base   # A/B against another checkout

Each run is a fresh process: `jetbench.bench.snapshots.keyed_state` (a keyed count holding
``--keys`` keys: its snapshots' duration from request to commit, the restart after an injected
failure), then a small job (a generator at 50,000 items/s into a count of 1,000 keys,
snapshots every 100 ms: the median duration of its snapshots). With ``--baseline DIR`` (a
checkout, e.g. ``git worktree add /tmp/base HEAD~3``, compiled with ``setup.py build_ext
--inplace`` to compare like with like) the runs alternate between that checkout's engine and
this one's; the baseline's engine runs this checkout's ``jetbench/bench/snapshots.py``, so a
checkout from before the benchmark existed can be measured.
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

_CHILD = r"""
import importlib.util, json, os, statistics, sys, tempfile
import jetbench.bench.common as common
if not hasattr(common, "load_average"):  # a baseline from before bench.common had it
    common.load_average = lambda: round(os.getloadavg()[0], 2)
spec = importlib.util.spec_from_file_location("jetbench.bench.snapshots", sys.argv[1])
snapshots = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = snapshots
spec.loader.exec_module(snapshots)
from jetbench import DAG, Edge, ExecutionService
from jetbench.core.job_config import JobConfig
from jetbench.processors import aggregate_by_key, collect_sink, counting
from jetbench.processors.generator_source import generator_source

directory = tempfile.mkdtemp()
figures = snapshots.keyed_state(int(sys.argv[2]), 500, 3, os.path.join(directory, "keyed.sqlite"), 1, 200_000)

def key(x):
    return x % 1000

dag = DAG()
src = dag.new_vertex("src", generator_source(50_000, timestamped=False, count=100_000))
agg = dag.new_vertex("agg", aggregate_by_key(key, counting()), local_parallelism=1)
out = dag.new_vertex("out", collect_sink())
dag.edge(Edge.between(src, agg).partitioned(key)).edge(Edge.between(agg, out))
config = JobConfig(processing_guarantee="exactly_once", snapshot_interval_ms=100,
                   snapshot_store=os.path.join(directory, "small.sqlite"))
job = ExecutionService().submit(dag, config=config)
job.join()
figures["small_job_snapshot_ms"] = statistics.median(r.duration_s * 1000 for r in job.snapshot_history)
print(json.dumps(figures))
"""

FIGURES = ("snapshot_ms_median", "restart_ms", "small_job_snapshot_ms")


def run_once(checkout: Path, keys: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(HERE / "jetbench" / "bench" / "snapshots.py"), str(keys)],
                          env=env, cwd="/", capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"snapshot_cost: the run on {checkout} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="another checkout to run alternately with this one")
    args = parser.parse_args()
    sides = {"this": HERE} if args.baseline is None else {"baseline": args.baseline.resolve(), "this": HERE}
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    for _ in range(args.repeat):
        for side, checkout in sides.items():
            figures = run_once(checkout, args.keys)
            runs[side].append(figures)
            shown = ", ".join(f"{k} {figures[k]:.1f}" for k in FIGURES)
            print(f"{side}: {shown}  (load {os.getloadavg()[0]:.1f})", flush=True)
    for side, rs in runs.items():
        print(f"{side} medians: " + ", ".join(f"{k} {statistics.median(r[k] for r in rs):.1f}" for k in FIGURES))


if __name__ == "__main__":
    main()
