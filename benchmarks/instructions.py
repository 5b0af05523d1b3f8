"""Instructions per item of `jetbench bench wordcount` and `chain`, counted by callgrind: a figure
the shared host's load does not move (the same binary on the same input counts the same), for
A/B comparisons of the engine's hot path that wall-clock ratios under load 2-6 cannot resolve.

    .venv/bin/python benchmarks/instructions.py                       # this checkout
    .venv/bin/python benchmarks/instructions.py --baseline /tmp/base  # and another, A/B
    .venv/bin/python benchmarks/instructions.py --breakdown --workloads chain  # where they go

Each workload runs once per process under ``valgrind --tool=callgrind`` at two sizes; the
difference of the two counts over the difference of the sizes is the cost per item (per line for
the word count), free of the start-up (imports, planning, threads) that both sizes pay alike.
The word count reads its corpus from a file written once (``jetbench.datasets.corpus``), so the
corpus generator is not counted. Beside each engine workload the idiomatic loop of the same
``jetbench bench`` (`jetbench.bench.wordcount.idiomatic_loop`, `jetbench.bench.chain.idiomatic_loop`)
is counted the same way; ``ratio`` is loop / engine instructions, the instruction-count
analogue of the bench's items/s ratio (above 1: fewer instructions than the loop).
Instructions are not time (a C-level loop retires more instructions per ns than the
interpreter), so the ratio is a proxy to compare builds, not the bench's figure.

``--breakdown`` says where an engine workload's extra instructions go: it keeps callgrind's
profiles, reads each one's instructions per function (``callgrind_annotate --inclusive=no``),
takes the same per-item difference of the two sizes for every function, and prints the
functions whose cost per item differs most between the engine workload and its loop.
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
WORKLOADS = ("wordcount", "wordcount-pipeline", "wordcount-loop", "chain", "chain-fused", "chain-loop")
#: items (chain) or lines (word count) at the two sizes of a workload
SIZES = {"wordcount": (20_000, 60_000), "chain": (200_000, 600_000)}


def run_workload(name: str, n: int, corpus_file: Path) -> None:
    """One run of workload ``name`` at size ``n`` in this process (what callgrind counts)."""
    from jetbench.core import ExecutionService

    if name.startswith("wordcount"):
        from jetbench.bench.wordcount import idiomatic_loop as wordcount_loop
        from jetbench.wordcount import wordcount_dag, wordcount_pipeline

        lines = corpus_file.read_text().splitlines()[:n]
        if name == "wordcount-loop":
            wordcount_loop(lines)
            return
        job = wordcount_dag(lines) if name == "wordcount" else wordcount_pipeline(lines)
    else:
        from jetbench.bench.chain import chain_dag, chain_pipeline
        from jetbench.bench.chain import idiomatic_loop as chain_loop

        if name == "chain-loop":
            chain_loop(n)
            return
        job = chain_dag(n) if name == "chain" else chain_pipeline(n).to_dag()
    ExecutionService(cooperative_threads=1).run(job)


def count(checkout: Path, name: str, n: int, corpus_file: Path, profile: Path | None = None) -> int:
    """Instructions of one process running ``name`` at size ``n`` with ``checkout``'s jetbench
    (callgrind's profile kept in ``profile`` if given)."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={profile or '/dev/null'}", sys.executable,
            __file__, "--run", name, str(n), str(corpus_file)]
    done = subprocess.run(argv, env=env, cwd=checkout, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count from callgrind:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def per_item(checkout: Path, name: str, corpus_file: Path) -> float:
    n1, n2 = SIZES["wordcount" if name.startswith("wordcount") else "chain"]
    return (count(checkout, name, n2, corpus_file) - count(checkout, name, n1, corpus_file)) / (n2 - n1)


#: a count in ``callgrind_annotate``'s columns: digits with commas, or "." for none
_COUNT = re.compile(r"[\d,]+|\.")


def function_events(annotated: str) -> dict[str, dict[str, int]]:
    """Each function's counts of every event in ``callgrind_annotate --inclusive=no`` output (the
    events its ``... file:function`` header names): keyed by source file name (no directories)
    and function, the counts of a function's recursion levels (``'2``, ``'3``) added together;
    the program's totals and the calls (``=> ...``) of an annotated source left out."""
    names: list[str] = []
    found: dict[str, dict[str, int]] = {}
    for line in annotated.splitlines():
        if line.rstrip().endswith("file:function"):
            names = line.split()[:-1]
            continue
        parts = re.sub(r"\(\s*[\d.]+%\)", "", line).split()  # the counts' shares left out
        if not names or len(parts) <= len(names) or not all(map(_COUNT.fullmatch, parts[:len(names)])):
            continue  # not a function's line
        where = " ".join(parts[len(names):])
        if "PROGRAM TOTALS" in where or where.startswith("=>"):
            continue
        name = re.sub(r"'\d+$", "", where.split(" [", 1)[0].rsplit("/", 1)[-1])
        counts = found.setdefault(name, dict.fromkeys(names, 0))
        for event, part in zip(names, parts, strict=False):
            counts[event] += 0 if part == "." else int(part.replace(",", ""))
    return found


def function_costs(annotated: str) -> dict[str, int]:
    """Instructions (``Ir``) per function of `function_events`."""
    return {name: counts.get("Ir", 0) for name, counts in function_events(annotated).items()}


def per_item_costs(checkout: Path, name: str, corpus_file: Path, tmp: Path) -> dict[str, float]:
    """Instructions per item of each function in workload ``name``: the difference between its
    two sizes' profiles over the difference of the sizes, as `per_item` does for the total."""
    n1, n2 = SIZES["wordcount" if name.startswith("wordcount") else "chain"]
    costs = []
    for n in (n1, n2):
        profile = tmp / f"{name}-{n}.callgrind"
        count(checkout, name, n, corpus_file, profile)
        done = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no", str(profile)],
                              capture_output=True, text=True, check=True)
        costs.append(function_costs(done.stdout))
    small, large = costs
    return {f: (large.get(f, 0) - small.get(f, 0)) / (n2 - n1) for f in small.keys() | large.keys()}


