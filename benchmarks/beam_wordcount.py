"""Beam's word count on JetbenchRunner against Beam's own FnApiRunner (issue 19).

    .venv/bin/python benchmarks/beam_wordcount.py [--lines 20000] [--repeat 3]

The same Beam pipeline (Create the lines, split, Count.PerElement) runs on FnApiRunner, on
JetbenchRunner with one cooperative thread and with two, repeats interleaved, median kept.
Each run checks its counts against a plain-Python Counter with Beam's assert_that (a wrong
count fails the run), so only correct runs are timed. Wall clock per whole pipeline run,
fusion and the harness's start included.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections import Counter

import apache_beam as beam
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that, equal_to

from jetbench.beam import JetbenchRunner

RUNNERS = {
    "FnApiRunner": FnApiRunner,
    "JetbenchRunner, 1 thread": lambda: JetbenchRunner(cooperative_threads=1),
    "JetbenchRunner, 2 threads": lambda: JetbenchRunner(cooperative_threads=2),
}


def corpus(lines: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(5000)]
    return [" ".join(rng.choice(vocabulary) for _ in range(10)) for _ in range(lines)]


def run_once(make_runner, text: list[str], expected: list[tuple[str, int]]) -> float:
    started = time.perf_counter()
    with beam.Pipeline(runner=make_runner()) as p:
        counts = p | beam.Create(text) | beam.FlatMap(str.split) | beam.combiners.Count.PerElement()
        assert_that(counts, equal_to(expected))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    text = corpus(args.lines)
    expected = list(Counter(word for line in text for word in line.split()).items())
    times: dict[str, list[float]] = {name: [] for name in RUNNERS}
    for _ in range(args.repeat):
        for name, make in RUNNERS.items():
            times[name].append(run_once(make, text, expected))
    words = sum(c for _, c in expected)
    base = statistics.median(times["FnApiRunner"])
    print(f"{args.lines} lines, {words} words, {len(expected)} distinct; median of {args.repeat}")
    for name, runs in times.items():
        median = statistics.median(runs)
        print(f"{name:26s} {median:6.2f} s  {words / median:9,.0f} words/s  FnApiRunner/this {base / median:4.2f}"
              f"  (runs {', '.join(f'{t:.2f}' for t in runs)})")


if __name__ == "__main__":
    main()
