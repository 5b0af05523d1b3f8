"""Exactly-once under SIGKILL: a job killed again and again at its worst moments, each new
process resuming it from the snapshot store, must end with the failure-free run's output.

The job (`pipeline`): ``sources.items(range(n))`` (one instance) -> events ``(key, ts, value,
seq)`` over 61 string keys (so Python's randomized ``str`` hash routes them differently in
every process) -> event time; then two branches, each into a files sink of its own:

* a keyed ``flat_map_stateful`` stage (3 instances, behind a partitioned edge) keeping per key a
  count, a sum and an order-sensitive hash chain, one line per item, and an event-time timer per
  key (re-armed 3 s after each item) that writes one line per key at the end; its lines go over a
  unicast edge to a files sink of 2 instances;
* a keyed sliding window (2 s every 500 ms) of (count, sum), its results into a files sink of 3
  instances.

A parent process (`check_seed`) runs the job in child processes with
``JobConfig(guarantee, snapshot_interval_ms=50 or 100, resume=True, max_restarts=0)`` and kills
each with SIGKILL at a moment drawn from the seed:

* ``startup``: 0-300 ms after the process started (often before its job runs);
* ``early``: 0-30 ms after its job started;
* ``random``: at a random time while its job runs;
* ``wal``: the instant the snapshot store's WAL file grows (a snapshot being committed);
* ``commit``: the child kills itself right after the k-th snapshot is committed to the store,
  before phase 2 opens;
* ``phase2``: the child kills itself inside a files sink's k-th ``snapshot_commit_finish``
  (phase 2 half done: some instances committed, others not).

then runs it once more to the end and compares the lines of every part file, as a multiset, with
what the job writes (`expected_lines`, computed without the engine; the same as a failure-free
run's). Exactly-once: equal. At-least-once: nothing missing (every event's line,
every key's timer line, every window; counts may include replayed items).

``python benchmarks/kill_check.py --seeds 1000 --build compiled --guarantee exactly_once``
prints a table (seeds, kills, kills by moment, differences, missing, duplicated).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KEYS = 61
#: events per run: with 50-100 ms snapshots, a run of the job takes 5 to 15 snapshots
N = 20_000
MOMENTS = ("startup", "early", "random", "wal", "commit", "phase2")


# -- the job ----------------------------------------------------------------------------------


def event(seq: int) -> tuple[str, int, int, int]:
    """Event ``seq``: (key, event time ms, value, seq); two events per millisecond."""
    return f"k{(seq * 37) % KEYS:02d}", seq // 2, (seq * 2654435761) % 1000, seq


def new_state() -> list[int]:
    return [0, 0, 17]  # count, sum, hash chain


def on_event(k: Any, e: tuple[str, int, int, int]) -> list[str]:
    s = k.state
    s[0] += 1
    s[1] += e[2]
    s[2] = (s[2] * 1_000_003 + e[2] * 7 + e[3]) % 2_305_843_009_213_693_951  # order-sensitive
    k.timer = k.time + 3000
    return [f"s {e[0]} {e[3]} {s[0]} {s[1]} {s[2]}"]


def on_timer(k: Any) -> list[str]:
    s = k.state
    return [f"t {k.key} {s[0]} {s[1]} {s[2]}"]


def event_key(e: tuple[str, int, int, int]) -> str:
    return e[0]


def event_ts(e: tuple[str, int, int, int]) -> int:
    return e[1]


def event_value(e: tuple[str, int, int, int]) -> int:
    return e[2]


def window_line(r: Any) -> str:
    return f"w {r.start} {r.key} {r.value[0]} {r.value[1]}"


def pipeline(n: int, out: str) -> Any:
    """The job: events -> keyed state with timers -> ``out/stateful``; events -> sliding windows
    -> ``out/windows``."""
    from jetbench import Pipeline, aggregate, sinks, sources
    from jetbench.processors.flat_map_stateful import FlatMapStatefulSpec
    from jetbench.window import sliding

    p = Pipeline()
    events = p.read_from(sources.items(range(n))).set_local_parallelism(1).map(event).set_local_parallelism(1) \
        .add_timestamps(event_ts, allowed_lag=5).set_local_parallelism(1)
    stateful = events.apply(FlatMapStatefulSpec(event_key, new_state, on_event, on_timer)).set_local_parallelism(3)
    stateful.write_to(sinks.files(os.path.join(out, "stateful"))).set_local_parallelism(2)
    events.group_by(event_key).window(sliding(2000, 500)) \
        .aggregate(aggregate.all_of(aggregate.counting(), aggregate.summing(event_value))) \
        .map(window_line).write_to(sinks.files(os.path.join(out, "windows"))).set_local_parallelism(3)
    return p


def expected_lines(n: int) -> Counter[str]:
    """What the job writes, computed without the engine: every event's line, each key's timer
    line at the end, and every (sliding window, key) with its count and sum."""
    from types import SimpleNamespace

    out: Counter[str] = Counter()
    states: dict[str, Any] = {}
    windows: dict[tuple[int, str], list[int]] = {}
    for seq in range(n):
        e = event(seq)
        k = states.get(e[0])
        if k is None:
            k = states[e[0]] = SimpleNamespace(key=e[0], state=new_state(), timer=None, time=0)
        k.time = e[1]
        out.update(on_event(k, e))
        last = e[1] // 500 * 500
        for start in range(last - 1500, last + 1, 500):
            acc = windows.setdefault((start, e[0]), [0, 0])
            acc[0] += 1
            acc[1] += e[2]
    for k in states.values():
        out.update(on_timer(k))
    for (start, key), (count, total) in windows.items():
        out[window_line(SimpleNamespace(start=start, key=key, value=(count, total)))] += 1
    return out


def lines(out: Path) -> Counter[str]:
    """Every line of every part file under ``out`` (committed files only: not in-progress or
    pending ones, whose names start with a dot)."""
    return Counter(line for part in sorted(out.glob("*/part-*")) for line in part.read_text().splitlines())


def identity(line: str) -> str:
    """What at-least-once must not lose: an event's line by its seq, a timer's by its key, a
    window by its start and key."""
    f = line.split()
    return f"s {f[2]}" if f[0] == "s" else " ".join(f[:3])


# -- the child: one process running the job -----------------------------------------------------


def child(n: int, store: str, out: str, guarantee: str, interval: int, hook: str) -> None:
    """Run the job (resuming it from ``store``); ``hook`` (``commit:k``, ``phase2:k`` or empty):
    kill this process with SIGKILL at that moment."""
    from jetbench import ExecutionService
    from jetbench.core.compiled import build_info
    from jetbench.core.job_config import JobConfig

    wanted = os.environ.get("KILLCHECK_BUILD", "")
    if wanted and build_info().kind != wanted:  # e.g. a stale compiled build falls back to pure
        raise SystemExit(f"the child runs the {build_info().kind} build, not {wanted}: {build_info().reason}")
    if hook:
        _install_hook(hook)
    if os.environ.get("KILLCHECK_LOG"):
        _install_log(os.environ["KILLCHECK_LOG"])
    config = JobConfig(guarantee, snapshot_interval_ms=interval, snapshot_store=store, resume=True, max_restarts=0)
    job = ExecutionService(cooperative_threads=2).submit(pipeline(n, out).to_dag(), name="killcheck", config=config)
    restored = getattr(job, "restored_from", None)
    if restored is None:  # the store records the job as completed (a kill came after its end)
        print("completed", flush=True)
        return
    print("running", restored, flush=True)
    if os.environ.get("KILLCHECK_LOG"):
        with open(os.environ["KILLCHECK_LOG"], "a") as log:
            log.write(f"{os.getpid()} running restored {restored}\n")
    job.join(600)
    print("done", flush=True)


def _install_log(path: str) -> None:
    import pickle

    from jetbench.core.snapshot_store import SnapshotStore

    write = SnapshotStore.write
    log = open(path, "a")  # noqa: SIM115

    def write_logged(self: Any, owner: str, data: Any, *args: Any, **kwargs: Any) -> None:
        write(self, owner, data, *args, **kwargs)
        parts = []
        for name, state in sorted(data.vertices.items()):
            if name.startswith(("items", "files")):
                for k, e in enumerate(state.entries):
                    entries = pickle.loads(e) if isinstance(e, bytes) and e else e
                    parts.append(f"{name}#{k}={[v for _, v in entries]}{'D' if k in state.done else ''}")
        log.write(f"{os.getpid()} stored {data.snapshot_id} {' '.join(parts)}\n")
        log.flush()

    SnapshotStore.write = write_logged  # type: ignore[method-assign]
    log.write(f"{os.getpid()} start\n")
    log.flush()


def _install_hook(hook: str) -> None:
    from jetbench.core.snapshot_store import SnapshotStore
    from jetbench.processors.files_sink import FilesSinkP

    moment, _, count = hook.partition(":")
    left = [int(count)]

    def countdown() -> None:
        left[0] -= 1
        if left[0] <= 0:
            os.kill(os.getpid(), signal.SIGKILL)

    if moment == "commit":
        write = SnapshotStore.write

        def write_then_die(self: Any, owner: str, data: Any, *args: Any, **kwargs: Any) -> None:
            write(self, owner, data, *args, **kwargs)
            if owner.startswith("job/"):
                countdown()

        SnapshotStore.write = write_then_die  # type: ignore[method-assign]
    elif moment == "phase2":
        finish = FilesSinkP.snapshot_commit_finish

        def finish_then_die(self: Any, success: bool) -> bool:
            done = finish(self, success)
            if done:
                countdown()
            return done

        FilesSinkP.snapshot_commit_finish = finish_then_die  # type: ignore[method-assign]
    else:
        raise SystemExit(f"unknown hook {hook!r}")


# -- the parent: kills, resumes, compares -------------------------------------------------------


@dataclass
class SeedResult:
    seed: int
    kills: Counter[str] = field(default_factory=Counter)
    runs: list[str] = field(default_factory=list)
    missing: int = 0
    duplicated: int = 0
    differences: int = 0  # exactly-once: lines in one multiset and not the other
    error: str = ""
    sample: list[str] = field(default_factory=list)


def _wait_running(proc: subprocess.Popen[str], timeout: float) -> int | None:
    """The snapshot id the child's job restored (0: none) once it runs; None if it ended first."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            raise TimeoutError(f"the child printed nothing within {timeout} s")
        words = proc.stdout.readline().split()
    return int(words[1]) if words[:1] == ["running"] else None


