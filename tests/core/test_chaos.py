"""Chaos (issue 16): random small pipelines with a random join, windows and keyed aggregation
over event-time streams; a failure injected at a random point; exactly-once and at-least-once,
on one and two cooperative threads.

Each pipeline: an event-time stream A of ``(key, id, ts)`` events with bounded disorder (a test
stream, or the same events paced by a generator so that snapshots are taken while it flows),
joined by one of the Pipeline API's joins, chosen at random:

* ``hash-inner`` / ``hash-left``: `Stage.hash_join` against a small batch build side (so
  snapshots wait for the build side, as in Jet); some keys have no build item (a left join
  emits them with None);
* ``co-group-window``: `Stage.co_group` of A and a second event-time stream B per window
  (tumbling, sliding or session, at random);
* ``co-group-batch``: `Stage.co_group` of A and B without a window (emitted when both end).

The join's output (a canonical tuple per result) goes to the sink; a keyed tumbling or sliding
window aggregates it (A itself when the join's output has no timestamps) and a keyed batch
aggregation counts it per key; the three are merged into one collect sink. ``allowed_lag``
covers the disorder, so a failure-free run's output does not depend on timing.

The failure, at random: an exception raised once, on the n-th call of one of the pipeline's
functions (a map before or after the join, either key function of the join, the window's key
function, the last map); or in a random vertex's processor calls: its first
``save_to_snapshot()``, or its first call of any kind (``process``, ``try_process_watermark``,
``complete``, ``save_to_snapshot``), once stream A is a random fraction through (else at the
instance's last save, when it completes); or its first ``restore_from_snapshot()`` /
``finish_snapshot_restore()`` after a first failure (then the job restarts twice).

Exactly-once: the output equals the failure-free run's, exactly (as a multiset).
At-least-once: the output contains the failure-free run's, and every extra item is a replay.
For the join's stateless output (the hash joins') that is exact: the multiset difference holds
only items of the failure-free output. A stateful result (a window, a key's count, a co-group)
may have counted an item twice (at-least-once does not align a vertex's inputs, so its state
can hold items past the barrier that the sources replay after a restore): every result of the
failure-free run is there, every other result is one of those again, and each value covers the
failure-free one (a count or sum at least as high, a co-group's lists holding the same items, at
least as often). The output also goes to a callback sink, which is not transactional: it gets
what a failed execution emitted after its last snapshot as well, so what it saw must pass the
at-least-once check under either guarantee (it does hold replays). No jetbench thread outlives
a job.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from jetbench import DAG, ExecutionService, Pipeline, aggregate, sinks, sources
from jetbench.core.job_config import JobConfig
from jetbench.core.snapshot import FaultTolerantJob
from jetbench.window import session, sliding, tumbling

JOINS = ("hash-inner", "hash-left", "co-group-window", "co-group-batch")
FUNCTION_POINTS = ("before-join", "join-key", "join-other-key", "after-join", "window-key", "last-map")
#: failures in a random vertex's processor calls: its first save, its first restore call, or
#: its first call of any kind (process, watermark, complete, save) once the stream is that far
CALL_POINTS: dict[str, tuple[str, ...]] = {
    "save": ("save_to_snapshot",),
    "restore": ("restore_from_snapshot", "finish_snapshot_restore"),
    "call": ("process", "try_process_watermark", "complete", "save_to_snapshot"),
}
#: events per second of a paced stream
RATE = 5000


class FailPoint:
    """Passes items through (or computes a key); raises once, on call ``at`` (counted over every
    execution of the job: the restarted job's processors share this object), or on the first
    call after it at which ``armed()`` says so."""

    def __init__(self, at: int | None, fn: Callable[[Any], Any] = lambda x: x):
        self.at = at
        self.fn = fn
        self.calls = 0
        self.raised = False
        self.armed: Callable[[], bool] = lambda: True
        self._lock = threading.Lock()

    def __call__(self, x: Any) -> Any:
        with self._lock:
            self.calls += 1
            if self.at is not None and not self.raised and self.calls >= self.at and self.armed():
                self.raised = True
                raise ValueError(f"chaos: injected failure on call {self.calls}")
        return self.fn(x)


class FlakyCalls:
    """A vertex's supplier whose processors go through ``point`` in their calls ``calls``, once
    ``armed()`` says so or the processor has completed (its last save is then to come), so
    that the point raises inside one of them."""

    def __init__(self, supplier: Callable[[], Any], calls: tuple[str, ...], point: FailPoint,
                 armed: Callable[[], bool]):
        self.supplier = supplier
        self.calls = calls
        self.point = point
        self.armed = armed

    def __call__(self) -> Any:
        processor = self.supplier()
        # a compiled processor's methods cannot be replaced on the instance (it has no __dict__):
        # the same instance, re-made as a plain Python subclass of its class, whose methods can
        if not hasattr(processor, "__dict__"):
            processor = _patchable(type(processor))(processor)
        completed = False

        def through(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
            def call(*args: Any) -> Any:
                nonlocal completed
                if name in self.calls and (completed or self.armed()):
                    self.point(None)
                result = method(*args)
                if name == "complete" and result:
                    completed = True
                return result
            return call

        for name in {*self.calls, "complete"}:
            setattr(processor, name, through(name, getattr(processor, name)))
        return processor

    def __getattr__(self, name: str) -> Any:  # merge_results and the like: the real supplier's
        if name.startswith("__") or name == "supplier":
            raise AttributeError(name)
        return getattr(self.supplier, name)


_PATCHABLE: dict[type, Callable[[Any], Any]] = {}


def _patchable(cls: type) -> Callable[[Any], Any]:
    """A function making a fresh instance of a plain Python subclass of ``cls`` (a compiled,
    interpreted-subclassable processor class) that wraps ``processor``: every attribute it does
    not have comes from ``processor``, and its methods call ``processor``'s."""
    if cls not in _PATCHABLE:
        def method(name: str) -> Callable[..., Any]:
            return lambda self, *args: getattr(self._inner, name)(*args)

        names = [n for n in dir(cls) if not n.startswith("__") and callable(getattr(cls, n, None))]
        sub = type(f"Patchable{cls.__name__}", (cls,), {n: method(n) for n in names})

        def make(processor: Any) -> Any:
            wrapper = sub.__new__(sub)
            wrapper.__dict__["_inner"] = processor
            return wrapper
        _PATCHABLE[cls] = make
    return _PATCHABLE[cls]


@dataclass(frozen=True)
class Case:
    events: list[tuple[int, int, int]]  # stream A: (key, id, ts) in source order
    other: list[tuple[int, int, int]]  # stream B of the co-groups
    disorder: int
    keys: int
    join: str
    join_window: tuple[str, int, int]  # the windowed co-group's: (kind, size or gap, slide)
    window: tuple[int, int]  # (size, slide)
    paced: bool
    point: str  # a FUNCTION_POINTS or CALL_POINTS name
    vertex: int  # a snapshot point's vertex: an index into the DAG's vertex names, sorted
    fraction: float  # where a function point's failure falls, as a fraction of its calls

    def window_def(self) -> Any:
        size, slide = self.window
        return tumbling(size) if size == slide else sliding(size, slide)

    def co_group_window(self) -> Any:
        kind, size, slide = self.join_window
        return session(size) if kind == "session" else tumbling(size) if kind == "tumbling" else sliding(size, slide)


def _events(draw: Any, n: int, keys: int, disorder: int, first_id: int) -> list[tuple[int, int, int]]:
    steps = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    jitter = draw(st.lists(st.integers(0, disorder), min_size=n, max_size=n))
    events = []
    t = 0
    for i in range(n):
        t += steps[i]
        events.append((i % keys if i % 7 else (i * 31) % keys, first_id + i, max(0, t - jitter[i])))
    return events


@st.composite
def cases(draw: Any) -> Case:
    keys = draw(st.integers(1, 6))
    disorder = draw(st.integers(0, 30))
    events = _events(draw, draw(st.integers(200, 1200)), keys, disorder, 0)
    # B has keys A lacks and lacks some A has: co-groups with one side empty
    other = [(k + 1, i, t) for k, i, t in _events(draw, draw(st.integers(20, 300)), keys, disorder, 100_000)]
    slide = draw(st.sampled_from([10, 25, 50]))
    size = slide * draw(st.sampled_from([1, 1, 2, 4]))
    co_slide = draw(st.sampled_from([10, 20, 40]))
    join_window = (draw(st.sampled_from(["tumbling", "sliding", "session"])), co_slide * draw(st.sampled_from([1, 2, 3])),
                   co_slide)
    return Case(events, other, disorder, keys, draw(st.sampled_from(JOINS)), join_window, (size, slide),
                draw(st.sampled_from([True, True, True, False])), draw(st.sampled_from(FUNCTION_POINTS + tuple(CALL_POINTS))),
                draw(st.integers(0, 1000)), draw(st.floats(0.05, 0.95)))


# -- the pipeline ----------------------------------------------------------------------------------


def _hash_out(pair: tuple[Any, Any]) -> tuple[Any, ...]:
    e, b = pair
    return ("j", e[0], e[1], None if b is None else b[1])


def _ids(events: list[tuple[int, int, int]]) -> tuple[int, ...]:
    return tuple(sorted(e[1] for e in events))


def _co_group_window_out(r: Any) -> tuple[Any, ...]:
    lefts, rights = r.value
    return ("cw", r.key, r.start, r.end, _ids(lefts), _ids(rights))


def _co_group_out(group: tuple[Any, list[Any], list[Any]]) -> tuple[Any, ...]:
    key, lefts, rights = group
    return ("cb", key, _ids(lefts), _ids(rights))


def _weight(item: tuple[Any, ...]) -> int:
    """A number per joined result (or event) for the windows to sum."""
    return sum(len(x) if isinstance(x, tuple) else (x or 0) for x in item[2:])


def _pipeline(case: Case, points: dict[str, FailPoint], paced: bool, delivered: list[Any] | None = None) -> Pipeline:
    """The case's pipeline; with ``delivered``, its output also goes to a callback appending
    to it (a sink that is not transactional: it sees what a failed execution emitted too)."""
    p = Pipeline()
    if paced:  # the same events, paced, so that snapshots are taken while they flow
        a = p.read_from(sources.generator(RATE, case.events.__getitem__, timestamped=False,
                                          count=len(case.events))).set_local_parallelism(1) \
            .add_timestamps(lambda e: e[2], allowed_lag=case.disorder).set_local_parallelism(1)
    else:
        a = p.read_from(sources.test_stream([(e[2], e) for e in case.events], allowed_lag=case.disorder))
    a = a.map(points["before-join"])
    key, other_key = points["join-key"], points["join-other-key"]
    if case.join.startswith("hash"):
        build = p.read_from(sources.items([(k, 1 + k % 3) for k in range(0, case.keys, 2)]
                                          + [(k, 10) for k in range(0, case.keys, 3)]))
        joined = a.hash_join(build, key, other_key, how=case.join.removeprefix("hash-")).map(_hash_out)
    else:
        b = p.read_from(sources.test_stream([(e[2], e) for e in case.other], allowed_lag=case.disorder))
        if case.join == "co-group-window":
            joined = a.co_group(b, key, other_key, window=case.co_group_window()).map(_co_group_window_out)
        else:
            joined = a.co_group(b, key, other_key).map(_co_group_out)
    joined = joined.map(points["after-join"])
    timestamped = case.join != "co-group-batch"
    windows = (joined if timestamped else a).group_by(points["window-key"]).window(case.window_def()) \
        .aggregate(aggregate.summing(_weight if timestamped else lambda e: e[1] % 7))
    totals = joined.group_by(lambda item: item[1]).aggregate(aggregate.counting())
    out = windows.map(lambda r: ("w", r.start, r.end, r.key, r.value)) \
        .merge(joined if timestamped else joined.add_timestamps(lambda x: 0)) \
        .merge(totals.map(lambda kv: ("k", kv[0], kv[1])).add_timestamps(lambda x: 0))
    final = out.map(points["last-map"])
    final.write_to(sinks.collect())
    if delivered is not None:
        final.write_to(sinks.callback(delivered.append))
    return p


def _points(case: Case, fail: str | None = None, at: int | None = None) -> dict[str, FailPoint]:
    keyed = {"join-key": lambda e: e[0], "join-other-key": lambda b: b[0],
             "window-key": (lambda item: item[1]) if case.join != "co-group-batch" else (lambda e: e[0])}
    return {name: FailPoint(at if name == fail else None, keyed.get(name, lambda x: x)) for name in FUNCTION_POINTS}


def _dag(case: Case, points: dict[str, FailPoint], call_point: FailPoint | None,
         delivered: list[Any], ready: Callable[[], bool] = lambda: True) -> tuple[DAG, str]:
    """The case's DAG (paced if the case is, its output also appended to ``delivered``); with
    ``call_point``, the case's calls of a random vertex go through it. Returns the DAG and that
    vertex's name."""
    dag = _pipeline(case, points, case.paced, delivered).to_dag()
    if call_point is None:
        return dag, ""
    vertex = sorted(dag.vertices, key=lambda v: v.name)[case.vertex % len(dag.vertices)]
    before_join = points["before-join"]
    threshold = case.fraction * len(case.events)
    armed = (lambda: True) if case.point == "restore" else (lambda: before_join.calls >= threshold and ready())
    vertex.supplier = FlakyCalls(vertex.supplier, CALL_POINTS[case.point], call_point, armed)
    return dag, vertex.name


def _jetbench_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("jetbench.")]


