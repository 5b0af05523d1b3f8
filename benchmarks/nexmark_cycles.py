"""Nexmark queries by estimated cycles: callgrind with its cache and branch simulation, on the
engine's worker loop and on the plain-Python loop of the same query, over the same events.

    .venv/bin/python benchmarks/nexmark_cycles.py --queries 3 9 11
    .venv/bin/python benchmarks/nexmark_cycles.py --queries 3 --baseline /tmp/base   # A/B
    .venv/bin/python benchmarks/nexmark_cycles.py --queries 3 --functions 15        # where
    .venv/bin/python benchmarks/nexmark_cycles.py --queries 9 --generators 100      # split timelines

Instructions alone (`benchmarks/instructions.py`) missed why Q3 ran at 0.6-0.7 of the loop by
CPU time while it executed 0.94 of its instructions: the engine touched each event's memory
more often (copies of chunks, a pass for a batch's largest timestamp), and a touch that misses
the first-level cache costs many instructions' time. This counts those misses too and weighs
them as KCachegrind's cycle estimate does::

    estimated cycles = Ir + 10 x (I1 + D1 misses) + 100 x (last-level misses) + 10 x mispredicted branches

a figure the host's load does not move, for A/B comparisons where CPU-time ratios on this
shared 2-core host wander by ±0.15 between runs. It is a model (no second-level cache, a rough
price per miss), so the ratio it gives is a guide; `jetbench bench nexmark` gives the CPU time.

Each side runs in its own process under ``valgrind --tool=callgrind --instr-atstart=no``: the
events are generated uninstrumented (valgrind's slowest part otherwise), then the process turns
instrumentation on for itself (``callgrind_control -i on``) and runs the query once, with the
collector disabled, counting only the engine's worker loop (``Worker._main``) or the loop's
call (through ``operator.call``, so that its frame can be toggled by name).
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
sys.path.insert(0, str(HERE / "benchmarks"))  # its sibling script, also when loaded as a module
from instructions import function_events  # noqa: E402 - after its folder is on the path

ENGINE_ENTRY = "CPyDef_worker___Worker____main"  # the compiled worker loop (so: a compiled build)
LOOP_ENTRY = "_operator_call"
#: KCachegrind's weights: a first-level miss, a last-level miss, a mispredicted branch
WEIGHTS = {"L1": 10, "LL": 100, "B": 10}


def run_side(query: int, side: str, events: int, generators: int = 1) -> None:
    """One side (``engine`` or ``loop``) of ``query`` in this process: what callgrind counts."""
    import gc
    import operator
    import threading

    from jetbench.bench.nexmark import engine_job
    from jetbench.nexmark.config import NexmarkConfig
    from jetbench.nexmark.reference import REFERENCE
    from jetbench.nexmark.suite import generate_timed

    config = NexmarkConfig(num_events=events, num_event_generators=generators)
    pairs, _ = generate_timed(config)
    in_memory = [e for _, e in pairs]
    job = engine_job(query, pairs, config)
    gc.disable()
    subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], stdout=subprocess.DEVNULL, check=False)
    if side == "engine":
        job()
    else:  # on a thread, as the bench runs it
        thread = threading.Thread(target=lambda: operator.call(REFERENCE[query], in_memory, config))
        thread.start()
        thread.join()


def profile(checkout: Path, query: int, side: str, events: int, out: Path, generators: int = 1) -> dict[str, int]:
    """Callgrind's event totals of one side of ``query`` with ``checkout``'s jetbench (compiled:
    the engine side is counted from the compiled worker loop's entry)."""
    entry = LOOP_ENTRY if side == "loop" else ENGINE_ENTRY
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONHASHSEED": "0"}
    argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--cache-sim=yes", "--branch-sim=yes",
            "--collect-atstart=no", f"--toggle-collect={entry}", f"--callgrind-out-file={out}",
            sys.executable, __file__, "--run", str(query), side, str(events), str(generators)]
    done = subprocess.run(argv, env=env, cwd=checkout, capture_output=True, text=True)
    if done.returncode != 0 or not out.exists():
        raise SystemExit(f"callgrind failed on Q{query} {side}:\n{done.stderr[-2000:]}")
    return totals(out.read_text())


