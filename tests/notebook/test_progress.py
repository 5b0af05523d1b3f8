"""The progress of run()/join(): a live line in a notebook, a tqdm bar in a terminal, and the
ways to turn it off (`jetbench.notebook.progress`). No timing is asserted: only what is shown."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap

import nbformat
import pytest
from nbclient import NotebookClient

from jetbench import ExecutionService, Pipeline, sinks, sources
from jetbench.core.errors import JobTimeout
from jetbench.notebook import progress
from jetbench.notebook.job_counts import JobCounts, summary, thousands
from jetbench.notebook.progress import (
    TqdmReporter,
    progress_wanted,
    reporter_for,
)


@pytest.fixture
def settings():
    saved = (progress.config.enabled, progress.config.delay_s, progress.config.interval_s)
    yield progress.config
    progress.config.enabled, progress.config.delay_s, progress.config.interval_s = saved


def pipeline(n: int = 300, rate: int = 1000) -> Pipeline:
    p = Pipeline()
    p.read_from(sources.generator(rate, count=n)).map(lambda x: x).write_to(sinks.collect())
    return p


def test_argument_beats_config_beats_environment(settings, monkeypatch):
    monkeypatch.setenv("JETBENCH_PROGRESS", "0")
    assert not progress_wanted(None)
    assert progress_wanted(True)
    progress.configure(enabled=True)
    assert progress_wanted(None)
    assert not progress_wanted(False)
    progress.configure(enabled=None)
    monkeypatch.setenv("JETBENCH_PROGRESS", "1")
    assert progress_wanted(None)
    monkeypatch.delenv("JETBENCH_PROGRESS")
    assert progress_wanted(None)  # on by default


def test_no_reporter_off_or_without_a_terminal(settings, monkeypatch):
    monkeypatch.setenv("JETBENCH_PROGRESS", "1")
    job = ExecutionService(cooperative_threads=1).submit(pipeline(3).to_dag())
    job.join(progress=False)
    assert reporter_for(job, False, in_kernel=True) is None
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal
    assert reporter_for(job, None, in_kernel=False) is None
    assert isinstance(reporter_for(job, True, in_kernel=False), TqdmReporter)


def test_summary_names_sources_sinks_and_the_end():
    job = ExecutionService(cooperative_threads=1).submit(pipeline(50, 100_000).to_dag(), name="tiny")
    job.join(progress=False)
    counts = JobCounts.of(job)
    assert (counts.sources_out, counts.sinks_in, counts.status) == (50, 50, "completed")
    assert summary(counts).startswith("jetbench · job 'tiny' completed in ")
    assert "sources emitted 50 · sinks received 50" in summary(counts)


def test_the_rate_is_the_sources_and_labelled():
    """A count of 2,000 items sends one result to its sink: the rate is of the 2,000 the sources
    emitted, said so, not of the one item the sink received."""
    from jetbench import aggregate
    from jetbench.notebook.progress_widget import ProgressLine

    p = Pipeline()
    p.read_from(sources.items(range(2000))).aggregate(aggregate.counting()).write_to(sinks.collect())
    job = ExecutionService(cooperative_threads=1).submit(p.to_dag(), name="count")
    assert job.join(30, progress=False) == [2000]
    counts = JobCounts.of(job)
    assert (counts.sources_out, counts.sinks_in) == (2000, 1)
    want = f" · {thousands(2000 / counts.elapsed_s)} items/s out of the sources on average"
    assert summary(counts).endswith(want), summary(counts)
    line = ProgressLine(counts)
    line.set_counts(counts, 5.0, final=True)
    assert line.state["rate"] == round(2000 / counts.elapsed_s, 1) and line.state["rate_text"] == want[3:]
    assert line.state["restart"] == ""


def test_a_restarted_job_says_its_counts_start_at_the_snapshot(tmp_path):
    """After a failure the job restarts from its last snapshot and its new tasklets count from
    there: fewer than the input. The summary, the widget and the terminal bar say so."""
    from jetbench import JobConfig
    from jetbench.notebook.progress_widget import ProgressLine

    failed: list[int] = []

    def fail_once(x: int) -> int:
        if x == 1500 and not failed:
            failed.append(x)
            raise RuntimeError("injected failure")
        return x

    p = Pipeline()
    p.read_from(sources.generator(5000, count=3000)).map(fail_once).write_to(sinks.collect())
    config = JobConfig("exactly_once", snapshot_interval_ms=20, snapshot_store=tmp_path / "s.sqlite")
    job = ExecutionService(cooperative_threads=1).submit(p.to_dag(), name="again", config=config)
    assert sorted(job.join(60, progress=False)) == list(range(3000))  # nothing lost
    counts = JobCounts.of(job)
    assert counts.restarts == 1 and counts.restored_from >= 1, counts
    assert counts.sources_out < 3000  # counted from the snapshot on
    note = f"counted since restart 1 from snapshot #{counts.restored_from} (the items before it are in the snapshot)"
    assert f"sinks received {thousands(counts.sinks_in)} {note} · " in summary(counts), summary(counts)
    line = ProgressLine(counts)
    line.set_counts(counts, None, final=True)
    assert line.state["restart"] == note
    out = io.StringIO()
    bar = TqdmReporter(job, 0.0, 0.0, file=out)
    bar.show(counts)
    bar.finish(counts, on_waiting_thread=True)
    assert note in out.getvalue()


class _Recorder(progress.Reporter):
    """A reporter that records what it was asked to show."""

    def __init__(self, job):
        super().__init__(job, interval_s=0.0, delay_s=0.0)
        self.seen: list[tuple[str, str]] = []

    def show(self, counts):
        self.seen.append(("show", counts.status))

    def update(self, counts, rate):
        self.seen.append(("update", counts.status))

    def finish(self, counts, on_waiting_thread):
        self.seen.append(("finish", counts.status))


def test_a_suspended_job_is_not_done_and_its_line_is_not_frozen(tmp_path):
    from jetbench.core.job_config import JobConfig

    config = JobConfig("exactly_once", snapshot_interval_ms=20, snapshot_store=tmp_path / "s.sqlite")
    job = ExecutionService(cooperative_threads=1).submit(pipeline(3000, 5000).to_dag(), name="held", config=config)
    reporter = _Recorder(job)
    reporter.tick()
    job.suspend()
    counts = JobCounts.of(job)
    assert counts.status == "suspended" and not counts.done and counts.error is None
    line = summary(counts, rate=0.0)
    assert line.startswith("jetbench · job 'held' suspended at ") and "waiting for resume" in line
    assert line.endswith(" 0 items/s out of the sources"), line  # a live rate, not a whole-run average
    # join waits on through a suspension (here until its timeout): the job is not over
    with pytest.raises(JobTimeout, match="still suspended"):
        job.join(0.05, progress=False)
    reporter._next = 0.0
    reporter.tick()
    reporter.close(finished=False)
    assert reporter.seen[-1] == ("update", "suspended") and not reporter.closed
    job.resume()
    assert len(job.join(30, progress=False)) == 3000
    assert reporter.seen[-1] == ("finish", "completed") and reporter.closed


def test_tqdm_bar_on_stderr_of_a_script(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(
        """
        from jetbench import Pipeline, run, sinks, sources
        from jetbench.notebook.progress import configure
        configure(delay_s=0, interval_s=0.1)
        p = Pipeline()
        p.read_from(sources.generator(1000, count=600)).write_to(sinks.collect())
        print(len(run(p, progress=True)))
        print(len(run(p, progress=False)))
        """
    ))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["600", "600"]
    bars = [line for line in done.stderr.replace("\r", "\n").splitlines() if line.startswith("jetbench ")]
    assert bars, done.stderr
    assert bars[-1].startswith("jetbench ") and " completed" in bars[-1] and "600" in bars[-1], bars[-1]
    assert done.stderr.count(" completed") == 1  # the second run showed nothing


NOTEBOOK = [
    """\
