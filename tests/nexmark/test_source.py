"""The Nexmark source: every event once, each instance in timestamp order, and paced at the
event rate when rate-limited."""

from __future__ import annotations

import time

from jetbench import Pipeline, run, sinks
from jetbench.nexmark.config import NexmarkConfig
from jetbench.nexmark.generator import generate
from jetbench.nexmark.source import nexmark


def collect_pairs(source, **kw):
    p = Pipeline()
    p.read_from(source).write_to(sinks.collect())
    return run(p, progress=False, **kw)


def test_every_event_once_on_both_timelines():
    for generators in (1, 7):
        config = NexmarkConfig(num_events=2000, num_event_generators=generators)
        got = collect_pairs(nexmark(config, local_parallelism=3), cooperative_threads=2)
        assert sorted(got, key=repr) == sorted((e for _, e in generate(config)), key=repr)


def test_rate_limited_source_emits_events_when_their_time_comes():
    # 400 events at 2000 events/s: the last one is due 199.5 ms after the first
    config = NexmarkConfig(num_events=400, num_event_generators=1, event_rate=2000)
    started = time.perf_counter()
    got = collect_pairs(nexmark(config, rate_limited=True))
    elapsed = time.perf_counter() - started
    assert len(got) == 400
    assert elapsed >= 0.19
    fast = time.perf_counter()
    collect_pairs(nexmark(config))
    assert time.perf_counter() - fast < elapsed


def test_with_a_base_time_ahead_events_are_due_at_their_timestamps_on_the_wall_clock():
    base = int(time.time() * 1000) + 300
    config = NexmarkConfig(num_events=200, num_event_generators=1, event_rate=2000, base_time=base)
    seen = []
    p = Pipeline()
    p.read_from(nexmark(config, rate_limited=True)).write_to(sinks.callback(lambda e: seen.append((time.time() * 1000, e))))
    run(p, progress=False)
    assert len(seen) == 200
    assert all(arrived >= e.date_time - 1 for arrived, e in seen)  # never before its time (1 ms of rounding)
    assert seen[0][0] >= base - 1 and seen[-1][1].date_time == base + 99


def _instance_timestamps(config: NexmarkConfig, k: int, n: int) -> list[int]:
    """The timestamps instance ``k`` of ``n`` of the source emits, in emission order."""
    from jetbench.core.outbox import Outbox
    from jetbench.core.processor import ProcessorContext
    from jetbench.nexmark.source import NexmarkSourceP

    p = NexmarkSourceP(config)
    box = Outbox(ordinal_count=1, capacity=300)
    p.init(box, ProcessorContext("nexmark", k, k, n, n))
    stamps: list[int] = []
    done = False
    while not done:
        done = p.complete()
        stamps += [ts for ts, _ in box.take_bucket(0)]
    return stamps


def test_each_instance_emits_in_timestamp_order_so_the_source_says_ordered():
    """The planner's watermarks read a batch's last timestamp after this source (``ordered``):
    each instance's timestamps never decrease, on one timeline and on split ones."""
    for generators in (1, 7):
        config = NexmarkConfig(num_events=3000, num_event_generators=generators)
        for n in (1, 3):
            parts = [_instance_timestamps(config, k, n) for k in range(n)]
            assert sum(len(p) for p in parts) == 3000
            for stamps in parts:
                assert stamps == sorted(stamps), (generators, n)
    assert nexmark(NexmarkConfig(num_events=10)).ordered
