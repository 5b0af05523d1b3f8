"""The child process of the store lifecycle tests (`test_snapshot_store_damage.py`,
`test_snapshot_store_completion.py`, `test_snapshot_store_code_change.py`): a paced
exactly-once job, a keyed sum of ``weight(x)`` over N numbers into a collect sink (printed as
``result ...`` at the end), resumed from its store (``resume=True``) and killed by the test
with SIGKILL where it says.

    python snapshot_child.py STORE OUT HOOK [ON_CODE_CHANGE]

The tests copy this file with the line marked ``WEIGHT`` edited (the
"edited" state function of a new version of the code). ``HOOK``: ``none`` (run to the end),
``snapshots:N`` (print ``snapshots`` after N snapshots and wait to be killed), ``mid-finish``
(pause inside the transaction that records the job's end and deletes its snapshots, after
``paused``), ``after-finish`` (pause right after that transaction committed). Every 50th
number is also appended to ``OUT/side-effects.log`` by a map: a side effect no restore takes
back, which shows whether the job ran again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from jetbench import ExecutionService, Pipeline, aggregate, sinks, sources
from jetbench.core.job_config import JobConfig
from jetbench.core.snapshot_store import SnapshotStore

N, RATE, KEYS = 3000, 6000, 7
#: the rate of a run the test kills after some snapshots: slow enough (N items in 10 s) that the
#: job is still running when they are stored, however loaded the machine (at RATE it lasts 0.5 s,
#: and a loaded machine stored only 2 snapshots in that time); a rate is data, not code, so the
#: resumed run at RATE has the same fingerprint
KILLED_RATE = 300


def weight(x):
    return x  # WEIGHT: the tests write other versions of this line


def pipeline(out: str, weight_fn=weight, rate: float = RATE) -> Pipeline:
    os.makedirs(out, exist_ok=True)
    log = os.path.join(out, "side-effects.log")

    def side_effect(x):
        if x % 50 == 0:
            with open(log, "a") as f:
                f.write(f"{x}\n")
        return x

    p = Pipeline()
    (p.read_from(sources.generator(rate, timestamped=False, count=N))
        .map(side_effect)
        .group_by(lambda x: x % KEYS).aggregate(aggregate.summing(weight_fn))
        .map(lambda kv: f"{kv[0]}={kv[1]}")
        .write_to(sinks.collect()))
    return p


# -- the parent's side: the child's code, edited, and a run of it -------------------------------

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXPECTED = " ".join(sorted(f"{k}={sum(x for x in range(N) if x % 7 == k)}" for k in range(7)))


def child_script(tmp_path: Path, weight: str = "x") -> Path:
    """The child's code, with ``weight(x)`` returning ``weight``."""
    script = tmp_path / f"child_{len(list(tmp_path.glob('child_*.py')))}.py"
    code = (HERE / "snapshot_child.py").read_text()
    marked = "return x  # WEIGHT"
    assert marked in code
    script.write_text(code.replace(marked, f"return {weight}  # WEIGHT"))
    return script


def run_child(script: Path, store: Path, out: Path, hook: str, *extra: str, kill_on: str | None = None,
              timeout: float = 60, pure: bool | None = None) -> tuple[list[str], str, int]:
    """Run the child (``pure``: with JETBENCH_PURE_PYTHON 1 or 0; None: as this process was
    started); with ``kill_on``, SIGKILL it once it prints a line starting so. Its stdout
    lines, its stderr and its return code."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if pure is not None:
        env["JETBENCH_PURE_PYTHON"] = "1" if pure else "0"
    child = subprocess.Popen([sys.executable, str(script), str(store), str(out), hook, *extra], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines: list[str] = []
    try:
        assert child.stdout is not None
        if kill_on is not None:
            # the timeout holds while waiting for the line too: a child that never prints it
            # is killed by the timer, its stdout ends, and the assertion below says what it printed
            timer = threading.Timer(timeout, child.kill)
            timer.start()
            try:
                for line in child.stdout:
                    lines.append(line.strip())
                    if line.startswith(kill_on):
                        child.send_signal(signal.SIGKILL)
                        break
            finally:
                timer.cancel()
        out_text, err = child.communicate(timeout=timeout)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    lines += out_text.splitlines()
    if kill_on is not None:
        assert any(line.startswith(kill_on) for line in lines), \
            f"the child never printed {kill_on!r} (within {timeout} s): {lines}\n{err}"
        assert child.returncode == -signal.SIGKILL, f"the child was not killed: {lines}\n{err}"
    return lines, err, child.returncode


# -- the child ---------------------------------------------------------------------------------


def main() -> None:
    store_path, out, hook = sys.argv[1], sys.argv[2], sys.argv[3]
    on_change = sys.argv[4] if len(sys.argv) > 4 else "warn"
    os.makedirs(out, exist_ok=True)
    store = SnapshotStore(store_path)
    config = JobConfig("exactly_once", snapshot_interval_ms=20, snapshot_store=store, resume=True,
                       on_code_change=on_change)
    job = ExecutionService(cooperative_threads=2).submit(pipeline(out, rate=KILLED_RATE if hook.startswith("snapshots:") else RATE),
                                                          name="lifecycle", config=config)
    print("running", job.restored_from, type(job).__name__, job.status.value, flush=True)
    if hook in ("mid-finish", "after-finish"):
        finishing = []

        def trace(sql: str) -> None:
            if sql.startswith("DELETE FROM chunk WHERE owner") and "slot" not in sql:
                finishing.append(sql)
                if hook == "mid-finish":
                    print("paused", flush=True)
                    time.sleep(60)
            elif hook == "after-finish" and finishing and sql.startswith("PRAGMA wal_checkpoint"):
                print("paused", flush=True)
                time.sleep(60)

        with store._connect() as db:  # the store's one connection, which its job writes with
            db.set_trace_callback(trace)
    elif hook.startswith("snapshots:"):
        while len(job.snapshot_history) < int(hook.split(":")[1]):
            if job.is_done:  # it ended first: say so (the test fails), rather than wait for ever
                print("ended-before-snapshots", len(job.snapshot_history), flush=True)
                sys.exit(3)
            time.sleep(0.002)
        print("snapshots", flush=True)
        time.sleep(60)
    result = job.join(60)
    print("result", " ".join(sorted(result or [])), flush=True)


if __name__ == "__main__":
    main()
