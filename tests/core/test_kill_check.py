"""Exactly-once under SIGKILL at the worst moments, the harsher check of issue 36.

The job and the killing parent are ``benchmarks/kill_check.py`` (its docstring says what they
do): an items source, a keyed ``flat_map_stateful`` branch (3 instances behind a partitioned
edge, an order-sensitive hash chain per key, an event-time timer per key) and a keyed sliding
window branch, into files sinks of 2 and 3 instances over unicast edges; child processes killed
with SIGKILL during start-up, just after their job starts, at random, when the store's WAL grows,
right after a snapshot's commit and inside a sink's phase 2, each new one resuming from the
store. Here a fixed set of seeds; ``python benchmarks/kill_check.py --seeds 1000`` runs more.

Seed 29 duplicated 670 lines with the engine before 715e97d (compiled build: a producer sent a
chunk a woken sink thread had already grown a second time; ``python benchmarks/kill_check.py
--seeds 30 --root <a worktree of 8252248>``, 1 seed in 30). The race it hit depends on timing, so
that seed is no deterministic reproduction: ``tests/core/test_routing.py``'s
``test_a_producer_never_reads_a_chunk_again_once_a_queue_took_it`` is.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _load() -> object:
    spec = importlib.util.spec_from_file_location("kill_check_script", BENCHMARKS / "kill_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


kill_check = _load()
N = kill_check.N  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def expected():
    return kill_check.expected_lines(N)  # type: ignore[attr-defined]


def _check(seed: int, build: str, guarantee: str, tmp_path: Path, expected) -> None:
    env = kill_check.child_env(build)  # type: ignore[attr-defined]
    r = kill_check.check_seed(seed, N, guarantee, tmp_path / "work", env, expected)  # type: ignore[attr-defined]
    context = f"seed {seed} ({build}, {guarantee}): runs {r.runs}"
    assert not r.error, f"{context}: {r.error}"
    assert r.missing == 0, f"{context}: {r.missing} lines missing, e.g. {r.sample}"
    if guarantee == "exactly_once":
        assert r.duplicated == 0, f"{context}: {r.duplicated} lines duplicated, e.g. {r.sample}"


@pytest.mark.own_build
def test_the_expected_output_is_what_a_failure_free_run_writes(tmp_path, expected):
    """The check's expectation (computed without the engine) is the job's own output."""
    out = tmp_path / "out"
    subprocess.run([sys.executable, str(BENCHMARKS / "kill_check.py"), "reference", "--n", str(N), "--out", str(out)],
                   env=kill_check.child_env("compiled"), check=True, timeout=300)  # type: ignore[attr-defined]
    assert kill_check.lines(out) == expected  # type: ignore[attr-defined]
    assert len(list(out.glob("stateful/part-*"))) >= 2 and len(list(out.glob("windows/part-*"))) >= 3


@pytest.mark.slow
@pytest.mark.own_build
@pytest.mark.parametrize("seed", range(30))
def test_exactly_once_survives_sigkill_at_its_worst_moments_compiled(seed, tmp_path, expected):
    _check(seed, "compiled", "exactly_once", tmp_path, expected)


@pytest.mark.slow
@pytest.mark.own_build
@pytest.mark.parametrize("seed", [29, 101, 102, 103])
def test_exactly_once_survives_sigkill_at_its_worst_moments_pure(seed, tmp_path, expected):
    _check(seed, "pure", "exactly_once", tmp_path, expected)


@pytest.mark.slow
@pytest.mark.own_build
@pytest.mark.parametrize("seed", [29, 201, 202, 203])
def test_at_least_once_loses_nothing_under_sigkill(seed, tmp_path, expected):
    _check(seed, "compiled", "at_least_once", tmp_path, expected)


def test_a_finished_files_sink_commits_its_last_epoch_in_the_terminal_snapshot_at_once(tmp_path):
    """A job whose snapshots are a minute apart ends within seconds all the same: once every
    instance finished, the coordinator stores the terminal snapshot at once (their final states),
    and in its phase 2 each files sink instance commits its last epoch; nothing stays hidden."""
    from jetbench import ExecutionService, JobConfig

    out = tmp_path / "out"
    config = JobConfig("exactly_once", snapshot_interval_ms=60_000, snapshot_store=str(tmp_path / "s.sqlite"))
    job = ExecutionService(cooperative_threads=2).submit(kill_check.pipeline(2000, str(out)).to_dag(),  # type: ignore[attr-defined]
                                                         name="terminal", config=config)
    job.join(30)  # well before the first periodic snapshot
    assert kill_check.lines(out) == kill_check.expected_lines(2000)  # type: ignore[attr-defined]
    assert [p.name for p in out.rglob(".*")] == []
    assert [r.snapshot_id for r in job.snapshot_history] == [1] and job.snapshot_history[0].success
