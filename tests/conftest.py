"""Shared fixtures: every engine test runs on 1 and on N cooperative threads."""

from __future__ import annotations

import os
import threading
import time

import pytest
from hypothesis import settings
from hypothesis_budget import examples

from jetbench import ExecutionService

THREAD_COUNTS = [1, 2]

# No progress line or bar from run()/join() in the suite's output, nor in the kernels and
# subprocesses its tests start (they inherit the environment); the tests of progress itself
# ask for it (progress=True, jetbench.notebook.progress.configure).
os.environ.setdefault("JETBENCH_PROGRESS", "0")

# No per-example time limit in hypothesis tests: on this shared 2-core host an example that
# compiles code (fused chains, inlining) can take longer than the 200 ms default under load,
# which says nothing about the property tested. Speed is measured in benchmarks/, not here.
# A test without its own max_examples tries hypothesis's 100, scaled like the others
# (tests/hypothesis_budget.py: the fast lane tries fewer).
settings.register_profile("jetbench", deadline=None, max_examples=examples(100))
settings.load_profile("jetbench")


#: Tests that share something expensive run on one pytest-xdist worker (scripts/test.sh runs the
#: suite with ``-n 2 --dist loadgroup``): a node id starting with a key joins the group named.
#: One Spark session (tests/spark/conftest.py) per run, not one per worker, and a JupyterLab
#: server and Chromium (tests/browser/conftest.py) per half of the browser tests; a module-scoped
#: fixture that builds something (a wheel, an events file) builds it once. Every other test goes to whichever worker
#: is free. (Not ``xdist_group`` marks: pytest-xdist 3.8 groups them by renaming the node id,
#: which pytest 9.2 no longer allows, so they are silently ignored.)
XDIST_GROUPS = {
    "tests/spark/": "spark",
    "tests/notebook/test_kind_walk.py::test_a_spark_kind": "spark",  # starts a Spark session
    "tests/test_readme.py::test_readme_block": "spark",  # the README's Spark block: session()
    # the browser tests in two halves of about the same CPU (JETBENCH_TEST_CPU_LOG), a JupyterLab
    # server and a Chromium each: one per worker, so that neither worker waits on all of them
    "tests/browser/test_builder_browser.py": "browser-a",
    "tests/browser/test_notebooks_browser.py": "browser-a",
    "tests/browser/test_drawings_browser.py": "browser-a",
    "tests/browser/test_timeline_browser.py": "browser-a",
    "tests/browser/": "browser-b",
    "tests/kafka/": "kafka",  # one local broker (tests/kafka/conftest.py)
    "tests/test_wheel_build.py": "wheel",
    "tests/beam/test_nexmark_queries.py": "beam-nexmark-events",
}


def xdist_group(nodeid: str) -> str | None:
    """The group of XDIST_GROUPS the test ``nodeid`` belongs to, or None."""
    return next((group for prefix, group in XDIST_GROUPS.items() if nodeid.startswith(prefix)), None)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: unknown under -p no:xdist
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` with the groups of XDIST_GROUPS: a group is one unit of work, sent
    whole to one worker (the biggest first); each other test is a unit of its own."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(nodeid) or nodeid

    return GroupScheduling(config, log)


#: Tests that start a Spark session by themselves (``session()``, which reuses the active one) run
#: after tests/spark, whose fixture starts it with its own settings: run before, they would start
#: one with the default settings that the fixture would then restart.
AFTER_SPARK_FIXTURE = ("tests/notebook/test_kind_walk.py::test_a_spark_kind", "tests/test_readme.py::test_readme_block")


def pytest_collection_modifyitems(config, items):
    for item in items:
        params = getattr(item, "callspec", None) and item.callspec.params
        if xdist_group(item.nodeid) == "spark" and (
                not params or "jetbench.spark" in str(params.get("code", "jetbench.spark"))):
            item.add_marker(pytest.mark.spark)  # the README's blocks: only those using Spark
    late = [item for item in items if item.nodeid.startswith(AFTER_SPARK_FIXTURE)]
    rest = [item for item in items if not item.nodeid.startswith(AFTER_SPARK_FIXTURE)]
    spark = [i for i, item in enumerate(rest) if item.nodeid.startswith("tests/spark/")]
    if late and spark:
        items[:] = rest[:spark[-1] + 1] + late + rest[spark[-1] + 1:]


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


# ------------------------------------------------------------------ where the suite's CPU goes

def _tree_cpu_s() -> float:
    """CPU seconds used so far by this process, its reaped children and its live descendants (a
    Spark JVM, a JupyterLab server, Chromium): what a test costs the machine, whatever the load."""
    import resource

    used = sum(getattr(resource.getrusage(who), f)
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN) for f in ("ru_utime", "ru_stime"))
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, tuple[int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        children.setdefault(int(fields[1]), []).append(pid)
        # utime, stime of the live process and cutime, cstime of the children it reaped (the
        # Python workers a Spark JVM's daemon forks)
        stats[pid] = (int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14]))
    todo = list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        used += sum(stats.get(pid, (0, 0))) / tick
        todo.extend(children.get(pid, []))
    return used


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With JETBENCH_TEST_CPU_LOG=FILE, append a line per test: node id, engine, wall seconds and
    CPU seconds of the test's process tree (setup, call and teardown), the pytest-xdist worker
    and the wall-clock time it ended (epoch s), to see where the suite's time goes on a loaded
    machine and how the workers' queues end (scripts/test.sh --durations only shows wall time)."""
    log = os.environ.get("JETBENCH_TEST_CPU_LOG")
    if not log:
        yield
        return
    wall, cpu = time.monotonic(), _tree_cpu_s()
    yield
    wall, cpu = time.monotonic() - wall, _tree_cpu_s() - cpu
    with open(log, "a") as f:
        engine = "pure" if os.environ.get("JETBENCH_PURE_PYTHON") == "1" else "compiled"
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        f.write(f"{item.nodeid}\t{engine}\t{wall:.2f}\t{cpu:.2f}\t{worker}\t{time.time():.1f}\n")