def breakdown(engine: dict[str, float], loop: dict[str, float], rows: int = 25) -> list[str]:
    """The lines of the table: the ``rows`` functions costing the engine most per item above
    the loop, then those costing it most below (negative: the loop pays them)."""
    diffs = sorted(((engine.get(f, 0.0) - loop.get(f, 0.0), f) for f in engine.keys() | loop.keys()), reverse=True)
    lines = [f"{'engine-loop':>12} {'engine':>9} {'loop':>9}  instructions per item, by function",
             f"{sum(engine.values()) - sum(loop.values()):12.1f} {sum(engine.values()):9.1f} "
             f"{sum(loop.values()):9.1f}  (all)"]
    shown = diffs[:rows] + [d for d in diffs[-rows // 2:] if d[0] < 0 and d not in diffs[:rows]]
    for diff, f in shown:
        if abs(diff) >= 0.5:
            lines.append(f"{diff:12.1f} {engine.get(f, 0.0):9.1f} {loop.get(f, 0.0):9.1f}  {f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, help="another checkout to count too")
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--breakdown", action="store_true",
                        help="instead of the totals: where each engine workload's extra instructions go, "
                             "function by function, against its loop (this checkout only)")
    parser.add_argument("--run", nargs=3, metavar=("WORKLOAD", "N", "CORPUS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        run_workload(args.run[0], int(args.run[1]), Path(args.run[2]))
        return
    if args.breakdown:
        with tempfile.TemporaryDirectory() as tmp:
            corpus_file = Path(tmp, "corpus.txt")
            from jetbench.datasets import corpus

            corpus_file.write_text("\n".join(corpus(max(SIZES["wordcount"]))) + "\n")
            loops: dict[str, dict[str, float]] = {}
            for name in args.workloads:
                if name.endswith("-loop"):
                    continue
                loop = "wordcount-loop" if name.startswith("wordcount") else "chain-loop"
                if loop not in loops:
                    loops[loop] = per_item_costs(HERE, loop, corpus_file, Path(tmp))
                print(f"\n{name} against {loop}")
                print("\n".join(breakdown(per_item_costs(HERE, name, corpus_file, Path(tmp)), loops[loop])),
                      flush=True)
        return
    sides = {"this": HERE} if args.baseline is None else {"baseline": args.baseline.resolve(), "this": HERE}
    with tempfile.TemporaryDirectory() as tmp:
        corpus_file = Path(tmp, "corpus.txt")
        from jetbench.datasets import corpus

        corpus_file.write_text("\n".join(corpus(max(SIZES["wordcount"]))) + "\n")
        counts: dict[tuple[str, str], float] = {}
        for name in args.workloads:
            for side, checkout in sides.items():
                counts[side, name] = per_item(checkout, name, corpus_file)
                print(f"{name:20s} {side:8s} {counts[side, name]:10.1f} instructions per item", flush=True)
    print()
    for side in sides:
        for engine, loop in (("wordcount", "wordcount-loop"), ("wordcount-pipeline", "wordcount-loop"),
                             ("chain", "chain-loop"), ("chain-fused", "chain-loop")):
            if (side, engine) in counts and (side, loop) in counts:
                print(f"{side:8s} {engine:20s} loop/engine {counts[side, loop] / counts[side, engine]:.3f}")
    if args.baseline is not None:
        for name in args.workloads:
            print(f"{name:20s} baseline/this {counts['baseline', name] / counts['this', name]:.3f}")


if __name__ == "__main__":
    main()
