"""Chaos (issue 16): random small pipelines, a failure injected once at a random item of a random
processor, with exactly-once and at-least-once, on one and two cooperative threads.

Each pipeline: an event-time stream (a test stream, or the same events paced by a generator so
that snapshots are taken while it flows) of ``(key, id, ts)`` events with bounded disorder, a
hash join against a small batch build side (so snapshots wait for the build side, as in Jet),
then a keyed tumbling or sliding window and a keyed aggregation of the joined stream, merged
into one collect sink. ``allowed_lag`` covers the disorder, so a failure-free run's output does
not depend on timing. The failure is an exception raised once, on the n-th call of one of the
pipeline's functions (a map before or after the join, the window's key function, the last map).

Exactly-once: the output equals the failure-free run's, exactly (as a multiset). At-least-once:
every result of the failure-free run is there, each with a count at least as high, and every
other result is one of those again (a replay). No jetbench thread outlives a job.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jetbench import ExecutionService, Pipeline, aggregate, sinks, sources
from jetbench.core.job_config import JobConfig
from jetbench.core.snapshot import FaultTolerantJob
from jetbench.window import sliding, tumbling

POINTS = ("before-join", "after-join", "window-key", "last-map")
#: events per second of a paced stream
RATE = 5000


class FailPoint:
    """Passes items through (or computes a key); raises once, on call ``at`` (counted over every
    execution of the job: the restarted job's processors share this object)."""

    def __init__(self, at: int | None, fn: Callable[[Any], Any] = lambda x: x):
        self.at = at
        self.fn = fn
        self.calls = 0
        self.raised = False
        self._lock = threading.Lock()

    def __call__(self, x: Any) -> Any:
        with self._lock:
            self.calls += 1
            if self.at is not None and not self.raised and self.calls >= self.at:
                self.raised = True
                raise ValueError(f"chaos: injected failure on call {self.calls}")
        return self.fn(x)


@dataclass(frozen=True)
class Case:
    events: list[tuple[int, int, int]]  # (key, id, ts) in source order
    disorder: int
    keys: int
    window: tuple[int, int]  # (size, slide)
    paced: bool
    point: str
    fraction: float  # where the failure falls, as a fraction of the point's calls

    def window_def(self) -> Any:
        size, slide = self.window
        return tumbling(size) if size == slide else sliding(size, slide)


@st.composite
def cases(draw: Any) -> Case:
    n = draw(st.integers(200, 1200))
    keys = draw(st.integers(1, 6))
    disorder = draw(st.integers(0, 30))
    seed_steps = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    jitter = draw(st.lists(st.integers(0, disorder), min_size=n, max_size=n))
    events = []
    t = 0
    for i in range(n):
        t += seed_steps[i]
        events.append((i % keys if i % 7 else (i * 31) % keys, i, max(0, t - jitter[i])))
    slide = draw(st.sampled_from([10, 25, 50]))
    size = slide * draw(st.sampled_from([1, 1, 2, 4]))
    return Case(events, disorder, keys, (size, slide), draw(st.booleans()), draw(st.sampled_from(POINTS)),
                draw(st.floats(0.05, 0.95)))


def _pipeline(case: Case, points: dict[str, FailPoint], paced: bool) -> Pipeline:
    p = Pipeline()
    if paced:  # the same events, paced, so that snapshots are taken while they flow
        stream = p.read_from(sources.generator(RATE, case.events.__getitem__, timestamped=False,
                                               count=len(case.events))).set_local_parallelism(1) \
            .add_timestamps(lambda e: e[2], allowed_lag=case.disorder).set_local_parallelism(1)
    else:
        stream = p.read_from(sources.test_stream([(e[2], e) for e in case.events], allowed_lag=case.disorder))
    build = p.read_from(sources.items([(k, 1 + k % 3) for k in range(case.keys)] + [(k, 10) for k in range(0, case.keys, 2)]))
    joined = stream.map(points["before-join"]).hash_join(build, lambda e: e[0], lambda b: b[0]) \
        .map(points["after-join"])
    windows = joined.group_by(points["window-key"]).window(case.window_def()) \
        .aggregate(aggregate.summing(lambda pair: pair[1][1]))
    totals = joined.group_by(lambda pair: pair[0][0]).aggregate(aggregate.counting())
    out = windows.map(lambda r: ("w", r.start, r.end, r.key, r.value)) \
        .merge(totals.map(lambda kv: ("k", kv[0], kv[1])).add_timestamps(lambda x: 0))
    out.map(points["last-map"]).write_to(sinks.collect())
    return p


def _points(fail: str | None = None, at: int | None = None) -> dict[str, FailPoint]:
    return {name: FailPoint(at if name == fail else None, (lambda pair: pair[0][0]) if name == "window-key"
                            else (lambda x: x)) for name in POINTS}


def _jetbench_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("jetbench.")]


def _identity(item: tuple[Any, ...]) -> tuple[Any, ...]:
    return item[:-1]  # ("w", start, end, key) or ("k", key); the value is last


def _check(case: Case, guarantee: str, threads: int, tmp_path: Any) -> FaultTolerantJob:
    reference_points = _points()
    # the failure-free run, unpaced: its output does not depend on timing
    expected = ExecutionService(cooperative_threads=threads).run(_pipeline(case, reference_points, False).to_dag(), 60)
    assert not _jetbench_threads()
    calls = reference_points[case.point].calls
    assert calls > 0
    at = max(1, int(case.fraction * calls))
    points = _points(case.point, at)
    config = JobConfig(guarantee, snapshot_interval_ms=5, max_restarts=2, snapshot_store=tmp_path / "chaos.sqlite")
    job = ExecutionService(cooperative_threads=threads).submit(_pipeline(case, points, case.paced).to_dag(),
                                                               config=config)
    result = job.join(60)
    assert isinstance(job, FaultTolerantJob)
    assert points[case.point].raised and job.restarts == 1, "the failure was injected once and restarted from"
    assert not _jetbench_threads(), "no thread outlives the job"
    if guarantee == "exactly_once":
        assert Counter(result) == Counter(expected)
        return job
    got: dict[tuple[Any, ...], list[Any]] = {}
    for item in result:
        got.setdefault(_identity(item), []).append(item[-1])
    want = {_identity(item): item[-1] for item in expected}
    assert set(got) == set(want), "every result is there, and every other one is a replay of one of them"
    assert all(max(got[k]) >= v for k, v in want.items()), "at least once: no count below the failure-free run's"
    return job


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("guarantee", ["exactly_once", "at_least_once"])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=cases())
def test_a_random_pipeline_with_a_failure_injected_keeps_its_guarantee(tmp_path, guarantee, threads, case):
    _check(case, guarantee, threads, tmp_path)


@pytest.mark.parametrize("point", POINTS)
def test_a_paced_pipeline_failing_late_restarts_from_a_snapshot_not_the_start(tmp_path, point):
    events = [(i % 4, i, 2 * i - (i % 5)) for i in range(1000)]
    case = Case(events, disorder=5, keys=4, window=(40, 20), paced=True, point=point, fraction=0.8)
    job = _check(case, "exactly_once", 2, tmp_path)
    assert job.restored_from > 0 and job.snapshot_history
