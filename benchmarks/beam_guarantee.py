"""What a processing guarantee costs a Beam pipeline on JetbenchRunner: the same word count with
no guarantee, at-least-once and exactly-once (snapshots every ``--interval-ms``, into a fresh
SQLite store per run), A/B/C in one run, interleaved (issue 19).

    .venv/bin/python benchmarks/beam_guarantee.py [--lines 20000] [--interval-ms 200] [--repeat 5]

Beam's word count (Create the lines, split, Count.PerElement) with two cooperative threads;
each run checks its counts with Beam's assert_that and reports how many snapshots it took.
Wall clock per whole pipeline run; median of the repeats.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections import Counter

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

# benchmarks/ is on sys.path when run as a script
from beam_combine import corpus

from jetbench.beam import JetbenchRunner

GUARANTEES = ("none", "at_least_once", "exactly_once")


def run_once(guarantee: str, text: list[str], expected: list[tuple[str, int]], interval_ms: int) -> tuple[float, int]:
    store = os.path.join(tempfile.mkdtemp(), "snapshots.sqlite")
    runner = JetbenchRunner(cooperative_threads=2, processing_guarantee=guarantee, snapshot_interval_ms=interval_ms,
                            snapshot_store=store)
    started = time.perf_counter()
    p = beam.Pipeline(runner=runner)
    counts = p | beam.Create(text) | beam.FlatMap(str.split) | beam.combiners.Count.PerElement()
    assert_that(counts, equal_to(expected))
    result = p.run()
    result.wait_until_finish()
    elapsed = time.perf_counter() - started
    job = result.job  # type: ignore[attr-defined]  # JetbenchRunner's result (Beam's type has no job)
    return elapsed, len(getattr(job, "snapshot_history", ()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--interval-ms", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    text = corpus(args.lines, 5000)
    expected = list(Counter(word for line in text for word in line.split()).items())
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    times: dict[str, list[float]] = {g: [] for g in GUARANTEES}
    snapshots: dict[str, list[int]] = {g: [] for g in GUARANTEES}
    for k in range(args.repeat):
        order = GUARANTEES[k % 3:] + GUARANTEES[:k % 3]  # each guarantee first in turn
        for guarantee in order:
            elapsed, taken = run_once(guarantee, text, expected, args.interval_ms)
            times[guarantee].append(elapsed)
            snapshots[guarantee].append(taken)
    base = statistics.median(times["none"])
    print(f"{args.lines} lines, {len(expected)} distinct words, snapshots every {args.interval_ms} ms, "
          f"median of {args.repeat}:")
    for guarantee in GUARANTEES:
        med = statistics.median(times[guarantee])
        print(f"  {guarantee:14s} {med:6.3f} s  (min {min(times[guarantee]):.3f}, max {max(times[guarantee]):.3f})  "
              f"snapshots {statistics.median(snapshots[guarantee]):.0f}  time / none {med / base:.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
