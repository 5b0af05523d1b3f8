"""What the files sink costs under exactly-once, A/B against another checkout (issue 36).

    .venv/bin/python benchmarks/files_sink_cost.py [--lines 1000000] [--interval-ms 100] [--repeat 5]
    .venv/bin/python benchmarks/files_sink_cost.py --baseline /tmp/base   # A/B: runs alternate

Each run is a fresh process: ``sources.items(range(lines))`` -> ``map(str)`` -> ``sinks.files``
(2 instances) with ``JobConfig("exactly_once", snapshot_interval_ms=...)``, and the same job
without a guarantee; it prints the wall time, the process's CPU time and the snapshots taken.
With ``--baseline DIR`` (a checkout compiled in place, e.g. a ``git worktree`` of the commit
before, built with ``setup.py build_ext --inplace``) the runs alternate between its engine and
this one's; the medians are printed side by side.
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
import json, os, sys, tempfile, time
from jetbench import ExecutionService, Pipeline, sinks, sources
from jetbench.core.job_config import JobConfig
lines, interval, guarantee = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
out = tempfile.mkdtemp(prefix="files-sink-cost-")
p = Pipeline()
p.read_from(sources.items(range(lines))).set_local_parallelism(1).map(str).write_to(sinks.files(out)) \
    .set_local_parallelism(2)
config = None if guarantee == "none" else JobConfig(guarantee, snapshot_interval_ms=interval,
                                                  snapshot_store=os.path.join(out, ".store.sqlite"))
wall, cpu = time.perf_counter(), time.process_time()
job = ExecutionService(cooperative_threads=2).submit(p.to_dag(), name="files-sink-cost", config=config)
job.join(600)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
written = sum(open(os.path.join(out, n)).read().count("\n") for n in os.listdir(out) if n.startswith("part-"))
assert written == lines, (written, lines)
import jetbench
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "snapshots": len(getattr(job, "snapshot_history", ())),
                  "engine": os.path.dirname(os.path.dirname(jetbench.__file__)),
                  "files": sum(1 for n in os.listdir(out) if n.startswith("part-"))}))
"""


def _run(root: Path, lines: int, interval: int, guarantee: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(root), "JETBENCH_PROGRESS": "0"}
    # cwd "/": with -c the working directory comes first on sys.path, before PYTHONPATH's checkout
    done = subprocess.run([sys.executable, "-c", _CHILD, str(lines), str(interval), guarantee], env=env, cwd="/",
                          capture_output=True, text=True, timeout=900, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--interval-ms", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", default="", help="another checkout to compare with (runs alternate)")
    args = parser.parse_args()
    roots = {"this": HERE} | ({"baseline": Path(args.baseline)} if args.baseline else {})
    runs: dict[tuple[str, str], list[dict[str, float]]] = {}
    for _ in range(args.repeat):
        for guarantee in ("none", "exactly_once"):
            for name, root in roots.items():
                runs.setdefault((name, guarantee), []).append(_run(root, args.lines, args.interval_ms, guarantee))
    print(f"load {os.getloadavg()[0]:.2f}; {args.lines:,} lines, snapshots every {args.interval_ms} ms, "
          f"medians of {args.repeat}")
    print(f"{'engine':<10} {'guarantee':<13} {'wall s':>7} {'cpu s':>7} {'snapshots':>9} {'files':>6}")
    for (name, guarantee), rs in runs.items():
        assert all(r["engine"] == str(roots[name]) for r in rs), (name, {r["engine"] for r in rs})
        med = {k: statistics.median(r[k] for r in rs) for k in rs[0] if k != "engine"}
        print(f"{name:<10} {guarantee:<13} {med['wall_s']:7.3f} {med['cpu_s']:7.3f} {med['snapshots']:9.0f} "
              f"{med['files']:6.0f}")


if __name__ == "__main__":
    main()
