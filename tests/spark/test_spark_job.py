"""`SparkRunner.submit`: the handle of a job running on Spark behaves like a local `Job` (join,
cancel, status, metrics, the dashboard), its Spark stages are named after the pipeline, and no
Spark job or thread outlives it after a cancel, an error, a timeout or an interrupted wait. Real
local Spark (the shared session); the tasks wait on a gate file the test creates, so every state
a test looks at is one it made, not one it hoped for."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from jetbench import JobCancelled, JobError, JobStatus, JobTimeout, Pipeline, sinks, sources
from jetbench.notebook.spark_dashboard import SparkDashboard
from jetbench.spark.spark_job import SparkJob
from jetbench.spark.spark_status import SparkRunStatus

from .conftest import ship_by_value

ship_by_value(__name__)

WAIT_S = 120  # generous: what a test waits for happens in a second or two on a quiet machine


def gated(gate: str):
    """A map function whose items wait until the file ``gate`` exists (the tasks run in Spark's
    Python workers, other processes: a file is what they and the test share)."""

    def wait_for_gate(x):
        while not os.path.exists(gate):
            time.sleep(0.01)
        return x * 2

    return wait_for_gate


def gated_pipeline(gate: Path, n: int = 40) -> Pipeline:
    p = Pipeline()
    p.read_from(sources.items(range(n))).map(gated(str(gate)), name="wait-for-gate").write_to(sinks.collect())
    return p


def wait_until(what, condition, timeout: float = WAIT_S):
    """Poll ``condition()`` (each call a real read of Spark's state) until true; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout} s: {what}")
        time.sleep(0.05)


def tasks_running(job: SparkJob) -> SparkRunStatus | None:
    status = job.metrics()
    return status if status.tasks_running > 0 else None


def active_jobs_of(spark, job: SparkJob) -> list[int]:
    tagged = set(spark.sparkContext._jsc.sc().statusTracker().getJobIdsForTag(job.tag))
    return sorted(tagged & set(spark.sparkContext.statusTracker().getActiveJobsIds()))


def no_thread_left() -> bool:
    return not [t for t in threading.enumerate() if t.name.startswith("jetbench-spark-") and t.is_alive()]


@pytest.mark.slow
def test_submit_returns_at_once_and_join_returns_what_run_does(runner, spark, tmp_path):
    gate = tmp_path / "gate"
    job = runner.submit(gated_pipeline(gate))
    assert isinstance(job, SparkJob) and job.status is JobStatus.RUNNING and not job.is_done
    with pytest.raises(JobTimeout):  # a timeout leaves the job running: the caller holds it
        job.join(timeout=0.2)
    live = wait_until("a task of the job runs", lambda: tasks_running(job))
    assert job.status is JobStatus.RUNNING and live.status == "running" and live.final is False
    assert any(s.state == "running" and s.duration_s is not None for s in live.stages)
    gate.touch()
    assert sorted(job.join()) == [2 * x for x in range(40)]
    assert job.status is JobStatus.COMPLETED and job.failure is None and not job.thread.is_alive()
    assert sorted(job.result) == sorted(runner.run(gated_pipeline(gate)))
    final = job.metrics()
    assert final is job.metrics()  # frozen at the end
    assert final.final and final.status == "done" and final.tasks_done == final.tasks_total > 0
    assert all(s.state in ("done", "skipped") for s in final.stages)
    assert all(s.duration_s is not None for s in final.stages if s.state == "done")
    assert active_jobs_of(spark, job) == [] and no_thread_left()


def test_spark_names_the_stages_after_the_pipeline(runner, spark):
    """What Spark itself calls the stages (its status tracker; the Spark UI shows the same) is the
    job's name, what the action computes and the jetbench stages with their vertices, not
    "toArrow at runner.py"."""
    p = Pipeline()
    p.read_from(sources.items(["a b", "b"])).flat_map(str.split).group_by(str.upper).aggregate(
        __import__("jetbench").aggregate.counting()).write_to(sinks.collect())
    job = runner.submit(p, name="named")
    assert sorted(job.join()) == [("A", 1), ("B", 2)]
    stages = job.metrics().stages
    assert stages
    tracker = spark.sparkContext.statusTracker()
    for s in stages:
        name = tracker.getStageInfo(s.stage_id).name
        assert name == s.name
        assert name.startswith("jetbench named: results · stage 0: ") and "stage 1: " in name, name
        assert "runner.py" not in name
    assert "flat_map" in stages[0].name and "collect" in stages[0].name
    jobs = spark.sparkContext._jsc.sc().statusTracker().getJobIdsForTag(job.tag)
    assert len(list(jobs)) == job.metrics().jobs


def test_an_error_in_a_task_names_the_vertex_and_leaves_nothing_running(runner, spark):
    p = Pipeline(fuse=False)
    p.read_from(sources.items(range(10))).map(lambda x: 1 // (x - 5), name="boom").write_to(sinks.collect())
    job = runner.submit(p)
    with pytest.raises(JobError, match="boom") as info:
        job.join()
    assert info.value.vertex == "boom" and "ZeroDivisionError" in str(info.value)
    assert job.status is JobStatus.FAILED and job.failure is info.value
    assert job.metrics().status == "failed" and "boom" in (job.metrics().error or "")
    assert any(s.state == "failed" and s.failed > 0 for s in job.metrics().stages)
    assert job.metrics().tasks_running == 0
    board = job.dashboard()  # of an ended job: its final state at once, no sampler
    assert not board.is_sampling and board.state["status"] == "failed" and board.cancel_button.disabled
    assert "boom" in board.state["summary"] and any(r["state"] == "failed" for r in board.state["rows"])
    assert not job.thread.is_alive() and active_jobs_of(spark, job) == [] and no_thread_left()


@pytest.mark.slow
def test_cancel_stops_the_spark_jobs_and_join_raises_job_cancelled(runner, spark, tmp_path):
    job = runner.submit(gated_pipeline(tmp_path / "never"), name="to-cancel")
    wait_until("a task of the job runs", lambda: tasks_running(job))
    job.cancel()
    with pytest.raises(JobCancelled, match="'to-cancel' was cancelled"):
        job.join(timeout=WAIT_S)
    assert job.status is JobStatus.CANCELLED and isinstance(job.failure, JobCancelled)
    assert not job.thread.is_alive() and active_jobs_of(spark, job) == [] and no_thread_left()
    final = job.metrics()
    assert final.status == "cancelled" and any(s.state == "stopped" for s in final.stages)
    assert final.tasks_running == 0  # Spark's killed tasks have ended too
    job.cancel()  # cancelling an ended job does nothing
    assert job.status is JobStatus.CANCELLED  # (that the session goes on: test_spark_progress.py's interrupt test)


@pytest.mark.slow
def test_a_run_that_times_out_cancels_its_spark_jobs(runner, spark, tmp_path):
    with pytest.raises(JobTimeout, match="Spark jobs were cancelled"):
        runner.run(gated_pipeline(tmp_path / "never"), timeout=1.0)
    assert spark.sparkContext.statusTracker().getActiveJobsIds() == [] and no_thread_left()


@pytest.mark.slow
def test_the_dashboard_shows_a_row_per_spark_stage_live_and_freezes_at_the_end(runner, tmp_path):
    gate = tmp_path / "gate"
    p = Pipeline()
    p.read_from(sources.items(["a b"] * 30)).flat_map(str.split).map(gated(str(gate))) \
        .group_by(lambda w: w).aggregate(__import__("jetbench").aggregate.counting()).write_to(sinks.collect())
    job = runner.submit(p, name="dash")
    board = job.dashboard(interval_s=0.2)
    assert isinstance(board, SparkDashboard) and board.is_sampling
    live = wait_until("a running stage row", lambda: any(r["state"] == "running" for r in board.state["rows"])
                      and board.state)
    assert live["status"] == "running" and not live["final"]
    row = next(r for r in live["rows"] if r["state"] == "running")
    assert row["running"] > 0 and row["done"] < row["total"] and row["duration_s"] is not None
    assert row["name"].startswith("jetbench dash: results · stage 0: ")
    assert 'class="jb-spark-stage"' in board.view.value and 'data-state="running"' in board.view.value
    assert not board.cancel_button.disabled
    gate.touch()
    assert sorted(job.join()) == [("aa", 30), ("bb", 30)]  # the gate doubles each word
    board.join(WAIT_S)
    assert not board.is_sampling
    final = board.state
    assert final["final"] and final["status"] == "done" and board.cancel_button.disabled
    assert len(final["rows"]) == len(job.metrics().stages) >= 2
    assert all(r["state"] in ("done", "skipped") for r in final["rows"])
    assert [r["stage"] for r in final["rows"]] == [s.stage_id for s in job.metrics().stages]
    assert board.view.value.count('class="jb-spark-stage"') == len(final["rows"])


@pytest.mark.slow
def test_the_dashboards_cancel_button_cancels_the_job(runner, tmp_path):
    job = runner.submit(gated_pipeline(tmp_path / "never"), name="button")
    board = SparkDashboard(job, interval_s=0.2)
    wait_until("a task of the job runs", lambda: tasks_running(job))
    board.cancel_button.click()
    with pytest.raises(JobCancelled):
        job.join(timeout=WAIT_S)
    board.join(WAIT_S)
    assert board.state["status"] == "cancelled" and board.state["final"] and no_thread_left()


@pytest.mark.slow
def test_two_jobs_at_once_on_one_session_keep_their_own_spark_jobs(runner, spark, tmp_path):
    """Cancelling one job cancels its Spark jobs only: the other's tag is its own."""
    gate = tmp_path / "gate"
    kept = runner.submit(gated_pipeline(gate), name="kept")
    dropped = runner.submit(gated_pipeline(tmp_path / "never"), name="dropped")
    # local[2]: the first job's tasks hold both cores, the other's wait for one
    wait_until("both jobs in Spark", lambda: (kept.metrics().stages and dropped.metrics().stages
                                              and (tasks_running(kept) or tasks_running(dropped))))
    dropped.cancel()
    with pytest.raises(JobCancelled):
        dropped.join(timeout=WAIT_S)
    assert kept.status is JobStatus.RUNNING
    gate.touch()
    assert sorted(kept.join(timeout=WAIT_S)) == [2 * x for x in range(40)]
    assert all(s.name.startswith("jetbench kept: results") for s in kept.metrics().stages)
    assert all(s.name.startswith("jetbench dropped: results") for s in dropped.metrics().stages)
    assert active_jobs_of(spark, kept) == active_jobs_of(spark, dropped) == [] and no_thread_left()


@pytest.mark.slow
def test_a_spark_sinks_action_is_named_after_the_stages_that_feed_it(runner, spark):
    from jetbench.spark import dataframe_sinks

    p = Pipeline()
    p.read_from(sources.items([{"a": i} for i in range(20)])).map(dict, name="copy").write_to(
        dataframe_sinks.parquet(str(spark.conf.get("spark.local.dir", "/tmp")) + f"/sink-name-{os.getpid()}",
                                mode="overwrite"))
    job = runner.submit(p, name="to-parquet")
    assert job.join().count() == 20
    names = {s.name for s in job.metrics().stages}
    assert names and all(n.startswith("jetbench to-parquet: sink ") and "copy" in n for n in names), names
