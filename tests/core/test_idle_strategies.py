"""Idle strategies' schedules on the one mock clock (`jetbench.core.clock.MockClock`, Trio's as the model)."""

from __future__ import annotations

import math
import time

import pytest

from jetbench import ExecutionService, JetbenchError, sources
from jetbench.core.clock import MockClock
from jetbench.core.idle import BackoffIdler, IdleConfig, TimerIdler, make_idler


class Due:
    def __init__(self, when):
        self.when = when

    def wake_time(self):
        return self.when


def us(values):
    return [round(v * 1e6) for v in values]


def test_backoff_doubles_from_min_to_max_and_resets():
    clock = MockClock(start=100.0)
    idler = BackoffIdler(IdleConfig(25, 500), clock)
    for idle_round in [1, 2, 3, 4, 5, 6, 7, 1]:
        idler.idle(idle_round)
    assert us(clock.sleeps) == [25, 50, 100, 200, 400, 500, 500, 25]
    assert idler.parks == 8


def test_changing_the_config_applies_to_the_next_park():
    clock = MockClock(start=100.0)
    config = IdleConfig(25, 500)
    idler = BackoffIdler(config, clock)
    idler.idle(1)
    config.set(min_idle_us=1000)
    idler.idle(1)
    assert us(clock.sleeps) == [25, 1000]


def test_timer_sleeps_until_the_earliest_deadline():
    clock = MockClock(start=100.0)
    idler = TimerIdler(IdleConfig(25, 1000), clock)
    idler.idle(1, [Due(clock.monotonic() + 0.0003), Due(math.inf), Due(clock.monotonic() + 0.0007)])
    assert us(clock.sleeps) == [300]


def test_timer_caps_at_max_idle_and_waits_max_when_only_input_can_wake():
    clock = MockClock(start=100.0)
    idler = TimerIdler(IdleConfig(25, 800), clock)
    idler.idle(1, [Due(clock.monotonic() + 5.0)])
    idler.idle(1, [Due(math.inf), Due(math.inf)])
    assert us(clock.sleeps) == [800, 800]


def test_timer_does_not_sleep_when_work_is_already_due():
    clock = MockClock(start=100.0)
    idler = TimerIdler(IdleConfig(25, 800), clock)
    idler.idle(1, [Due(clock.monotonic() - 1.0)])
    assert clock.sleeps == [] and idler.skipped == 1


def test_timer_falls_back_to_backoff_when_a_tasklet_cannot_tell():
    clock = MockClock(start=100.0)
    idler = TimerIdler(IdleConfig(25, 500), clock)
    for idle_round in (1, 2, 3):
        idler.idle(idle_round, [Due(clock.monotonic() + 1.0), Due(None)])
    assert us(clock.sleeps) == [25, 50, 100]
    assert idler.fallbacks == 3


def test_timer_paces_productive_rounds_on_a_tick_without_drifting():
    clock = MockClock(start=100.0)
    idler = TimerIdler(IdleConfig(1000, 5000), clock)
    due = clock.monotonic() + 0.001
    for _ in range(3):  # one item due every 1 ms; 0.1 ms of work after each wake-up
        idler.after_progress([Due(due)])
        assert clock.monotonic() == pytest.approx(due)
        clock.advance(0.0001)
        due += 0.001
    assert us(clock.sleeps) == [1000, 900, 900]


def test_timer_pacing_coalesces_fast_sources_to_the_floor():
    clock = MockClock(start=100.0)
    idler = TimerIdler(IdleConfig(1000, 5000), clock)
    for _ in range(3):  # something is always due at once (a fast source)
        idler.after_progress([Due(clock.monotonic() - 0.00001)])
        clock.advance(0.0002)  # the work done after waking up
    assert us(clock.sleeps) == [1000, 800, 800]


def test_timer_goes_round_again_at_once_while_work_due_before_the_round_waits():
    clock = MockClock(start=100.0)
    idler = TimerIdler(IdleConfig(1000, 5000), clock)
    idler.after_progress([Due(clock.monotonic() - 0.00001)])  # paced: a 1 ms tick
    clock.advance(0.0002)
    # the source's outbox was full: items due 50 ms ago (before this round began) still wait
    idler.after_progress([Due(clock.monotonic() - 0.05)])
    clock.advance(0.0002)
    idler.after_progress([Due(clock.monotonic() - 0.02)])
    assert us(clock.sleeps) == [1000] and idler.backlog_rounds == 2
    clock.advance(0.0002)
    idler.after_progress([Due(clock.monotonic() - 0.00001)])  # caught up: back on the 1 ms tick
    assert us(clock.sleeps) == [1000, 400] and idler.backlog_rounds == 2