import jetbench
from jetbench import ExecutionService, Pipeline, sources, sinks
from jetbench.notebook.progress import configure
configure(enabled=True, delay_s=0.2, interval_s=0.2)  # the suite turns progress off by environment
p = Pipeline()
p.read_from(sources.generator(1000, count=1200)).map(lambda x: x).write_to(sinks.collect())""",
    "len(jetbench.run(p))",
    "len(jetbench.run(p, progress=False))",
    "job = ExecutionService().submit(p, name='joined'); len(job.join())",
]


def test_notebook_line_appears_and_freezes_into_a_summary(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in NOTEBOOK])
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    _setup, ran, quiet, joined = (cell.outputs for cell in nb.cells)
    for outputs, name in ((ran, "job-"), (joined, "'joined'")):
        lines = [o for o in outputs if o["output_type"] == "display_data"]
        assert len(lines) == 1, outputs
        data = lines[0]["data"]
        assert "application/vnd.jupyter.widget-view+json" in data
        text = data["text/plain"]  # updated to the summary when the job ended
        assert text.startswith("jetbench · job ") and name in text and " completed in " in text, text
        assert "sources emitted 1,200 · sinks received 1,200" in text, text
        assert outputs[-1]["data"]["text/plain"] == "1200"
    assert [o["output_type"] for o in quiet] == ["execute_result"]
    # the line's widget state saved with the notebook is the frozen, final one
    states = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    lines = [s["state"]["state"] for s in states.values()
             if s["model_name"] == "AnyModel" and '"sinks_in"' in str(s["state"].get("state"))]
    assert len(lines) == 2 and all('"final":true' in s and '"status":"completed"' in s for s in lines), lines
