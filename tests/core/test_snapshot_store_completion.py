"""A job that completed records it (issue 36, item 3), and nothing opens a store the user did
not name (item 5).

The end of a job is one transaction: its snapshots are deleted and its record says
``completed``. A process killed with SIGKILL inside that transaction leaves the snapshots and a
``running`` record (the next process resumes from the last snapshot and finishes); killed right
after it, the next process with ``resume=True`` does not run the job again: it gets a completed
job and a `SnapshotWarning`. The child pauses at those two moments (a trace hook on the store's
SQLite connection, in the child's own code) and is killed there."""

from __future__ import annotations

import os
import sys
import threading
import warnings
from pathlib import Path

import pytest

from jetbench import ExecutionService, JetbenchError, JobStatus
from jetbench.core.job_config import JobConfig
from jetbench.core.snapshot import CompletedJob, FaultTolerantJob
from jetbench.core.snapshot_store import SnapshotStore, SnapshotWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))

import snapshot_child  # noqa: E402
from snapshot_child import EXPECTED, child_script, run_child  # noqa: E402


def _side_effects(out: Path) -> list[str]:
    return (out / "side-effects.log").read_text().splitlines()


def test_a_kill_inside_the_completion_transaction_leaves_the_snapshots_and_the_job_resumes(tmp_path):
    store, out, script = tmp_path / "s.sqlite", tmp_path / "out", child_script(tmp_path)
    lines, err, _ = run_child(script, store, out, "mid-finish", kill_on="paused")
    assert lines[0].startswith("running 0 FaultTolerantJob"), lines
    left = SnapshotStore(store)
    record = left.record("job/lifecycle")
    assert record is not None and record.state == "running", "the transaction was rolled back"
    assert left.owners().get("job/lifecycle", 0) >= 1 and left.owners()["job/lifecycle"] == record.snapshot_id
    lines, err, code = run_child(script, store, out, "none")
    assert code == 0, err
    restored = int(lines[0].split()[1])
    assert lines[0].endswith("FaultTolerantJob running") and restored == record.snapshot_id, lines
    assert lines[-1] == f"result {EXPECTED}", "resumed from the last snapshot, not from the start, and exact"
    assert "SnapshotWarning" not in err, err
    assert SnapshotStore(store).record("job/lifecycle").state == "completed"


def test_a_kill_right_after_the_completion_commit_never_runs_the_job_again(tmp_path):
    store, out, script = tmp_path / "s.sqlite", tmp_path / "out", child_script(tmp_path)
    run_child(script, store, out, "after-finish", kill_on="paused")
    left = SnapshotStore(store)
    record = left.record("job/lifecycle")
    assert record is not None and record.state == "completed" and left.owners() == {}
    done = _side_effects(out)
    assert len(done) == snapshot_child.N // 50, "the first run went through every item"
    lines, err, code = run_child(script, store, out, "none")
    assert code == 0, err
    assert lines[0] == "running 0 CompletedJob completed", lines
    assert lines[-1] == "result ", "no result: it went to the run that completed"
    assert f"SnapshotWarning: job 'lifecycle' completed earlier, at {record.when} (as the snapshot store " \
           f"{str(store)!r} records), so resume=True does not run it again" in err, err
    assert f"SnapshotStore({str(store)!r}).delete('job/lifecycle')" in err
    assert _side_effects(out) == done, "not one item was processed again"