def test_timer_after_progress_does_nothing_while_a_tasklet_cannot_tell():
    clock = MockClock(start=100.0)
    idler = TimerIdler(IdleConfig(25, 500), clock)
    idler.after_progress([Due(None)])
    idler.after_progress([Due(0.0)])  # input already queued
    assert clock.sleeps == []


def test_timer_can_be_woken_by_another_thread():
    idler = TimerIdler(IdleConfig(25, 2_000_000))
    idler.wake()
    start = time.perf_counter()
    idler.idle(1, [Due(math.inf)])  # would wait 2 s
    assert time.perf_counter() - start < 1.5  # woken: well before the 2 s it would wait


def test_unknown_strategy_is_refused():
    with pytest.raises(JetbenchError, match="idle"):
        make_idler("spin", IdleConfig())
    with pytest.raises(JetbenchError, match="idle must be one of"):
        ExecutionService(idle="spin")


@pytest.mark.parametrize("strategy", ["backoff", "timer"])
def test_both_strategies_run_a_rate_limited_job(threads, strategy):
    from jetbench import Pipeline, sinks

    p = Pipeline()
    p.read_from(sources.generator(4000, count=800)).map(lambda x: x).write_to(sinks.latency())
    service = ExecutionService(cooperative_threads=threads, idle=strategy, min_idle_us=100, max_idle_us=1000)
    start = time.perf_counter()
    job = service.submit(p)
    result = job.join(timeout=30)
    assert result["count"] == 800
    assert time.perf_counter() - start >= 0.15  # it followed the wall clock
    assert sum(w.idle_count for w in job.metrics().workers) > 0 or strategy == "timer"


def test_a_pending_wake_is_kept_once_however_many_threads_wake():
    from jetbench.core.idle import Parker

    parker = Parker()
    for _ in range(3):
        parker.wake()
    assert parker.park(5.0) is True  # the pending wake
    assert parker.park(0.001) is False  # and only one


def test_a_queue_wakes_its_consumer_on_each_accepted_offer_only():
    from jetbench.core.items import DONE
    from jetbench.core.queues import SPSCQueue

    calls = []
    q = SPSCQueue(capacity=2)
    assert q.offer_chunk([1]) == 1  # no hook: nothing to call
    q.wake = lambda: calls.append("wake")
    assert q.offer_chunk([2, 3]) == 1
    assert calls == ["wake"]
    assert q.offer_chunk([4]) == 0 and not q.offer_control(DONE)  # full: refused, nobody woken
    assert calls == ["wake"]
    q.popleft(), q.popleft()
    q.polled += 2
    assert q.offer_control(DONE)
    assert calls == ["wake", "wake"]


def test_noncooperative_idle_strategy_is_checked():
    with pytest.raises(JetbenchError, match="noncooperative_idle must be one of"):
        ExecutionService(noncooperative_idle="spin")


def _slow_stream_through_a_blocking_map(strategy: str):
    from jetbench import Pipeline, sinks

    p = Pipeline()
    (p.read_from(sources.generator(50, count=10))
     .map_using_service(lambda: None, lambda service, x: x, name="blocking-map")
     .write_to(sinks.latency()))
    job = ExecutionService(noncooperative_idle=strategy).submit(p)
    result = job.join(timeout=30)
    (worker,) = [w for w in job.workers if w.kind == "blocking"]
    (tasklet,) = [t for t in job.tasklets if not t.cooperative]
    hooks = [q.wake for stream in tasklet.inbound for q in stream.queues]
    return result, worker, hooks


def test_a_dedicated_thread_sleeps_until_its_producer_offers():
    result, worker, hooks = _slow_stream_through_a_blocking_map("timer")
    assert result["count"] == 10
    assert worker.idler.name == "timer" and hooks and all(h == worker.idler.wake for h in hooks)
    # 10 items 20 ms apart, the thread parked in between (5 ms at most a park): offers cut
    # parks short, rather than the thread finding each item on its next poll
    assert worker.idler.woken > 0


def test_jets_dedicated_threads_poll_with_backoff():
    result, worker, hooks = _slow_stream_through_a_blocking_map("backoff")
    assert result["count"] == 10
    assert worker.idler.name == "backoff" and hooks and all(h is None for h in hooks)
    assert worker.idler.parks > 10  # it doubled its park from 25 us after each item
