"""Kafka in and out, the process killed with SIGKILL and resumed from its store by new processes:
under exactly-once a ``read_committed`` consumer of the output sees exactly the records of the
failure-free run; under at-least-once none is missing."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from child_lines import next_line_words

from jetbench.core.snapshot_store import SnapshotStore
from jetbench.kafka.local_broker import create_topic

from .helpers import produce, read_topic

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

N = 4000
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def expected_values() -> Counter[str]:
    return Counter(f"k{i % 13}:{i}:{i * 3}" for i in range(N))


def _start(args: list[str]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, str(HERE / "kill_child.py"), *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def run_with_kills(bootstrap, topic_name, tmp_path, guarantee: str, modes: list[str], rng: random.Random):
    topic_in, topic_out = topic_name("in"), topic_name("out")
    produce(bootstrap, topic_in, [(i % 3, 10_000 + i, f"k{i % 13}", i) for i in range(N)], partitions=3)
    create_topic(bootstrap, topic_out, 3)
    store = tmp_path / "s.sqlite"
    history: list[tuple[str, int, str]] = []  # (mode, restored from, how it ended)
    for mode in [*modes, "none"]:
        child = _start([bootstrap, topic_in, topic_out, str(store), guarantee, mode])
        try:
            line = next_line_words(child, 60)
            restored = int(line[1]) if line[:1] == ["running"] else -1
            if mode == "random":
                try:
                    child.wait(rng.uniform(0.2, 2.5))
                except subprocess.TimeoutExpired:
                    child.send_signal(signal.SIGUSR1)
            _, err = child.communicate(timeout=180)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        how = ("killed" if child.returncode == -signal.SIGKILL else "finished" if child.returncode == 0
               else f"failed with status {child.returncode}")
        history.append((mode, restored, how))
        assert not how.startswith("failed"), f"{history}\n{err}"
        if how == "finished":
            break
    assert history[-1][2] == "finished", history
    assert any(how == "killed" for _, _, how in history), f"no process was killed mid-job: {history}"
    assert SnapshotStore(store).owners() == {}, "the finished job forgot its snapshots"
    return Counter(value for _, _, _, value in read_topic(bootstrap, topic_out, 3)), history


@pytest.mark.parametrize("seed", [3, 41, 977])
def test_exactly_once_a_read_committed_consumer_sees_exactly_the_failure_free_records(
        bootstrap, topic_name, tmp_path, seed):
    rng = random.Random(seed)
    modes = ["random", rng.choice(["after-commit", "before-commit"]), "random"]
    got, history = run_with_kills(bootstrap, topic_name, tmp_path, "exactly_once", modes, rng)
    expected = expected_values()
    duplicated, lost = got - expected, expected - got
    assert got == expected, (f"seed {seed}, runs {history}: {sum(duplicated.values())} duplicated "
                             f"{list(duplicated)[:3]}, {sum(lost.values())} lost {list(lost)[:3]}")
    assert any(restored > 0 for _, restored, _ in history[1:]), f"no process resumed from a snapshot: {history}"


@pytest.mark.parametrize("mode", ["after-commit", "before-commit"])
def test_exactly_once_killed_around_the_phase_two_commit(bootstrap, topic_name, tmp_path, mode):
    got, history = run_with_kills(bootstrap, topic_name, tmp_path, "exactly_once", [mode, mode], random.Random(0))
    assert got == expected_values(), history


@pytest.mark.parametrize("seed", [5, 88])
def test_at_least_once_loses_nothing(bootstrap, topic_name, tmp_path, seed):
    rng = random.Random(seed)
    got, history = run_with_kills(bootstrap, topic_name, tmp_path, "at_least_once", ["random", "random"], rng)
    expected = expected_values()
    lost = expected - got
    assert not lost, f"seed {seed}, runs {history}: {sum(lost.values())} lost {list(lost)[:3]}"
