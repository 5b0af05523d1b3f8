"""Spark's progress while a SparkRunner job runs: what the status tracker says of a run's Spark
jobs, stages and tasks (`jetbench.spark.spark_status`), the terminal bar and the notebook rows
(`jetbench.notebook.spark_progress`)."""

from __future__ import annotations

import time
import uuid

import pytest

from jetbench import Pipeline, sinks, sources
from jetbench.notebook import progress
from jetbench.notebook.progress import reporter_for
from jetbench.notebook.spark_progress import SparkNotebookReporter, SparkTqdmReporter, status_html
from jetbench.spark.spark_status import SparkRunStatus, SparkStageStatus, SparkStatusSource

from .conftest import ship_by_value

ship_by_value(__name__)


def slow(x):
    time.sleep(0.004)
    return x


@pytest.fixture
def shown_at_once():
    saved = (progress.config.enabled, progress.config.delay_s, progress.config.interval_s)
    progress.configure(enabled=True, delay_s=0.0, interval_s=0.1)
    yield
    progress.config.enabled, progress.config.delay_s, progress.config.interval_s = saved


def test_the_tracker_gives_the_stages_and_tasks_of_a_tagged_run(spark):
    sc = spark.sparkContext
    tag = f"jetbench-test-{uuid.uuid4().hex}"
    source = SparkStatusSource(sc, tag, "count")
    sc.addJobTag(tag)
    try:
        assert spark.range(0, 1000, 1, 3).repartition(4).count() == 1000
    finally:
        sc.removeJobTag(tag)
    sc._jsc.sc().listenerBus().waitUntilEmpty(60_000)  # the tracker reads the listener bus's events
    spark.range(10).count()  # another job, untagged: not the run's
    status = source.read(final=True)
    assert status.jobs >= 1 and status.status == "done"
    ran = [s for s in status.stages if not s.skipped]
    assert ran and all(s.done == s.total and s.running == 0 for s in ran)
    assert sum(s.total for s in ran) >= 3  # the scan's 3 tasks at least
    assert status.tasks_done == status.tasks_total
    text = status.summary()
    assert text.startswith("Spark count: done") and f"tasks {status.tasks_done}/{status.tasks_total}" in text
    assert status_html(status).count('class="jb-spark-stage"') == len(status.stages)


def test_a_run_shows_a_bar_over_sparks_tasks_on_a_terminal(runner, shown_at_once, capsys):
    p = Pipeline()
    p.read_from(sources.items(range(400))).map(slow).write_to(sinks.collect())
    assert sorted(runner.run(p, progress=True)) == list(range(400))
    err = capsys.readouterr().err
    assert "Spark" in err and " tasks" in err and "stages" in err
    assert "done" in err.splitlines()[-1] or "done" in err  # frozen with its status


def test_no_progress_when_turned_off(runner, capsys):
    p = Pipeline()
    p.read_from(sources.items(range(50))).map(slow).write_to(sinks.collect())
    runner.run(p, progress=False)
    assert "Spark" not in capsys.readouterr().err


def test_the_notebook_rows_link_the_spark_ui_on_loopback():
    status = SparkRunStatus("wordcount", 1.5, [
        SparkStageStatus(0, "jetbench wordcount: results · stage 0: items", 2, 0, 0, 2, duration_s=0.75),
        SparkStageStatus(1, "jetbench wordcount: results · stage 1: collect", 1, 1, 0, 2, duration_s=0.5),
        SparkStageStatus(2, "skipped one", 0, 0, 0, 2, skipped=True),
        SparkStageStatus(3, "not submitted", 0, 0, 0, 2),
    ], 2, "http://127.0.0.1:4040")
    page = status_html(status)
    link = ' target="_blank" rel="noopener" style="color:#2563eb;text-decoration:underline">'
    assert f'<a href="http://127.0.0.1:4040"{link}Spark UI http://127.0.0.1:4040</a>' in page
    assert page.count('class="jb-spark-stage"') == 4
    assert "1/2 done, 1 running" in page and "skipped" in page and "2/2 done" in page
    assert [s.state for s in status.stages] == ["done", "running", "skipped", "pending"]
    assert "<td>done</td><td>0.8 s</td>" in page and "<td>running</td><td>0.5 s</td>" in page
    assert f'<a href="http://127.0.0.1:4040/stages/stage/?id=1&amp;attempt=0"{link}stage 1</a>' in page
    assert SparkStageStatus(4, "cut short", 1, 0, 0, 2, duration_s=1.0, ended=True).state == "stopped"
    assert SparkStageStatus(5, "a task failed", 1, 0, 1, 2, duration_s=1.0, ended=True).state == "failed"
    assert status.summary() == ("Spark wordcount: running 1.5 s · 2 jobs · stages 2/4 done · tasks 3/6 (1 running)"
                                " · Spark UI http://127.0.0.1:4040")


def test_a_spark_jobs_wait_gets_the_spark_reporter(runner, shown_at_once):
    p = Pipeline()
    p.read_from(sources.items(range(5))).write_to(sinks.collect())
    job = runner.submit(p)
    job.join()
    assert reporter_for(job, progress=False, in_kernel=False) is None
    assert type(reporter_for(job, progress=True, in_kernel=False)) is SparkTqdmReporter
    assert type(reporter_for(job, progress=True, in_kernel=True)) is SparkNotebookReporter


@pytest.mark.slow
def test_an_interrupted_wait_cancels_the_spark_jobs_and_leaves_no_thread(runner):
    """Stop in a notebook, Ctrl-C in a terminal: KeyboardInterrupt in the waiting thread cancels
    the run's Spark jobs and waits for the thread running them; the session goes on working."""
    import os
    import signal
    import threading

    p = Pipeline()
    p.read_from(sources.items(range(4))).map(lambda x: time.sleep(30) or x).write_to(sinks.collect())
    timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT))  # a real Ctrl-C
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            runner.run(p, progress=False)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 20
    assert not [t for t in threading.enumerate() if t.name.startswith("jetbench-spark-") and t.is_alive()]
    assert runner.session.sparkContext.statusTracker().getActiveJobsIds() == []  # no Spark job goes on
    q = Pipeline()
    q.read_from(sources.items(range(10))).map(slow).write_to(sinks.collect())
    assert sorted(runner.run(q)) == list(range(10))
