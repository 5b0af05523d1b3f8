"""A lifted Beam combine on JetbenchRunner: accumulators merged in the grouping vertex as they
arrive (the default) against merged by the merge step in the SDK harness (``merge_in_harness``),
A/B in one run (issue 19).

    .venv/bin/python benchmarks/beam_combine.py [--lines 20000] [--distinct 5000 50000] [--repeat 5]

For each vocabulary size: Beam's word count (Create the lines, split, Count.PerElement) on
JetbenchRunner with two cooperative threads, the two variants alternating, each run checked
against a plain-Python Counter with Beam's assert_that (a wrong count fails the run). Wall clock
per whole pipeline run, fusion and the harness's start included; median of the repeats.
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import statistics
from collections import Counter

# the word count, timed and checked (benchmarks/ is on sys.path when run as a script)
from beam_wordcount import run_once

from jetbench.beam import JetbenchRunner

VARIANTS = {
    "merged in the grouping": False,
    "merged in the harness": True,
}


def corpus(lines: int, distinct: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(distinct)]
    return [" ".join(rng.choice(vocabulary) for _ in range(10)) for _ in range(lines)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--distinct", type=int, nargs="+", default=[5_000, 50_000])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    for distinct in args.distinct:
        text = corpus(args.lines, distinct)
        expected = list(Counter(word for line in text for word in line.split()).items())
        times: dict[str, list[float]] = {name: [] for name in VARIANTS}
        for k in range(args.repeat):
            order = list(VARIANTS.items()) if k % 2 == 0 else list(reversed(VARIANTS.items()))
            for name, in_harness in order:
                runner = functools.partial(JetbenchRunner, cooperative_threads=args.threads,
                                           merge_in_harness=in_harness)
                times[name].append(run_once(runner, text, expected))
        base = statistics.median(times["merged in the harness"])
        print(f"{args.lines} lines, {len(expected)} distinct words, {args.threads} threads, "
              f"median of {args.repeat}:")
        for name, runs in times.items():
            med = statistics.median(runs)
            print(f"  {name:24s} {med:6.3f} s  (min {min(runs):.3f}, max {max(runs):.3f})  "
                  f"speed-up over the harness merge {base / med:.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