def totals(profile_text: str) -> dict[str, int]:
    """The ``events:`` names and the ``totals:`` (or ``summary:``) line of a callgrind profile."""
    names = re.search(r"^events: (.+)$", profile_text, re.M)
    found = re.search(r"^(?:totals|summary): (.+)$", profile_text, re.M)
    if names is None or found is None:
        raise SystemExit("no totals in the callgrind profile")
    return dict(zip(names.group(1).split(), map(int, found.group(1).split()), strict=False))


def estimated_cycles(t: dict[str, int]) -> float:
    """KCachegrind's cycle estimate of callgrind's totals ``t`` (see the module's documentation).

    >>> estimated_cycles({"Ir": 1000, "I1mr": 1, "D1mr": 2, "D1mw": 3, "ILmr": 0, "DLmr": 1, "DLmw": 0,
    ...                   "Bcm": 4, "Bim": 1})
    1210
    """
    l1 = t.get("I1mr", 0) + t.get("D1mr", 0) + t.get("D1mw", 0)
    ll = t.get("ILmr", 0) + t.get("DLmr", 0) + t.get("DLmw", 0)
    mispredicted = t.get("Bcm", 0) + t.get("Bim", 0)
    return t["Ir"] + WEIGHTS["L1"] * l1 + WEIGHTS["LL"] * ll + WEIGHTS["B"] * mispredicted


def functions(out: Path, rows: int) -> list[str]:
    """The ``rows`` functions of a profile with the most estimated cycles of their own."""
    done = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no", str(out)],
                          capture_output=True, text=True, check=True)
    found = sorted(((estimated_cycles(counts), name.rsplit(":", 1)[-1])
                    for name, counts in function_events(done.stdout).items()), reverse=True)
    return [f"{cycles / 1e6:10.2f} M  {name}" for cycles, name in found[:rows]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, nargs="+", default=[3, 9, 11])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--generators", type=int, default=1,
                        help="Beam's generators, each on its own timeline (default 1, as `jetbench bench nexmark`)")
    parser.add_argument("--baseline", type=Path, help="another checkout to count too (the engine side)")
    parser.add_argument("--functions", type=int, default=0, metavar="N",
                        help="also list the N functions with the most estimated cycles of the engine side")
    parser.add_argument("--run", nargs=4, metavar=("QUERY", "SIDE", "EVENTS", "GENERATORS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        run_side(int(args.run[0]), args.run[1], int(args.run[2]), int(args.run[3]))
        return
    for checkout in [HERE] + ([args.baseline.resolve()] if args.baseline else []):
        done = subprocess.run([sys.executable, "-c", "from jetbench.core.compiled import build_info; "
                               "print(build_info().kind)"], env={**os.environ, "PYTHONPATH": str(checkout)},
                              cwd=checkout, capture_output=True, text=True)
        if done.stdout.strip() != "compiled":
            raise SystemExit(f"{checkout}: the engine is not compiled there (scripts/setup.sh builds it); the "
                             "engine side is counted from the compiled worker loop")
    print(f"{'query':>5} {'side':>10} {'Ir (M)':>9} {'L1 miss':>9} {'LL miss':>9} {'mispred':>9} {'est (M)':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for q in args.queries:
            sides = [("loop", HERE), ("engine", HERE)] + ([("baseline", args.baseline.resolve())]
                                                          if args.baseline else [])
            est: dict[str, float] = {}
            for label, checkout in sides:
                out = Path(tmp, f"q{q}-{label}.callgrind")
                t = profile(checkout, q, "loop" if label == "loop" else "engine", args.events, out, args.generators)
                est[label] = estimated_cycles(t)
                l1 = t["I1mr"] + t["D1mr"] + t["D1mw"]
                ll = t["ILmr"] + t["DLmr"] + t["DLmw"]
                print(f"{'Q' + str(q):>5} {label:>10} {t['Ir'] / 1e6:9.1f} {l1 / 1e3:8.0f}k {ll / 1e3:8.0f}k "
                      f"{(t['Bcm'] + t['Bim']) / 1e3:8.0f}k {est[label] / 1e6:9.1f}", flush=True)
                if label == "engine" and args.functions:
                    print("\n".join(functions(out, args.functions)))
            line = f"{'Q' + str(q):>5} loop/engine {est['loop'] / est['engine']:.3f}"
            if "baseline" in est:
                line += f"  baseline/this {est['baseline'] / est['engine']:.3f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
