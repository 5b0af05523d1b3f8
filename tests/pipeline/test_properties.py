"""Property-based tests: random pipelines and out-of-order event streams against plain Python."""

from __future__ import annotations

import collections

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from jetbench import ExecutionService, Pipeline, WindowResult, aggregate, sinks, sources
from jetbench.window import session, sliding, tumbling

SETTINGS = settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _affine(a: int, b: int):
    return lambda x: a * x + b


def _divisible(m: int):
    return lambda x: x % m != 0


def _repeat(k: int):
    return lambda x: [x] * k


steps = st.lists(
    st.one_of(
        st.tuples(st.just("map"), st.integers(-3, 3), st.integers(-5, 5)),
        st.tuples(st.just("filter"), st.integers(2, 5)),
        st.tuples(st.just("flat_map"), st.integers(0, 3)),
        st.tuples(st.just("rebalance")),
    ),
    max_size=6,
)


def reference(items, chain, ending):
    out = list(items)
    for step in chain:
        if step[0] == "map":
            out = [step[1] * x + step[2] for x in out]
        elif step[0] == "filter":
            out = [x for x in out if x % step[1] != 0]
        elif step[0] == "flat_map":
            out = [x for x in out for _ in range(step[1])]
    if ending == "collect":
        return collections.Counter(out)
    if ending == "count-by-mod":
        return collections.Counter(x % 7 for x in out)
    return sum(out)


@SETTINGS
@given(
    items=st.lists(st.integers(-1000, 1000), max_size=300),
    chain=steps,
    parallelism=st.lists(st.sampled_from([None, 1, 2, 3]), min_size=8, max_size=8),
    ending=st.sampled_from(["collect", "count-by-mod", "sum"]),
    fuse=st.booleans(),
    threads=st.sampled_from([1, 2]),
    stealing=st.booleans(),
)
def test_random_pipelines_match_plain_python(items, chain, parallelism, ending, fuse, threads, stealing):
    p = Pipeline(fuse=fuse)
    stage = p.read_from(sources.items(items))
    for i, step in enumerate(chain):
        if step[0] == "map":
            stage = stage.map(_affine(step[1], step[2]))
        elif step[0] == "filter":
            stage = stage.filter(_divisible(step[1]))
        elif step[0] == "flat_map":
            stage = stage.flat_map(_repeat(step[1]))
        else:
            stage = stage.rebalance().map(lambda x: x)
        if parallelism[i] is not None:
            stage.set_local_parallelism(parallelism[i])
    if ending == "count-by-mod":
        stage = stage.group_by(lambda x: x % 7).aggregate(aggregate.counting())
    elif ending == "sum":
        stage = stage.aggregate(aggregate.summing())
    stage.write_to(sinks.collect())
    result = ExecutionService(cooperative_threads=threads, work_stealing=stealing).submit(p).join(timeout=60)
    expected = reference(items, chain, ending)
    if ending == "collect":
        assert collections.Counter(result) == expected
    elif ending == "count-by-mod":
        assert dict(result) == dict(expected) and len(result) == len(expected)
    else:
        assert result == [expected]


@st.composite
def event_streams(draw):
    """Events whose timestamps are at most ``disorder`` behind the highest one before them."""
    disorder = draw(st.integers(0, 30))
    n = draw(st.integers(0, 60))
    top, events = 0, []
    for _ in range(n):
        top += draw(st.integers(0, 15))
        ts = max(0, top - draw(st.integers(0, disorder)))
        events.append((ts, draw(st.sampled_from("abc"))))
    return events, disorder


def reference_sliding(events, size, slide, keyed):
    out = collections.Counter()
    for ts, key in events:
        end = (ts // slide + 1) * slide
        while end - size <= ts:
            out[(end - size, end, key if keyed else None)] += 1
            end += slide
    return {WindowResult(s, e, k, n) for (s, e, k), n in out.items()}


def reference_sessions(events, gap, keyed):
    by_key = collections.defaultdict(list)
    for ts, key in events:
        by_key[key if keyed else None].append(ts)
    results = set()
    for key, stamps in by_key.items():
        stamps.sort()
        start, end, count = stamps[0], stamps[0] + gap, 1
        for ts in stamps[1:]:
            if ts <= end:
                end, count = max(end, ts + gap), count + 1
            else:
                results.add(WindowResult(start, end, key, count))
                start, end, count = ts, ts + gap, 1
        results.add(WindowResult(start, end, key, count))
    return results


@SETTINGS
@given(
    stream=event_streams(),
    window=st.one_of(
        st.tuples(st.just("tumbling"), st.integers(1, 40)),
        st.tuples(st.just("sliding"), st.integers(1, 20), st.integers(1, 4)),
        st.tuples(st.just("session"), st.integers(1, 25)),
    ),
    keyed=st.booleans(),
    threads=st.sampled_from([1, 2]),
)
def test_windows_over_out_of_order_streams(stream, window, keyed, threads):
    events, disorder = stream
    if window[0] == "tumbling":
        definition = tumbling(window[1])
        expected = reference_sliding(events, window[1], window[1], keyed)
    elif window[0] == "sliding":
        slide = window[1]
        definition = sliding(slide * window[2], slide)
        expected = reference_sliding(events, slide * window[2], slide, keyed)
    else:
        definition = session(window[1])
        # a session event may also merge with sessions up to one gap back: allow for it
        disorder += window[1]
        expected = reference_sessions(events, window[1], keyed)
    p = Pipeline()
    stage = p.read_from(sources.test_stream(events, allowed_lag=disorder))
    grouped = stage.group_by(lambda k: k) if keyed else stage
    grouped.window(definition).aggregate(aggregate.counting()).write_to(sinks.collect())
    job = ExecutionService(cooperative_threads=threads).submit(p)
    assert set(job.join(timeout=60)) == expected
    dropped = sum(t.processor_metrics.get("late_events_dropped", 0) for t in job.metrics().tasklets)
    assert dropped == 0
