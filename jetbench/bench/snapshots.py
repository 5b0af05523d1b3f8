"""What fault tolerance costs (issue 16): ``jetbench bench snapshots``.

Three measurements in one run, each in this process:

* **throughput**: the windowed word count (`windowed_wordcount`: lines stamped with their
  index as event time, words counted per tumbling window of ``WINDOW_LINES`` lines) and the
  chain job (`jetbench.bench.chain.chain_dag`), each run with no guarantee, at-least-once and
  exactly-once snapshots every ``interval_ms``, interleaved, ``repeat`` times; the median run of
  each is kept and the ratios are items/s with a guarantee over items/s without one;
* **snapshot of keyed state**: a keyed count (`keyed_state_dag`) holding ``keys`` keys, fed
  forever by a rate-limited generator; once every key is in the state, the next ``snapshots``
  periodic snapshots are timed by the coordinator (`SnapshotRecord.duration_s`: from its request
  to the store's commit) and their bytes in the store are read (`SnapshotRecord.sizes`);
* **restart**: in that job, a map vertex raises once (after a snapshot holding every key was
  stored); the restart time is from that raise to the first item the restored aggregation
  accumulates, i.e. the job planned again, its snapshot read from the store, every key restored
  into the aggregation and processing under way. The aggregation emits only when its input
  completes, which this job's never does, so "first output" is taken at the aggregation's input:
  its key function notes the first call in the new execution.

The figures are reported, never asserted: speed lives in ``benchmarks/README.md``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import sinks, sources, window
from ..core import DAG, Edge, ExecutionService
from ..core.errors import JetbenchError, JobCancelled
from ..core.job_config import AT_LEAST_ONCE, EXACTLY_ONCE, NONE, JobConfig
from ..core.snapshot import FaultTolerantJob
from ..datasets import corpus
from ..pipeline import Pipeline
from ..processors import aggregate_by_key, map_processor, noop_sink
from ..processors.aggregate_operation import counting
from ..processors.generator_source import generator_source
from ..wordcount import non_empty, tokenize
from .chain import chain_dag
from .common import ReportFormat, interleaved, load_average

GUARANTEES: tuple[str, ...] = (NONE.value, AT_LEAST_ONCE.value, EXACTLY_ONCE.value)
#: the default sizes: each run lasts 6-8 s on a quiet machine here, several snapshot intervals of 1 s
DEFAULT_LINES = 1_000_000
DEFAULT_ITEMS = 25_000_000
#: lines per tumbling window of the windowed word count (event time = the line's index)
WINDOW_LINES = 1000


class ResultDigest:
    """An order-free digest of a job's results, as a callback sink sees them: their count and
    the sum of their hashes (the same multiset of results, the same digest)."""

    def __init__(self) -> None:
        self.count = 0
        self.hash_sum = 0

    def __call__(self, item: Any) -> None:
        self.count += 1
        self.hash_sum = (self.hash_sum + hash(item)) & 0xFFFF_FFFF_FFFF_FFFF

    def value(self) -> tuple[int, int]:
        return self.count, self.hash_sum


def line_time(numbered: tuple[int, str]) -> int:
    return numbered[0]


def line_words(numbered: tuple[int, str]) -> list[str]:
    return tokenize(numbered[1])


def word(w: str) -> str:
    return w


def windowed_wordcount(lines: list[str], digest: ResultDigest) -> Pipeline:
    """Words counted per tumbling window of `WINDOW_LINES` lines (event time: the line's index),
    the results into ``digest`` (a stateless sink: with the collect sink every snapshot would
    hold every result so far).

    >>> d = ResultDigest()
    >>> _ = ExecutionService().run(windowed_wordcount(["a b", "b"], d))
    >>> d.count  # one window: (a, 1) and (b, 2)
    2
    """
    p = Pipeline()
    (p.read_from(sources.items(list(enumerate(lines))))
     .add_timestamps(line_time)
     .flat_map(line_words).filter(non_empty)
     .group_by(word).window(window.tumbling(WINDOW_LINES)).aggregate(counting())
     .write_to(sinks.callback(digest)))
    return p


# -- the keyed state and the restart -------------------------------------------------------------


class _Probe:
    """What the keyed-state job reports to the benchmark: when every key was in the stream, the
    injected failure, and the first item the aggregation took after the restart."""

    def __init__(self, keys: int) -> None:
        self.keys = keys
        self.all_keys_sent = threading.Event()
        self.fail = threading.Event()
        self.failed_at: float | None = None
        self.job: FaultTolerantJob | None = None
        self.first_after_restart: float | None = None

    def item(self, seq: int) -> int:
        if seq == self.keys:  # every key 0 .. keys - 1 went out before this one
            self.all_keys_sent.set()
        return seq % self.keys

    def maybe_fail(self, x: int) -> int:
        if self.fail.is_set():
            self.fail.clear()
            self.failed_at = time.perf_counter()
            raise RuntimeError("failure injected by jetbench bench snapshots")
        return x

    def key(self, x: int) -> int:
        if self.first_after_restart is None:
            job = self.job
            if job is not None and job.restarts:
                self.first_after_restart = time.perf_counter()
        return x


def _key(x: int) -> int:
    return x


def keyed_state_dag(probe: _Probe, rate: float) -> DAG:
    """generator (``seq % keys`` forever, ``rate`` items/s) -> fail-once map -> count per key
    (partitioned) -> no-op sink."""
    dag = DAG()
    src = dag.new_vertex("generator", generator_source(rate, probe.item, timestamped=False), local_parallelism=1)
    fail = dag.new_vertex("maybe-fail", map_processor(probe.maybe_fail), local_parallelism=1)
    agg = dag.new_vertex("count-per-key", aggregate_by_key(probe.key, counting()), local_parallelism=1)
    sink = dag.new_vertex("sink", noop_sink(), local_parallelism=1)
    dag.edge(Edge.between(src, fail)).edge(Edge.between(fail, agg).partitioned(_key)).edge(Edge.between(agg, sink))
    return dag


def _wait(what: str, done: Callable[[], bool], job: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if job.is_done:
            raise JetbenchError(f"bench snapshots: the keyed-state job ended while waiting for {what}: {job.failure}")
        if time.monotonic() > deadline:
            raise JetbenchError(f"bench snapshots: no {what} within {timeout:.0f} s")
        time.sleep(0.005)


def keyed_state(keys: int, interval_ms: int, snapshots: int, store: str, threads: int, rate: float,
                timeout: float = 120.0) -> dict[str, Any]:
    """The keyed-state and restart figures (see the module)."""
    probe = _Probe(keys)
    quiet = logging.getLogger("jetbench.snapshot")  # the one restart injected is not news
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    service = ExecutionService(cooperative_threads=threads)
    config = JobConfig(processing_guarantee=EXACTLY_ONCE, snapshot_interval_ms=interval_ms, snapshot_store=store,
                       max_restarts=1)
    job = service.submit(keyed_state_dag(probe, rate), name="bench-keyed-state", config=config)
    assert isinstance(job, FaultTolerantJob)
    probe.job = job
    try:
        _wait("key sent", probe.all_keys_sent.is_set, job, timeout)
        full_from = len(job.snapshot_history) + 1  # the snapshot under way may predate the last key
        _wait(f"{snapshots} snapshots of {keys:,} keys",
              lambda: sum(r.success for r in job.snapshot_history[full_from:]) >= snapshots, job, timeout)
        records = [r for r in job.snapshot_history[full_from:] if r.success][:snapshots]
        sizes = [sum(r.sizes.values()) for r in records]
        state_bytes = [r.sizes.get("count-per-key", 0) for r in records]
        file_bytes = sum(os.path.getsize(p) for p in (store, store + "-wal") if os.path.exists(p))
        stored = job.last_snapshot
        assert stored is not None
        probe.fail.set()
        _wait("restart", lambda: probe.first_after_restart is not None, job, timeout)
        assert probe.failed_at is not None and probe.first_after_restart is not None
        restart_s = probe.first_after_restart - probe.failed_at
        restored_from = job.restored_from
    finally:
        job.cancel()
        with contextlib.suppress(JobCancelled):
            job.join(timeout)
        quiet.setLevel(level)
    per_10k = 10_000 / keys
    durations = [r.duration_s * 1000 for r in records]
    return {
        "keys": keys,
        "snapshot_ms_median": statistics.median(durations),
        "snapshot_ms_max": max(durations),
        "snapshots_timed": len(durations),
        "snapshot_bytes": int(statistics.median(sizes)),
        "state_bytes_per_10k_keys": statistics.median(state_bytes) * per_10k,
        "store_file_bytes": file_bytes,
        "restart_ms": restart_s * 1000,
        "restored_from": restored_from,
        "restored_from_stored": restored_from >= stored.snapshot_id,
    }


# -- the report ----------------------------------------------------------------------------------


@dataclass
class SnapshotsReport(ReportFormat):
    """Throughput per guarantee and job (items/s, ratio to no guarantee), the keyed-state
    snapshot and the restart figures."""

    benchmark: str
    interval_ms: int
    throughput: dict[str, dict[str, float]]
    ratios: dict[str, dict[str, float]]
    #: the same ratio from the process's CPU seconds (all threads), less sensitive to a shared machine
    cpu_ratios: dict[str, dict[str, float]]
    snapshots_taken: dict[str, dict[str, int]]
    keyed_state: dict[str, Any]
    results_equal: bool
    ratio_basis: str = "wall-clock items/s with the guarantee over without, median of interleaved repeats"
    extra: dict[str, Any] = field(default_factory=dict)

    def to_text(self) -> str:
        lines = [f"{self.benchmark}: snapshots every {self.interval_ms} ms"]
        for job, per in self.throughput.items():
            lines.append(f"  {job}:")
            for g, rate in per.items():
                ratio = self.ratios[job].get(g)
                taken = self.snapshots_taken[job].get(g, 0)
                tail = (f"  ratio {ratio:.3f}, by CPU time {self.cpu_ratios[job][g]:.3f}  ({taken} snapshots)"
                        if ratio is not None else "")
                lines.append(f"    {g:<14}{rate:>14,.0f} items/s{tail}")
        ks = self.keyed_state
        if ks:
            lines += [
                f"  keyed state of {ks['keys']:,} keys: snapshot {ks['snapshot_ms_median']:.1f} ms median "
                f"(max {ks['snapshot_ms_max']:.1f} ms of {ks['snapshots_timed']}), "
                f"{ks['state_bytes_per_10k_keys'] / 1e6:.3f} MB per 10k keys in the store",
                f"  restart: {ks['restart_ms']:.1f} ms from the failure to the first item the restored "
                f"aggregation took (restored from snapshot {ks['restored_from']})",
            ]
        lines.append(f"  results equal: {self.results_equal}")
        return "\n".join(lines + self.extra_lines())


def run(lines: int = DEFAULT_LINES, items: int = DEFAULT_ITEMS, interval_ms: int = 1000, keys: int = 100_000,
        repeat: int = 3, threads: int = 1, snapshots: int = 3, rate: float = 200_000.0,
        store: str | None = None) -> SnapshotsReport:
    """Run the three measurements (see the module); ``lines`` or ``items`` 0 leaves that job out,
    ``keys`` 0 the keyed state and restart. ``store``: a directory for the SQLite stores (default
    a temporary one, removed afterwards)."""
    for name, value in (("lines", lines), ("items", items), ("keys", keys)):
        if value < 0:
            raise JetbenchError(f"bench snapshots: --{name} must be >= 0, got {value}")
    if interval_ms <= 0 or repeat < 1 or snapshots < 1:
        raise JetbenchError(f"bench snapshots: --interval-ms, --repeat and the snapshots timed must be > 0, got "
                            f"{interval_ms}, {repeat}, {snapshots}")
    directory = tempfile.mkdtemp(prefix="jetbench-snapshots-") if store is None else store
    os.makedirs(directory, exist_ok=True)
    try:
        return _run(lines, items, interval_ms, keys, repeat, threads, snapshots, rate, directory)
    finally:
        if store is None:
            shutil.rmtree(directory, ignore_errors=True)


def _run(lines: int, items: int, interval_ms: int, keys: int, repeat: int, threads: int, snapshots: int,
         rate: float, directory: str) -> SnapshotsReport:
    load_at_start = load_average()
    service = ExecutionService(cooperative_threads=threads)
    jobs: dict[str, tuple[int, Callable[[], tuple[Any, Any]]]] = {}
    if lines:
        text = corpus(lines)
        jobs["windowed wordcount"] = (lines, lambda: _digested(lambda d: windowed_wordcount(text, d)))
    if items:
        jobs["chain"] = (items, lambda: (chain_dag(items), None))
    fns: dict[str, Callable[[], Any]] = {}
    for job_name, (_, make) in jobs.items():
        for g in GUARANTEES:
            fns[f"{job_name}|{g}"] = _runner(service, make, g, interval_ms, os.path.join(directory, "throughput.sqlite"))
    timings = interleaved(fns, repeat) if fns else {}
    throughput: dict[str, dict[str, float]] = {}
    ratios: dict[str, dict[str, float]] = {}
    cpu_ratios: dict[str, dict[str, float]] = {}
    taken: dict[str, dict[str, int]] = {}
    equal = True
    for job_name, (n, _) in jobs.items():
        per = {g: n / timings[f"{job_name}|{g}"].wall_s for g in GUARANTEES}
        throughput[job_name] = per
        ratios[job_name] = {g: per[g] / per[NONE] for g in GUARANTEES if g != NONE}
        cpu = {g: timings[f"{job_name}|{g}"].cpu_s for g in GUARANTEES}
        cpu_ratios[job_name] = {g: cpu[NONE] / cpu[g] for g in GUARANTEES if g != NONE}
        taken[job_name] = {g: timings[f"{job_name}|{g}"].result[1] for g in GUARANTEES}
        results = [timings[f"{job_name}|{g}"].result[0] for g in GUARANTEES]
        equal = equal and all(r == results[0] for r in results)
    keyed = (keyed_state(keys, interval_ms, snapshots, os.path.join(directory, "keyed.sqlite"), threads, rate)
             if keys else {})
    if keyed and not keyed["restored_from_stored"]:
        equal = False
    return SnapshotsReport("snapshots", interval_ms, throughput, ratios, cpu_ratios, taken, keyed, equal,
                           extra={"lines": lines, "items": items, "repeat": repeat, "cooperative_threads": threads,
                                  "load_average_1m_start": load_at_start, "load_average_1m": load_average()})


def _digested(make: Callable[[ResultDigest], Pipeline]) -> tuple[Pipeline, ResultDigest]:
    digest = ResultDigest()
    return make(digest), digest


def _runner(service: ExecutionService, make: Callable[[], tuple[Any, Any]], guarantee: str, interval_ms: int,
            store: str) -> Callable[[], tuple[Any, int]]:
    """One run of a job under ``guarantee``: its result (or its digest's) and snapshots taken."""

    def run() -> tuple[Any, int]:
        dag, digest = make()
        config = JobConfig(processing_guarantee=guarantee, snapshot_interval_ms=interval_ms, snapshot_store=store)
        job = service.submit(dag, config=config)
        result = job.join()
        taken = len(job.snapshot_history) if isinstance(job, FaultTolerantJob) else 0
        return (digest.value() if digest is not None else sorted(result)), taken

    return run
