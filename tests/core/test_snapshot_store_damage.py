"""A store that says what it did (issue 36, item 3): when ``resume=True`` finds no usable
snapshot because the store lost its WAL file, is an empty file, was truncated or has every
snapshot torn, a `SnapshotWarning` names the store, the job and what was found before the job
starts from the beginning; a store that never held the job says nothing. Real files: a child
process takes real snapshots and is killed with SIGKILL, then the files are damaged as a user
or a disk would."""

from __future__ import annotations

import os
import sqlite3
import sys
import warnings
from pathlib import Path

import pytest

from jetbench import ExecutionService
from jetbench.core.job_config import JobConfig
from jetbench.core.snapshot_store import SnapshotStore, SnapshotWarning

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import snapshot_child  # noqa: E402
from snapshot_child import EXPECTED, child_script, run_child  # noqa: E402


def killed_after_snapshots(tmp_path: Path, n: int = 3) -> Path:
    """A store a child process took ``n`` snapshots in before it was killed with SIGKILL: the
    main file, its -wal and its -shm, as SQLite leaves them."""
    store = tmp_path / "s.sqlite"
    run_child(child_script(tmp_path), store, tmp_path / "out", f"snapshots:{n}", kill_on="snapshots")
    assert {p.name for p in tmp_path.iterdir()} >= {"s.sqlite", "s.sqlite-wal", "s.sqlite-shm"}
    return store


def resume_here(store: Path, out: Path) -> tuple[object, list[str]]:
    """Resume the job in this process: its job and the SnapshotWarnings it gave."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        config = JobConfig("exactly_once", snapshot_interval_ms=20, snapshot_store=store, resume=True)
        job = ExecutionService(cooperative_threads=2).submit(snapshot_child.pipeline(str(out)), name="lifecycle",
                                                             config=config)
        result = job.join(60)
    assert " ".join(sorted(result)) == EXPECTED
    return job, [str(w.message) for w in seen if issubclass(w.category, SnapshotWarning)]


def test_a_store_that_never_held_the_job_resumes_nothing_and_says_nothing(tmp_path):
    job, said = resume_here(tmp_path / "s.sqlite", tmp_path / "out")
    assert said == [] and job.restored_from == 0


def test_a_killed_run_resumes_from_its_snapshot_and_says_nothing(tmp_path):
    store = killed_after_snapshots(tmp_path)
    job, said = resume_here(store, tmp_path / "out")
    assert said == [] and job.restored_from >= 3


def test_a_store_whose_wal_was_deleted_after_a_kill_says_it_lost_the_newer_snapshots(tmp_path):
    """SQLite kept every commit since its last checkpoint in the WAL: the main file holds the
    job record and the first snapshot (checkpointed together), nothing later. The job resumes
    from the first snapshot, saying newer ones may be lost."""
    store = killed_after_snapshots(tmp_path, 4)
    os.remove(f"{store}-wal")
    job, said = resume_here(store, tmp_path / "out")
    assert job.restored_from == 1, said
    assert len(said) == 1 and "job 'lifecycle' resumes from snapshot 1" in said[0], said
    assert repr(str(store)) in said[0] and "WAL file was missing" in said[0]


def test_a_store_that_lost_every_snapshot_the_record_proves_it_took_says_so_and_starts_over(tmp_path):
    """The job record stays when the snapshots go (as when the WAL and -shm files were both
    deleted and the main file had only the record): the store can tell "lost" from "never ran"."""
    store = killed_after_snapshots(tmp_path)
    os.remove(f"{store}-wal")
    os.remove(f"{store}-shm")
    with sqlite3.connect(store) as db:
        db.execute("DELETE FROM verification")
        db.execute("DELETE FROM chunk")
    job, said = resume_here(store, tmp_path / "out")
    assert job.restored_from == 0
    assert len(said) == 1 and said[0].startswith("job 'lifecycle' starts from the beginning: the snapshot store "
                                                 f"{str(store)!r} has lost its snapshots of it (its record says "
                                                 "snapshot 1 was committed"), said
    assert "clear its sinks' output" in said[0]


def test_a_halved_store_is_moved_aside_with_a_warning_and_the_job_starts_over(tmp_path):
    store = killed_after_snapshots(tmp_path)
    os.remove(f"{store}-wal")
    size = os.path.getsize(store)
    with open(store, "r+b") as f:
        f.truncate(size // 2)
    job, said = resume_here(store, tmp_path / "out")
    assert job.restored_from == 0
    assert said[0].startswith(f"snapshot store {str(store)!r} is damaged: the file was truncated ({size // 2} of "
                              f"its {size} bytes are there); it was moved to "), said
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("s.sqlite.damaged-")]
    assert [p.stat().st_size for p in aside if not p.name.endswith("-shm")] == [size // 2], "kept as it was"
    assert len(said) == 2 and said[1].startswith("job 'lifecycle' starts from the beginning"), said
    assert "the file was truncated" in said[1]
    assert SnapshotStore(store).record("job/lifecycle").state == "completed", "the new store works"


def test_an_empty_store_file_says_it_cannot_tell_and_starts_over(tmp_path):
    store = tmp_path / "s.sqlite"
    store.write_bytes(b"")
    job, said = resume_here(store, tmp_path / "out")
    assert job.restored_from == 0
    assert len(said) == 1 and said[0].startswith(f"job 'lifecycle' starts from the beginning: the snapshot store "
                                                 f"{str(store)!r} holds no snapshot of it and cannot tell whether it "
                                                 f"held any (the file was empty (0 bytes))"), said


def test_a_store_with_every_snapshot_torn_says_so_and_starts_over(tmp_path):
    store = killed_after_snapshots(tmp_path)
    with sqlite3.connect(store) as db:  # every chunk of both slots loses half its bytes
        db.execute("UPDATE chunk SET data = substr(data, 1, length(data) / 2)")
    job, said = resume_here(store, tmp_path / "out")
    assert job.restored_from == 0
    torn = [s for s in said if " is torn (its chunks do not match their digest)" in s]
    assert len(torn) == 2, said
    assert said[-1].startswith("job 'lifecycle' starts from the beginning: the snapshot store "), said
    assert "all 2 snapshots of it there are torn or half-written" in said[-1]


def test_a_file_that_is_not_sqlite_is_still_a_clear_error(tmp_path):
    from jetbench import JetbenchError

    store = tmp_path / "s.sqlite"
    store.write_bytes(b"not a database, but some notes" * 200)
    config = JobConfig("exactly_once", snapshot_store=store, resume=True)
    with pytest.raises(JetbenchError, match=f"snapshot store {str(store)!r} is corrupt or unreadable"):
        ExecutionService().submit(snapshot_child.pipeline(str(tmp_path / "out")), name="lifecycle", config=config)
    assert store.read_bytes().startswith(b"not a database"), "left as it was"
