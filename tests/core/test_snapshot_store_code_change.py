"""Changed code is noticed (issue 36, item 4): each snapshot keeps a fingerprint of every
vertex's code; a job resumed with a different one (same vertex names, an edited function) warns
naming the vertex and what changed, or is refused with ``on_code_change="refuse"``; Jet's job
upgrade (an exported snapshot started into a changed pipeline) stays possible and says nothing
with ``on_code_change="allow"``. The edited code runs in real processes: the child's source
file is written again with another line, as a user edits a script between two runs."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

from jetbench import CodeChangedError, ExecutionService, JobCancelled
from jetbench.core.code_fingerprint import fingerprint, vertex_fingerprints
from jetbench.core.job_config import JobConfig
from jetbench.core.snapshot_store import SnapshotStore, SnapshotWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))

import snapshot_child  # noqa: E402
from snapshot_child import EXPECTED, N, child_script, run_child  # noqa: E402

#: the vertices holding the user function the edit changes (the aggregate operation's two
#: stages), as the warning names them
CHANGED = ("vertex 'group-aggregate-accumulate': argument 'op' changed; "
           "vertex 'group-aggregate-combine': argument 'op' changed")


def _killed(tmp_path: Path, script: Path) -> Path:
    store = tmp_path / "s.sqlite"
    run_child(script, store, tmp_path / "out", "snapshots:3", kill_on="snapshots")
    assert SnapshotStore(store).owners()["job/lifecycle"] >= 3
    return store


def test_a_resume_with_an_edited_state_function_is_refused_when_asked_and_the_same_code_goes_on(tmp_path):
    v1, v2 = child_script(tmp_path, "x"), child_script(tmp_path, "x * 2")
    store = _killed(tmp_path, v1)
    lines, err, code = run_child(v2, store, tmp_path / "out", "none", "refuse")
    assert code == 1 and "CodeChangedError: job 'lifecycle': the code of 2 vertices differs from when the snapshot it " \
                         f"resumes from in the snapshot store {str(store)!r} was taken ({CHANGED}). It was refused (on_code_change='refuse')" in err, err
    assert SnapshotStore(store).owners()["job/lifecycle"] >= 3, "refused before anything ran: the snapshots stay"
    lines, err, code = run_child(v1, store, tmp_path / "out", "none", "refuse")  # the code that took it
    assert code == 0 and "Warning" not in err, err
    assert int(lines[0].split()[1]) >= 3 and lines[-1] == f"result {EXPECTED}", lines


def test_a_resume_with_an_edited_state_function_warns_naming_the_vertex(tmp_path):
    v1, v2 = child_script(tmp_path, "x"), child_script(tmp_path, "x * 2")
    store = _killed(tmp_path, v1)
    lines, err, code = run_child(v2, store, tmp_path / "out", "none")
    assert code == 0, err
    assert f"SnapshotWarning: job 'lifecycle': the code of 2 vertices differs from when the snapshot it resumes from " \
           f"in the snapshot store {str(store)!r} was taken ({CHANGED}). The state saved by the old code goes on with the new" in err, err
    doubled = " ".join(sorted(f"{k}={2 * sum(x for x in range(N) if x % 7 == k)}" for k in range(7)))
    assert int(lines[0].split()[1]) >= 3 and lines[-1] not in (f"result {EXPECTED}", f"result {doubled}"), \
        "the output matches neither version: what the warning is for"


def test_an_edit_that_leaves_the_code_alone_says_nothing(tmp_path):
    """A comment, a blank line, a function moved down its file: the bytecode is the same."""
    v1 = child_script(tmp_path, "x")
    moved = child_script(tmp_path, "(x)  # the same, written otherwise")
    moved.write_text("\n\n# a comment above everything\n" + moved.read_text())
    store = _killed(tmp_path, v1)
    lines, err, code = run_child(moved, store, tmp_path / "out", "none", "refuse")
    assert code == 0 and "Warning" not in err, err
    assert lines[-1] == f"result {EXPECTED}"


@pytest.mark.parametrize("first_pure", [True, False])
def test_a_snapshot_of_one_build_resumes_in_the_other_without_a_word(tmp_path, first_pure):
    """jetbench's own processors are fingerprinted by name: the compiled and the interpreted
    build agree, and a store written by one is resumed by the other (same code, refuse on)."""
    script = child_script(tmp_path)
    store = tmp_path / "s.sqlite"
    run_child(script, store, tmp_path / "out", "snapshots:3", kill_on="snapshots", pure=first_pure)
    lines, err, code = run_child(script, store, tmp_path / "out", "none", "refuse", pure=not first_pure)
    assert code == 0 and "Warning" not in err, err
    assert int(lines[0].split()[1]) >= 3 and lines[-1] == f"result {EXPECTED}", lines


def _double(x):
    return x * 2


def test_jets_job_upgrade_an_exported_snapshot_into_a_changed_pipeline(tmp_path):
    store = SnapshotStore(tmp_path / "s.sqlite")
    out = str(tmp_path / "out")
    old = ExecutionService().submit(snapshot_child.pipeline(out), name="v1",
                                    config=JobConfig("exactly_once", snapshot_interval_ms=60_000, snapshot_store=store))
    exported = old.export_snapshot("v1-export")
    old.cancel()
    with pytest.raises(JobCancelled):
        old.join(30)

    def upgrade(on_change):
        config = JobConfig("exactly_once", snapshot_store=store, initial_snapshot="v1-export",
                           on_code_change=on_change)
        return ExecutionService().submit(snapshot_child.pipeline(out, _double), name="v2", config=config)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the upgrade, asked for: not a word
        job = upgrade("allow")
        job.join(60)
    assert job.restored_from == exported.snapshot_id
    with pytest.warns(SnapshotWarning, match=r"the code of 2 vertices differs from when snapshot 'v1-export' in the "
                                             r"snapshot store .* was taken \(" + CHANGED.replace("'", ".")):
        upgrade("warn").join(60)
    with pytest.raises(CodeChangedError, match="on_code_change='allow' if the change is an upgrade"):
        upgrade("refuse")


def test_fingerprints_are_of_code_not_of_data_nor_of_where_it_is():
    dag = snapshot_child.pipeline("/nonexistent").to_dag()
    again = snapshot_child.pipeline("/elsewhere").to_dag()  # another path: data, not code
    first = {v.name: vertex_fingerprints(v.supplier) for v in dag.vertices}
    assert first == {v.name: vertex_fingerprints(v.supplier) for v in again.vertices}
    changed = {v.name: vertex_fingerprints(v.supplier) for v in snapshot_child.pipeline("/x", _double).to_dag().vertices}
    assert [v for v in first if first[v] != changed[v]] == ["group-aggregate-accumulate", "group-aggregate-combine"]
    namespace: dict = {"__name__": "__main__"}
    exec("K = 3\ndef helper(x):\n    return x + K\ndef fn(x):\n    return helper(x) * 2", namespace)
    before = fingerprint(namespace["fn"])
    exec("def helper(x):\n    return x - K", namespace)  # fn untouched, the helper it calls edited
    assert fingerprint(namespace["fn"]) != before
    exec("K = 4", namespace)  # a global's value is data
    exec("def helper(x):\n    return x + K", namespace)
    assert fingerprint(namespace["fn"]) == before