def _kill_when_wal_grows(proc: subprocess.Popen[str], wal: Path, growths: int, limit: float) -> bool:
    """SIGKILL ``proc`` the ``growths``-th time the WAL file is seen to grow; False if it ended."""
    deadline = time.monotonic() + limit
    last = wal.stat().st_size if wal.exists() else 0
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            size = wal.stat().st_size
        except FileNotFoundError:
            size = 0
        if size > last:
            growths -= 1
            if growths <= 0:
                proc.send_signal(signal.SIGKILL)
                return True
        last = size
        time.sleep(0.0002)
    return False


def check_seed(seed: int, n: int, guarantee: str, work: Path, env: dict[str, str],
               expected: Counter[str], max_kills: int = 4) -> SeedResult:
    """Run one seed: kills drawn from ``seed``, then a last run to the end; compare."""
    rng = random.Random(seed)
    interval = rng.choice((50, 100))
    kills = [rng.choice(MOMENTS) for _ in range(rng.randint(1, max_kills))]
    result = SeedResult(seed)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    store, out = work / "store.sqlite", work / "out"
    wal = Path(str(store) + "-wal")
    plan = [*kills, "end"]
    for moment in plan:
        hook = ""
        if moment == "commit":
            hook = f"commit:{rng.randint(1, 4)}"
        elif moment == "phase2":
            hook = f"phase2:{rng.randint(1, 10)}"
        cmd = [sys.executable, __file__, "child", "--n", str(n), "--store", str(store), "--out", str(out),
               "--guarantee", guarantee, "--interval", str(interval), "--hook", hook]
        proc = subprocess.Popen(cmd, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        killed = False
        try:
            if moment == "startup":
                try:
                    proc.wait(rng.uniform(0.0, 0.3))
                except subprocess.TimeoutExpired:
                    proc.send_signal(signal.SIGKILL)
                    killed = True
            else:
                restored = _wait_running(proc, 120)
                if restored is not None and moment == "early":
                    killed = _kill_after(proc, rng.uniform(0.0, 0.03))
                elif restored is not None and moment == "random":
                    killed = _kill_after(proc, rng.uniform(0.0, 0.8))
                elif restored is not None and moment == "wal":
                    killed = _kill_when_wal_grows(proc, wal, rng.randint(1, 6), 120)
            _, err = proc.communicate(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if proc.returncode == -signal.SIGKILL:
            killed = True
        elif proc.returncode != 0:
            result.error = f"{moment}: exit {proc.returncode}: {err[-1500:]}"
            return result
        if killed:
            result.kills[moment] += 1
            result.runs.append(f"{moment}{'(' + hook + ')' if hook else ''}:killed")
            continue
        result.runs.append(f"{moment}:finished")  # a kill that came too late finishes the job too
        break
    else:
        result.error = "no run finished"
        return result
    got = lines(out)
    if guarantee == "exactly_once":
        extra, lost = got - expected, expected - got
        result.duplicated = sum(extra.values())
        result.missing = sum(lost.values())
        result.differences = result.duplicated + result.missing
        result.sample = sorted(extra)[:3] + sorted(lost)[:3]
    else:
        have = {identity(line) for line in got}
        lost_ids = {identity(line) for line in expected} - have
        result.missing = len(lost_ids)
        result.duplicated = sum((Counter(identity(x) for x in got.elements())
                                 - Counter(identity(x) for x in expected.elements())).values())
        result.sample = sorted(lost_ids)[:3]
    return result


def _kill_after(proc: subprocess.Popen[str], delay: float) -> bool:
    try:
        proc.wait(delay)
        return False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        return True


def child_env(build: str, root: Path = ROOT) -> dict[str, str]:
    """The children's environment: the jetbench of ``root`` (this checkout, or another commit's
    worktree for an A/B), in the ``build`` asked for."""
    env = {**os.environ, "PYTHONPATH": str(root), "JETBENCH_PROGRESS": "0"}
    env.pop("JETBENCH_PURE_PYTHON", None)
    env["KILLCHECK_BUILD"] = build  # the child checks it runs that build
    if build == "pure":
        env["JETBENCH_PURE_PYTHON"] = "1"
    return env


def run(seeds: list[int], n: int, build: str, guarantee: str, work: Path, verbose: bool = False,
        root: Path = ROOT, log: str = "") -> list[SeedResult]:
    env = child_env(build, root)
    expected = expected_lines(n)
    results = []
    for seed in seeds:
        r = check_seed(seed, n, guarantee, work / f"seed-{seed}", env, expected)
        results.append(r)
        if log:  # a line per seed as it ends: `summarize` makes the table of a run cut short
            with open(log, "a") as f:
                f.write(json.dumps({"seed": seed, "build": build, "guarantee": guarantee, "n": n,
                                    "kills": dict(r.kills), "missing": r.missing, "duplicated": r.duplicated,
                                    "differences": r.differences, "error": r.error[:300]}) + "\n")
        bad = r.error or r.missing or (guarantee == "exactly_once" and r.differences)
        if verbose or bad:
            print(f"seed {seed}: runs {r.runs} missing {r.missing} duplicated {r.duplicated} {r.error} "
                  f"{r.sample}", flush=True)
        if not bad:
            shutil.rmtree(work / f"seed-{seed}", ignore_errors=True)
    return results


def table(results: list[SeedResult], build: str, guarantee: str, n: int) -> str:
    kills: Counter[str] = Counter()
    for r in results:
        kills.update(r.kills)
    bad = [r for r in results if r.differences or r.missing or r.error]
    rows = [
        ("build", build), ("guarantee", guarantee), ("events per run", f"{n:,}"),
        ("seeds", str(len(results))), ("kills", str(sum(kills.values()))),
        ("kills by moment", ", ".join(f"{m} {kills[m]}" for m in MOMENTS)),
        ("seeds with a difference", str(sum(1 for r in results if r.differences))),
        ("seeds with lines missing", str(sum(1 for r in results if r.missing))),
        ("lines missing (all seeds)", str(sum(r.missing for r in results))),
        ("seeds with lines duplicated", str(sum(1 for r in results if r.duplicated))),
        ("lines duplicated (all seeds)", str(sum(r.duplicated for r in results))),
        ("seeds that failed to run", str(sum(1 for r in results if r.error))),
        ("failing seeds", " ".join(str(r.seed) for r in bad[:20]) or "none"),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"| {k:<{width}} | {v} |" for k, v in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", nargs="?", default="check", choices=("check", "child", "reference", "summarize"))
    parser.add_argument("logs", nargs="*", help="summarize: the --log files to make one table of")
    parser.add_argument("--log", default="", help="append a JSON line per seed to this file")
    parser.add_argument("--seeds", type=int, default=1000, help="how many seeds (check)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--n", type=int, default=N, help="events per run")
    parser.add_argument("--root", default=str(ROOT), help="the jetbench checkout the children run (default: this one)")
    parser.add_argument("--build", choices=("compiled", "pure"), default="compiled")
    parser.add_argument("--guarantee", choices=("exactly_once", "at_least_once"), default="exactly_once")
    parser.add_argument("--work", default="", help="directory for the runs (default: a temporary one)")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--store", default="")
    parser.add_argument("--out", default="")
    parser.add_argument("--interval", type=int, default=100)
    parser.add_argument("--hook", default="")
    args = parser.parse_args()
    if args.mode == "child":
        child(args.n, args.store, args.out, args.guarantee, args.interval, args.hook)
        return
    if args.mode == "reference":
        from jetbench import ExecutionService

        ExecutionService(cooperative_threads=2).run(pipeline(args.n, args.out).to_dag(), 600)
        return
    if args.mode == "summarize":
        results, builds, guarantees, sizes = [], set(), set(), set()
        for path in args.logs:
            for line in Path(path).read_text().splitlines():
                d = json.loads(line)
                results.append(SeedResult(d["seed"], Counter(d["kills"]), [], d["missing"], d["duplicated"],
                                          d["differences"], d["error"]))
                builds.add(d["build"])
                guarantees.add(d["guarantee"])
                sizes.add(d["n"])
        print(table(results, "/".join(sorted(builds)), "/".join(sorted(guarantees)), max(sizes, default=0)))
        return
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="killcheck-"))
    started = time.monotonic()
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    results = run(seeds, args.n, args.build, args.guarantee, work, args.verbose, Path(args.root), args.log)
    print(table(results, args.build, args.guarantee, args.n))
    print(f"({time.monotonic() - started:.0f} s)")
    sys.exit(1 if any(r.error or r.missing or (args.guarantee == "exactly_once" and r.differences)
                      for r in results) else 0)


if __name__ == "__main__":
    main()