# -- the checks ------------------------------------------------------------------------------------


def _identity(item: tuple[Any, ...]) -> tuple[Any, ...]:
    """A stateful result without its value: ("w", start, end, key), ("k", key), ("cw", key,
    start, end), ("cb", key)."""
    return item[:4] if item[0] == "cw" else item[:2] if item[0] == "cb" else item[:-1]


def _value(item: tuple[Any, ...]) -> Any:
    return item[4:] if item[0] == "cw" else item[2:] if item[0] == "cb" else item[-1]


def _covers(got: Any, want: Any) -> bool:
    """Whether a result's value is the failure-free one's with items counted again: a count or
    sum at least as high; co-group lists holding the same ids, each at least as often."""
    if isinstance(want, tuple):
        return all(set(g) == set(w) and not Counter(w) - Counter(g) for g, w in zip(got, want, strict=True))
    return bool(got >= want)


def _check_at_least_once(result: list[Any], expected: list[Any], context: str) -> str:
    """Assert what at-least-once promises (see the module); say what the output repeated."""
    got_joined = Counter(item for item in result if item[0] == "j")
    want_joined = Counter(item for item in expected if item[0] == "j")
    assert not want_joined - got_joined, f"{context}: a joined item was lost"
    extra = got_joined - want_joined
    assert all(item in want_joined for item in extra), f"{context}: every extra joined item is a replay"
    got: dict[tuple[Any, ...], list[Any]] = {}
    for item in result:
        if item[0] != "j":
            got.setdefault(_identity(item), []).append(_value(item))
    want = {_identity(item): _value(item) for item in expected if item[0] != "j"}
    assert len(want) == sum(item[0] != "j" for item in expected), "a result's identity is unique"
    assert set(got) == set(want), f"{context}: every result is there, and every other one is a replay of one of them"
    bad = {k: (values, want[k]) for k, values in got.items() if not all(_covers(v, want[k]) for v in values)}
    assert not bad, f"{context}: results below the failure-free run's: {bad}"
    again = sum(len(values) > 1 for values in got.values())
    counted_twice = sum(any(v != want[k] for v in values) for k, values in got.items())
    if not extra and not again and not counted_twice:
        return "at-least-once: no replay"
    return (f"at-least-once: replays ({'joined items' if extra else 'no joined item'}, "
            f"{'results again' if again else 'no result again'}, "
            f"{'items counted twice' if counted_twice else 'no item counted twice'})")


