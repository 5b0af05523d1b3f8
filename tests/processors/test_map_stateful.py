"""Jet's map_stateful, filter_stateful and flat_map_stateful (`jetbench.processors.map_stateful`):
keyed and global, in every `verify_processor` mode, with a ttl and on_evict on streams, in
pipelines under both processing guarantees, and their argument checks."""

from __future__ import annotations

import pytest

from jetbench import JobConfig, Pipeline, run, sinks, sources
from jetbench.core.items import Watermark
from jetbench.pipeline.errors import PipelineError
from jetbench.processors.kind_params import KindParamError
from jetbench.processors.map_stateful import MapStatefulP, map_stateful
from jetbench.testing import verify_processor


def first(x):
    return x[0]


def counter():
    return [0]


def count_per_key(state, key, item):
    state[0] += 1
    return key, state[0]


def count_all(state, item):
    state[0] += 1
    return item, state[0]


def unseen(state, key, item):
    new = item[1] not in state
    state.append(item[1])
    return new


def repeat_by_count(state, key, item):
    state[0] += 1
    return [item] * state[0]


def evicted(state, key, wm):
    return key, state[0], wm


def test_keyed_map_filter_and_flat_map_in_every_mode():
    items = [("a", 1), ("b", 1), ("a", 2), ("a", 1), ("b", 1)]
    verify_processor(map_stateful(first, counter, count_per_key), input=items,
                     expected=[("a", 1), ("b", 1), ("a", 2), ("a", 3), ("b", 2)], snapshots=True)
    verify_processor(map_stateful(first, list, unseen, "filter"), input=items,
                     expected=[("a", 1), ("b", 1), ("a", 2)], snapshots=True)
    verify_processor(map_stateful(first, counter, repeat_by_count, "flat_map"), input=items[:3],
                     expected=[("a", 1), ("b", 1), ("a", 2), ("a", 2)], snapshots=True)


def test_global_state_and_a_map_giving_none_emits_nothing():
    verify_processor(map_stateful(None, counter, count_all), input=["x", "y", "x"],
                     expected=[("x", 1), ("y", 2), ("x", 3)], snapshots=True)

    def every_other(state, item):
        state[0] += 1
        return item if state[0] % 2 else None

    verify_processor(map_stateful(None, counter, every_other), input=list(range(6)), expected=[0, 2, 4],
                     snapshots=True)


def test_ttl_evicts_a_key_behind_the_watermark_and_on_evict_emits_its_last_item():
    events = [(0, ("a", 1)), (5, ("b", 1)), (12, ("a", 1)), Watermark(20), (30, ("b", 1)),
              Watermark(70), (10, ("a", 1)), (75, ("a", 1)), Watermark(200)]
    verify_processor(
        map_stateful(first, counter, count_per_key, ttl=40, on_evict=evicted, timestamped=True),
        input=events,
        expected=[(0, ("a", 1)), (5, ("b", 1)), (12, ("a", 2)), Watermark(20), (30, ("b", 2)),
                  # a's latest (12) < 70 - 40: evicted, its last item at 12 + ttl; b's (30) not
                  (52, ("a", 2, 70)), Watermark(70),
                  (75, ("a", 1)),  # (10, a) was late (< 70 - 40): dropped; a starts again
                  (70, ("b", 2, 200)), (115, ("a", 1, 200)), Watermark(200)],
        snapshots=True)


def test_at_completion_every_state_is_evicted():
    verify_processor(map_stateful(first, counter, count_per_key, ttl=1000, on_evict=evicted, timestamped=True),
                     input=[(1, ("a", 1)), (2, ("b", 1)), Watermark(3), (4, ("a", 1))],
                     expected=[(1, ("a", 1)), (2, ("b", 1)), Watermark(3), (4, ("a", 2)),
                               (1002, ("b", 1, float("inf"))), (1004, ("a", 2, float("inf")))],
                     snapshots=True)


def test_late_events_are_counted():
    made: list[MapStatefulP] = []

    def supplier():
        made.append(MapStatefulP(first, counter, count_per_key, ttl=10, timestamped=True))
        return made[-1]

    verify_processor(supplier, input=[(50, ("a", 1)), Watermark(100), (80, ("a", 1))],
                     expected=[(50, ("a", 1)), Watermark(100)], snapshots=False)
    assert [p.late_events_dropped for p in made[:2]] == [1, 1]  # the two runs without snapshots


def test_in_a_pipeline_keyed_and_global():
    p = Pipeline()
    items = p.read_from(sources.items([i % 5 for i in range(50)]))
    items.group_by(lambda x: x).map_stateful(counter, count_per_key).set_local_parallelism(3) \
        .write_to(sinks.collect())
    out = run(p)
    assert sorted(out) == sorted((k, n) for k in range(5) for n in range(1, 11))
    g = Pipeline()
    g.read_from(sources.items(list(range(5)))).flat_map_stateful(counter, lambda s, x: [x] * (x % 2)) \
        .write_to(sinks.collect())
    assert run(g) == [1, 3]


def test_ttl_in_a_pipeline_of_a_stream():
    p = Pipeline()
    stream = p.read_from(sources.test_stream([(t, (f"k{t % 3}", t)) for t in range(0, 1000, 10)]))

    def total(state, key, event):
        state[0] += event[1]

    stream.group_by(first).map_stateful(counter, total, ttl=100, on_evict=lambda s, k, wm: (k, s[0])) \
        .write_to(sinks.collect())
    expected = {f"k{r}": sum(t for t in range(0, 1000, 10) if t % 3 == r) for r in range(3)}
    # each key's state lived to the end (an item every 30 ms < ttl) and was evicted at completion
    assert dict(run(p)) == expected


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_under_a_guarantee_gives_the_plain_result(guarantee, tmp_path):
    def pipeline():
        p = Pipeline()
        p.read_from(sources.items(list(range(2000)))).group_by(lambda x: x % 11) \
            .map_stateful(counter, count_per_key).write_to(sinks.collect())
        return p

    config = JobConfig(guarantee, snapshot_interval_ms=1, snapshot_store=str(tmp_path / "s.sqlite"))
    assert sorted(run(pipeline(), config=config)) == sorted(run(pipeline()))


def test_arguments_are_checked():
    with pytest.raises(KindParamError, match="map_stateful: create_fn must be callable, got 3"):
        map_stateful(first, 3, count_per_key)
    with pytest.raises(KindParamError, match="mode must be one of"):
        map_stateful(first, counter, count_per_key, "reduce")
    with pytest.raises(KindParamError, match="ttl must be a number > 0"):
        map_stateful(first, counter, count_per_key, ttl=0, timestamped=True)
    with pytest.raises(KindParamError, match="on_evict needs a ttl"):
        map_stateful(first, counter, count_per_key, on_evict=evicted)
    p = Pipeline()
    with pytest.raises(PipelineError, match="stage 'items': map_stateful: ttl needs timestamped items"):
        p.read_from(sources.items([1])).map_stateful(counter, count_all, ttl=10)
    with pytest.raises(KindParamError, match="filter_stateful: on_evict gives items"):
        map_stateful(first, list, unseen, "filter", ttl=5, on_evict=evicted, timestamped=True)