def test_a_completed_job_runs_again_once_its_record_is_forgotten_or_without_resume(tmp_path):
    store, out = tmp_path / "s.sqlite", tmp_path / "out"
    config = JobConfig("exactly_once", snapshot_interval_ms=20, snapshot_store=store, resume=True)
    service = ExecutionService(cooperative_threads=2)
    first = service.submit(snapshot_child.pipeline(str(out)), name="lifecycle", config=config)
    assert " ".join(sorted(first.join(60))) == EXPECTED
    with pytest.warns(SnapshotWarning, match="job 'lifecycle' completed earlier"):
        again = service.submit(snapshot_child.pipeline(str(out)), name="lifecycle", config=config)
    assert isinstance(again, CompletedJob) and again.status is JobStatus.COMPLETED and again.join() is None
    assert again.completed_earlier.state == "completed" and "completed earlier at" in repr(again)
    runs = len(_side_effects(out))
    fresh = service.submit(snapshot_child.pipeline(str(out)), name="lifecycle",
                           config=JobConfig("exactly_once", snapshot_interval_ms=20, snapshot_store=store))
    assert " ".join(sorted(fresh.join(60))) == EXPECTED and len(_side_effects(out)) == 2 * runs
    SnapshotStore(store).delete("job/lifecycle")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # forgotten: runs with no word
        job = service.submit(snapshot_child.pipeline(str(out)), name="lifecycle", config=config)
        assert isinstance(job, FaultTolerantJob) and " ".join(sorted(job.join(60))) == EXPECTED


def test_a_failed_or_cancelled_job_says_so_when_resumed_and_starts_over(tmp_path):
    store = tmp_path / "s.sqlite"
    config = JobConfig("exactly_once", snapshot_interval_ms=20, snapshot_store=store, resume=True)
    job = ExecutionService().submit(snapshot_child.pipeline(str(tmp_path / "out")), name="lifecycle", config=config)
    job.cancel()
    with pytest.raises(JetbenchError):
        job.join(30)
    assert SnapshotStore(store).record("job/lifecycle").state == "cancelled"
    with pytest.warns(SnapshotWarning, match="job 'lifecycle' starts from the beginning: its earlier run cancelled"):
        job = ExecutionService().submit(snapshot_child.pipeline(str(tmp_path / "out")), name="lifecycle",
                                        config=config)
    assert " ".join(sorted(job.join(60))) == EXPECTED and job.restored_from == 0


# -- no store the user did not name ---------------------------------------------------------------


def test_a_job_without_a_named_store_keeps_its_snapshots_in_a_private_one_removed_at_its_end(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    job = ExecutionService(cooperative_threads=2).submit(snapshot_child.pipeline(str(tmp_path / "out")),
                                                         config=JobConfig("exactly_once", snapshot_interval_ms=10))
    assert isinstance(job, FaultTolerantJob) and job.store.is_private
    directory = Path(job.store.path).parent
    assert directory.is_dir() and directory.name.startswith("jetbench-snapshots-")
    with pytest.raises(JetbenchError, match="keeps its snapshots in a temporary store of its own.*name a store"):
        job.export_snapshot("kept")
    assert " ".join(sorted(job.join(60))) == EXPECTED
    assert job.snapshot_history, "it took snapshots"
    assert not directory.exists(), "the private store went with the job"
    assert not (tmp_path / "cache").exists() and not (tmp_path / "home").exists(), "no default store was made"


def test_reading_snapshots_needs_a_store_the_user_named(tmp_path):
    for kwargs, what in (({"resume": True}, "resume=True"), ({"initial_snapshot": "half-way"}, "initial_snapshot")):
        with pytest.raises(JetbenchError, match=f"^{what} reads snapshots from a store, and a store holds pickles "
                                                "that run code when read: name the store"):
            JobConfig("exactly_once", **kwargs)
    with pytest.raises(JetbenchError, match="SnapshotStore needs the path of its file, got None"):
        SnapshotStore(None)  # type: ignore[arg-type]


def test_a_private_store_is_removed_when_a_suspended_job_is_cancelled_and_threads_end(tmp_path):
    job = ExecutionService().submit(snapshot_child.pipeline(str(tmp_path / "out")),
                                    config=JobConfig("exactly_once", snapshot_interval_ms=10))
    while not job.snapshot_history:
        threading.Event().wait(0.005)
    job.suspend()
    directory = Path(job.store.path).parent
    assert directory.exists(), "a suspended job keeps its terminal snapshot"
    job.cancel()
    with pytest.raises(JetbenchError):
        job.join(30)
    assert not directory.exists()
    assert not [t for t in threading.enumerate() if t.name.startswith("jetbench.")]
    assert os.path.exists(tmp_path / "out")
