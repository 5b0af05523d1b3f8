"""Suspend and resume a job with a processing guarantee, and its snapshot figures (issue 16):
``job.suspend()`` takes a terminal snapshot and stops every thread, ``job.resume()`` restarts
the same handle from it; ``job.metrics().snapshots`` counts snapshots and restarts."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import pytest

from jetbench import DAG, Edge, ExecutionService, JetbenchError
from jetbench.core.job import JobStatus
from jetbench.core.job_config import JobConfig
from jetbench.core.metrics import SnapshotStatistics
from jetbench.core.snapshot import FaultTolerantJob
from jetbench.core.snapshot_store import SnapshotStore
from jetbench.processors import (
    aggregate_by_key,
    collect_sink,
    counting,
    items_source,
    map_processor,
)
from jetbench.processors.generator_source import generator_source

N = 12_000
KEYS = 7


def _key(x: int) -> int:
    return x % KEYS


def _keyed_count(rate: float) -> DAG:
    dag = DAG()
    src = dag.new_vertex("src", generator_source(rate, timestamped=False, count=N))
    agg = dag.new_vertex("agg", aggregate_by_key(_key, counting()), local_parallelism=2)
    out = dag.new_vertex("out", collect_sink())
    dag.edge(Edge.between(src, agg).partitioned(_key)).edge(Edge.between(agg, out))
    return dag


def _jetbench_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("jetbench.")]


def _wait_for_snapshot(job: FaultTolerantJob, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while job.last_snapshot is None:
        assert time.monotonic() < deadline, "no snapshot was taken"
        time.sleep(0.01)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("guarantee", ["exactly_once", "at_least_once"])
def test_a_suspended_keyed_aggregation_resumes_to_the_failure_free_result(tmp_path, threads, guarantee):
    expected = Counter({k: len(range(k, N, KEYS)) for k in range(KEYS)})
    plain = ExecutionService(cooperative_threads=threads).submit(_keyed_count(1e9)).join(30)
    assert Counter(dict(plain)) == expected
    config = JobConfig(guarantee, snapshot_interval_ms=20, snapshot_store=tmp_path / "s.sqlite")
    job = ExecutionService(cooperative_threads=threads).submit(_keyed_count(8_000), config=config)
    assert isinstance(job, FaultTolerantJob)
    _wait_for_snapshot(job)
    job.suspend()
    assert job.status is JobStatus.SUSPENDED and not job.is_done
    assert not _jetbench_threads(), "a suspended job keeps no thread"
    assert not job.live_threads()
    taken = job.snapshot_statistics().snapshots_taken
    assert taken >= 2  # the terminal snapshot came after the one waited for
    assert SnapshotStore(tmp_path / "s.sqlite").load(job.owner) is not None, "the terminal snapshot is kept"
    time.sleep(0.1)  # nothing runs meanwhile
    assert job.snapshot_statistics().snapshots_taken == taken
    terminal = job.snapshot_statistics().last_snapshot_id  # read before the resumed job takes more
    job.resume()
    assert job.status is JobStatus.RUNNING
    assert job.restored_from == terminal
    result = Counter(dict(job.join(30)))
    if guarantee == "exactly_once":
        assert result == expected
    else:
        assert set(result) == set(expected) and all(result[k] >= expected[k] for k in expected)
    assert job.status is JobStatus.COMPLETED and job.restarts == 0
    assert not _jetbench_threads(), "no thread outlives the job"
    assert SnapshotStore(tmp_path / "s.sqlite").owners() == {}, "a finished job forgets its snapshots"


def test_a_job_suspended_twice_and_resumed_twice_counts_every_item_once(tmp_path):
    config = JobConfig("exactly_once", snapshot_interval_ms=20, snapshot_store=tmp_path / "s.sqlite")
    job = ExecutionService(cooperative_threads=2).submit(_keyed_count(10_000), config=config)
    for _ in range(2):
        _wait_for_snapshot(job)
        job.suspend()
        assert job.status is JobStatus.SUSPENDED and not _jetbench_threads()
        job.resume()
    assert Counter(dict(job.join(30))) == Counter({k: len(range(k, N, KEYS)) for k in range(KEYS)})


def test_a_suspended_job_can_be_cancelled(tmp_path):
    config = JobConfig("exactly_once", snapshot_interval_ms=20, snapshot_store=tmp_path / "s.sqlite")
    job = ExecutionService().submit(_keyed_count(5_000), config=config)
    job.suspend()
    job.cancel()
    assert job.is_done and job.status is JobStatus.CANCELLED
    with pytest.raises(JetbenchError, match="cancelled"):
        job.join(5)
    with pytest.raises(JetbenchError, match="only a suspended job resumes"):
        job.resume()
    assert not _jetbench_threads()
    assert SnapshotStore(tmp_path / "s.sqlite").owners() == {}


def test_suspend_refuses_a_job_without_a_guarantee_a_finished_one_and_resume_a_running_one(tmp_path):
    def dag() -> DAG:
        d = DAG()
        d.edge(Edge.between(d.new_vertex("src", items_source(range(5))), d.new_vertex("out", collect_sink())))
        return d

    plain = ExecutionService().submit(dag())
    with pytest.raises(JetbenchError, match="takes no snapshots.*cannot be suspended"):
        plain.suspend()
    plain.join(10)
    job = ExecutionService().submit(dag(), config=JobConfig("exactly_once", snapshot_store=tmp_path / "s.sqlite"))
    assert job.join(10) == [0, 1, 2, 3, 4]
    with pytest.raises(JetbenchError, match="is completed: only a running job can be suspended"):
        job.suspend()
    running = ExecutionService().submit(_keyed_count(2_000), config=JobConfig(
        "exactly_once", snapshot_interval_ms=50, snapshot_store=tmp_path / "s.sqlite"))
    with pytest.raises(JetbenchError, match="is running: only a suspended job resumes"):
        running.resume()
    running.stop()
    assert not _jetbench_threads()


class _FailOnce:
    def __init__(self, at: int):
        self.at = at
        self.failed = threading.Event()

    def __call__(self, x: int) -> int:
        if x == self.at and not self.failed.is_set():
            self.failed.set()
            raise ValueError("injected failure")
        return x


def test_metrics_show_the_snapshots_taken_the_last_one_and_the_restarts(tmp_path):
    fail = _FailOnce(N // 2)
    dag = DAG()
    src = dag.new_vertex("src", generator_source(20_000, timestamped=False, count=N))
    m = dag.new_vertex("m", map_processor(fail))
    agg = dag.new_vertex("agg", aggregate_by_key(_key, counting()))
    dag.edge(Edge.between(src, m)).edge(Edge.between(m, agg).partitioned(_key))
    dag.edge(Edge.between(agg, dag.new_vertex("out", collect_sink())))
    config = JobConfig("exactly_once", snapshot_interval_ms=20, snapshot_store=tmp_path / "s.sqlite")
    job = ExecutionService(cooperative_threads=2).submit(dag, config=config)
    assert isinstance(job, FaultTolerantJob)
    job.join(30)
    stats: Any = job.metrics().snapshots
    assert isinstance(stats, SnapshotStatistics)
    assert stats.guarantee == "exactly_once" and stats.restarts == 1 == job.restarts
    good = [r for r in job.snapshot_history if r.success]
    assert stats.snapshots_taken == len(good) >= 2 and stats.snapshots_failed == 0
    last = good[-1]
    assert stats.last_snapshot_id == last.snapshot_id and stats.restored_from == job.restored_from > 0
    assert stats.last_duration_ms == pytest.approx(last.duration_s * 1000) and stats.last_duration_ms > 0
    assert set(stats.last_sizes) == {"src", "m", "agg", "out"} and stats.last_sizes == last.sizes
    assert stats.last_sizes["agg"] > 0 and stats.last_size_bytes == sum(last.sizes.values())
    assert stats.last_age_s is not None and stats.last_age_s >= 0
    assert job.metrics().status == "completed"
    with pytest.raises(AttributeError):
        stats.restarts = 5  # frozen
    # a job without a guarantee has no snapshot figures
    plain = DAG()
    plain.edge(Edge.between(plain.new_vertex("src", items_source(range(3))), plain.new_vertex("out", collect_sink())))
    p = ExecutionService().submit(plain)
    p.join(10)
    assert p.metrics().snapshots is None


def test_a_fresh_job_has_no_snapshot_yet(tmp_path):
    config = JobConfig("at_least_once", snapshot_interval_ms=60_000, snapshot_store=tmp_path / "s.sqlite")
    job = ExecutionService().submit(_keyed_count(2_000), config=config)
    stats = job.metrics().snapshots
    assert stats is not None and stats.snapshots_taken == 0 and stats.last_snapshot_id == 0
    assert stats.last_sizes == {} and stats.last_age_s is None and stats.last_size_bytes == 0
    job.stop()


def test_a_new_job_can_start_from_a_suspended_jobs_terminal_snapshot(tmp_path):
    expected = Counter({k: len(range(k, N, KEYS)) for k in range(KEYS)})
    store = tmp_path / "s.sqlite"
    config = JobConfig("exactly_once", snapshot_interval_ms=20, snapshot_store=store)
    job = ExecutionService().submit(_keyed_count(8_000), name="suspended", config=config)
    assert isinstance(job, FaultTolerantJob)
    _wait_for_snapshot(job)
    job.suspend()
    # as a new process would after this one exited: start from the snapshot the suspended job left
    again = ExecutionService().submit(_keyed_count(1e9), config=JobConfig(
        "exactly_once", snapshot_store=store, initial_snapshot="job/suspended"))
    assert Counter(dict(again.join(30))) == expected
    job.cancel()
    assert not _jetbench_threads()


@pytest.mark.parametrize("delay", [0.0, 0.002, 0.01, 0.03])
def test_suspend_racing_the_end_of_a_short_job_never_hangs_nor_loses_an_item(tmp_path, delay):
    dag = DAG()
    src = dag.new_vertex("src", generator_source(1e9, timestamped=False, count=2_000))
    agg = dag.new_vertex("agg", aggregate_by_key(_key, counting()))
    dag.edge(Edge.between(src, agg).partitioned(_key)).edge(Edge.between(agg, dag.new_vertex("out", collect_sink())))
    config = JobConfig("exactly_once", snapshot_interval_ms=1, snapshot_store=tmp_path / "s.sqlite")
    job = ExecutionService(cooperative_threads=2).submit(dag, config=config)
    time.sleep(delay)
    try:
        job.suspend(timeout=10)
    except JetbenchError as exc:
        assert "only a running job can be suspended" in str(exc) or "no snapshot was stored" in str(exc)
    if job.status is JobStatus.SUSPENDED:
        assert not _jetbench_threads()
        job.resume()
    assert Counter(dict(job.join(30))) == Counter({k: len(range(k, 2_000, KEYS)) for k in range(KEYS)})
    assert not _jetbench_threads()