def _check(case: Case, guarantee: str, threads: int, tmp_path: Any,
           record: Callable[[str], None] = lambda what: None, after_a_snapshot: bool = False) -> FaultTolerantJob:
    """Run ``case`` failure-free, then with its failure; check the guarantee (``record`` notes
    what happened: hypothesis's statistics). ``after_a_snapshot``: a call point arms only once
    the job has stored a snapshot (on a loaded machine a paced stream can reach its 80% before
    the first one)."""
    reference_points = _points(case)
    # the failure-free run, unpaced: its output does not depend on timing
    expected = ExecutionService(cooperative_threads=threads).run(_pipeline(case, reference_points, False).to_dag(), 60)
    assert not _jetbench_threads()
    call_point = None
    if case.point in CALL_POINTS:
        call_point = FailPoint(1)
        # a save or any call fails once A is that far through (or at the instance's last save);
        # a restore needs a restart first: a map fails that far through A
        points = _points(case, "before-join" if case.point == "restore" else None,
                         max(1, int(case.fraction * len(case.events))))
    else:
        calls = reference_points[case.point].calls
        assert calls > 0
        points = _points(case, case.point, max(1, int(case.fraction * calls)))
    delivered: list[Any] = []
    submitted: list[FaultTolerantJob] = []
    ready = ((lambda: bool(submitted) and any(r.success for r in submitted[0].snapshot_history))
             if after_a_snapshot else (lambda: True))
    for point in points.values():  # a function point too (the full run at load 12 failed a
        point.armed = ready        # join key at its call 800, before the first snapshot)
    dag, vertex = _dag(case, points, call_point, delivered, ready)
    config = JobConfig(guarantee, snapshot_interval_ms=5, max_restarts=3, snapshot_store=tmp_path / "chaos.sqlite")
    job = ExecutionService(cooperative_threads=threads).submit(dag, config=config)
    submitted.append(job)
    result = job.join(60)
    context = (f"{case.join} join, failure at {case.point} {vertex}, {guarantee}, {threads} threads, "
               f"restarts {job.restarts}, restored from {job.restored_from}")
    assert isinstance(job, FaultTolerantJob)
    assert not _jetbench_threads(), "no thread outlives the job"
    raised = [p.raised for p in points.values() if p.at is not None]
    assert all(raised), f"{context}: the function failure was injected"
    if call_point is not None and case.point == "restore":
        # the restart restored a snapshot, so the vertex's instances restored, and one failed;
        # or the first failure came before any snapshot and the job restarted from the start
        assert job.restarts == 1 + call_point.raised, context
        assert call_point.raised or job.restored_from == 0, context
    elif call_point is not None:
        # once armed, or at the instance's last save when it completes
        assert call_point.raised and job.restarts == 1, context
    else:
        assert job.restarts == 1, context
    record(f"{case.join}, failure at {case.point}")
    record(("paced, " if case.paced else "unpaced, ") + ("restored a snapshot" if job.restored_from else "restarted from the start"))
    if guarantee == "exactly_once":
        assert Counter(result) == Counter(expected), context
    else:
        record(_check_at_least_once(result, expected, context))
    # what the callback saw, the failed execution's output too: at least once, under either
    record("callback, " + _check_at_least_once(delivered, expected, f"{context}, callback sink"))
    return job


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("guarantee", ["exactly_once", "at_least_once"])
@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=cases())
def test_a_random_pipeline_with_a_failure_injected_keeps_its_guarantee(tmp_path, guarantee, threads, case):
    _check(case, guarantee, threads, tmp_path, event)


@pytest.mark.parametrize("join", JOINS)
@pytest.mark.parametrize("point", ["join-key", "last-map", "call", "save", "restore"])
def test_a_paced_pipeline_failing_late_restarts_from_a_snapshot_not_the_start(tmp_path, join, point):
    """Late in a paced stream: in a function, or in a call, a save or a restore of the join vertex."""
    events = [(i % 4, i, 2 * i - (i % 5)) for i in range(1000)]
    other = [(i % 5, 100_000 + i, 10 * i) for i in range(200)]
    case = Case(events, other, disorder=5, keys=4, join=join, join_window=("sliding", 40, 20), window=(40, 20),
                paced=True, point=point, vertex=0, fraction=0.8)
    # the DAG `_check` runs: with the callback sink it adds (a vertex name in the sorted list)
    names = sorted(v.name for v in _pipeline(case, _points(case), True, []).to_dag().vertices)
    join_vertex = next(k for k, name in enumerate(names) if name in ("hash-join", "co-group"))
    job = _check(replace(case, vertex=join_vertex), "exactly_once", 2, tmp_path, after_a_snapshot=True)
    assert job.restored_from > 0 and job.snapshot_history
    assert job.restarts == (2 if point == "restore" else 1)
