"""Shared fixtures: every engine test runs on 1 and on N cooperative threads."""

from __future__ import annotations

import os
import threading
import time

import pytest
from hypothesis import settings

from jetbench import ExecutionService

THREAD_COUNTS = [1, 2]

# No progress line or bar from run()/join() in the suite's output, nor in the kernels and
# subprocesses its tests start (they inherit the environment); the tests of progress itself
# ask for it (progress=True, jetbench.notebook.progress.configure).
os.environ.setdefault("JETBENCH_PROGRESS", "0")

# No per-example time limit in hypothesis tests: on this shared 2-core host an example that
# compiles code (fused chains, inlining) can take longer than the 200 ms default under load,
# which says nothing about the property tested. Speed is measured in benchmarks/, not here.
settings.register_profile("jetbench", deadline=None)
settings.load_profile("jetbench")


@pytest.fixture(params=THREAD_COUNTS, ids=lambda n: f"threads={n}")
def threads(request) -> int:
    return request.param


@pytest.fixture
def service(threads) -> ExecutionService:
    return ExecutionService(cooperative_threads=threads)


def jetbench_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("jetbench.")]


@pytest.fixture(autouse=True)
def no_leaked_threads():
    """Fail any test that leaves a jetbench thread running."""
    yield
    deadline = time.monotonic() + 2.0
    while jetbench_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    leaked = jetbench_threads()
    assert not leaked, f"leaked threads: {leaked}"
