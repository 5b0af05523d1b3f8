"""Pipelines run on the local executor with 1 and 2 threads, compared with plain Python."""

from __future__ import annotations

import collections
import time

import pytest

from jetbench import Pipeline, PipelineError, WindowResult, aggregate, run, sinks, sources
from jetbench.aggregate import AggregateOperation
from jetbench.window import session, sliding, tumbling
from jetbench.wordcount import tokenize, wordcount_pipeline

LINES = ["The quick brown fox", "jumps over the lazy dog", "", "The dog sleeps; the fox runs!"] * 50


def reference_wordcount(lines):
    return collections.Counter(w for line in lines for w in tokenize(line) if w)


def test_wordcount(service):
    result = service.submit(wordcount_pipeline(LINES)).join(timeout=30)
    assert dict(result) == reference_wordcount(LINES)
    assert len(result) == len(reference_wordcount(LINES))


def test_fusion_makes_one_vertex_and_can_be_switched_off():
    p = Pipeline()
    p.read_from(sources.items(range(10))).map(lambda x: x + 1).filter(lambda x: x % 2).map(str).write_to(sinks.collect())
    fused = [v.name for v in p.to_dag().vertices]
    assert len(fused) == 3 and fused[1].startswith("fused(")
    assert len(p.to_dag(fuse=False).vertices) == 5
    assert sorted(run(p)) == sorted(run(p, fuse=False)) == sorted(str(x + 1) for x in range(10) if (x + 1) % 2)


def test_different_parallelism_and_rebalance_stop_fusion(service):
    p = Pipeline()
    a = p.read_from(sources.items(range(100))).map(lambda x: x * 2)
    b = a.map(lambda x: x + 1).set_local_parallelism(2)
    b.rebalance().map(lambda x: -x).write_to(sinks.collect())
    names = [v.name for v in p.to_dag().vertices]
    assert not any(n.startswith("fused(") for n in names), names
    assert sorted(service.submit(p).join(timeout=30)) == sorted(-(x * 2 + 1) for x in range(100))


def test_peek_sees_every_item(service):
    seen = []
    p = Pipeline()
    p.read_from(sources.items(range(50))).peek(seen.append).map(lambda x: x).write_to(sinks.collect())
    assert sorted(service.submit(p).join(timeout=30)) == list(range(50))
    assert sorted(seen) == list(range(50))


OPS = {
    "counting": (aggregate.counting(), lambda xs: len(xs)),
    "summing": (aggregate.summing(lambda x: x * 2), lambda xs: sum(x * 2 for x in xs)),
    "averaging": (aggregate.averaging(), lambda xs: sum(xs) / len(xs)),
    "min_by": (aggregate.min_by(lambda x: -x), lambda xs: max(xs)),
    "max_by": (aggregate.max_by(), lambda xs: max(xs)),
    "to_set": (aggregate.to_set(), lambda xs: set(xs)),
    "top_n": (aggregate.top_n(3), lambda xs: sorted(xs, reverse=True)[:3]),
    "all_of": (aggregate.all_of(aggregate.counting(), aggregate.summing()), lambda xs: (len(xs), sum(xs))),
    "no_combine": (AggregateOperation(create=lambda: 0, accumulate=lambda a, x: a + x), lambda xs: sum(xs)),
    "to_list": (aggregate.to_list(), lambda xs: sorted(xs)),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_group_by_aggregate(service, name):
    op, reference = OPS[name]
    items = [(i * 7919) % 1000 for i in range(3000)]
    p = Pipeline()
    p.read_from(sources.items(items)).group_by(lambda x: x % 13).aggregate(op).write_to(sinks.collect())
    result = dict(service.submit(p).join(timeout=30))
    if name == "to_list":
        result = {k: sorted(v) for k, v in result.items()}
    groups = collections.defaultdict(list)
    for x in items:
        groups[x % 13].append(x)
    assert result == {k: reference(v) for k, v in groups.items()}
    stages = len(p.to_dag().vertices)
    assert stages == (3 if name == "no_combine" else 4)


def test_global_aggregate_and_empty_input(service):
    p = Pipeline()
    p.read_from(sources.items(range(1000))).aggregate(aggregate.summing()).write_to(sinks.collect())
    assert service.submit(p).join(timeout=30) == [sum(range(1000))]
    empty = Pipeline()
    empty.read_from(sources.items([])).aggregate(aggregate.counting()).write_to(sinks.collect())
    assert service.submit(empty).join(timeout=30) == [0]


def test_merge(service):
    p = Pipeline()
    left = p.read_from(sources.items(range(10), name="left"))
    right = p.read_from(sources.items(range(100, 110), name="right"))
    left.merge(right).map(lambda x: x + 1).write_to(sinks.collect())
    assert sorted(service.submit(p).join(timeout=30)) == [x + 1 for x in [*range(10), *range(100, 110)]]


def test_hash_join_inner_and_left(service):
    p = Pipeline()
    orders = p.read_from(sources.items([("o1", "ann"), ("o2", "bob"), ("o3", "zed")], name="orders"))
    people = p.read_from(sources.items([("ann", 30), ("bob", 40)], name="people"))
    orders.hash_join(people, lambda o: o[1], lambda person: person[0], how="left").write_to(sinks.collect())
    assert sorted(service.submit(p).join(timeout=30), key=repr) == sorted(
        [(("o1", "ann"), ("ann", 30)), (("o2", "bob"), ("bob", 40)), (("o3", "zed"), None)], key=repr
    )


def test_co_group(service):
    p = Pipeline()
    a = p.read_from(sources.items([1, 2, 3, 4], name="a"))
    b = p.read_from(sources.items([10, 30, 50], name="b"))
    a.co_group(b, lambda x: x % 2, lambda y: y // 10 % 2).write_to(sinks.collect())
    result = {k: (sorted(xs), sorted(ys)) for k, xs, ys in service.submit(p).join(timeout=30)}
    assert result == {1: ([1, 3], [10, 30, 50]), 0: ([2, 4], [])}


def test_windowed_co_group_of_two_streams(service):
    p = Pipeline()
    clicks = p.read_from(sources.test_stream([(1, "ann"), (4, "bob"), (12, "ann"), (15, "ann")], allowed_lag=20))
    views = p.read_from(sources.test_stream([(2, ("ann", "home")), (13, ("bob", "cart"))], allowed_lag=20))
    clicks.co_group(views, lambda user: user, lambda view: view[0], window=tumbling(10)).write_to(sinks.collect())
    result = {(r.start, r.key): (sorted(r.value[0]), sorted(r.value[1])) for r in service.submit(p).join(timeout=30)}
    assert result == {
        (0, "ann"): (["ann"], [("ann", "home")]),
        (0, "bob"): (["bob"], []),
        (10, "ann"): (["ann", "ann"], []),
        (10, "bob"): ([], [("bob", "cart")]),
    }


def test_co_group_of_streams_needs_a_window():
    p = Pipeline()
    a = p.read_from(sources.generator(10))
    b = p.read_from(sources.generator(10))
    with pytest.raises(PipelineError, match="without a window"):
        a.co_group(b, lambda x: x, lambda x: x)


def test_map_using_service_runs_blocking_calls_off_the_cooperative_threads(service):
    class Lookup:
        def get(self, x):
            time.sleep(0.0005)
            return x * 10

    p = Pipeline()
    p.read_from(sources.items(range(40))).map_using_service(Lookup, lambda s, x: s.get(x)).write_to(sinks.collect())
    job = service.submit(p)
    assert sorted(job.join(timeout=30)) == [x * 10 for x in range(40)]
    assert any(not t.cooperative for t in job.metrics().tasklets)


def test_map_using_service_async_keeps_order(service):
    import asyncio

    async def slow_double(_service, x):
        await asyncio.sleep(0.001 * (x % 3))
        return 2 * x

    p = Pipeline()
    source = p.read_from(sources.items(range(60))).set_local_parallelism(1)  # one ordered stream end to end
    source.map_using_service_async(lambda: None, slow_double, max_concurrent=8).set_local_parallelism(1) \
        .write_to(sinks.collect()).set_local_parallelism(1)
    assert service.submit(p).join(timeout=30) == [2 * x for x in range(60)]


# -- event time and windows ------------------------------------------------------------------------


EVENTS = [(ts, f"k{ts % 3}") for ts in [5, 1, 12, 7, 25, 21, 30, 44, 41, 50, 67, 63, 80, 99, 95]]
MAX_DISORDER = 5  # no event is more than this behind the highest timestamp before it


def reference_windows(events, size, slide, keyed):
    out = collections.Counter()
    for ts, key in events:
        first_end = (ts // slide + 1) * slide
        for end in range(first_end, ts + size + 1, slide):
            if end - size <= ts < end:
                out[(end - size, end, key if keyed else None)] += 1
    return {WindowResult(s, e, k, n) for (s, e, k), n in out.items()}


@pytest.mark.parametrize("size,slide", [(10, 10), (20, 5)])
@pytest.mark.parametrize("keyed", [False, True])
def test_windows_over_a_test_stream(service, size, slide, keyed):
    p = Pipeline()
    stage = p.read_from(sources.test_stream(EVENTS, allowed_lag=MAX_DISORDER))
    grouped = stage.group_by(lambda k: k) if keyed else stage
    grouped.window(sliding(size, slide) if size != slide else tumbling(size)).aggregate(aggregate.counting()) \
        .write_to(sinks.collect())
    assert set(service.submit(p).join(timeout=30)) == reference_windows(EVENTS, size, slide, keyed)


def test_session_windows(service):
    events = [(1, "a"), (3, "a"), (20, "a"), (2, "b"), (22, "a")]
    p = Pipeline()
    p.read_from(sources.test_stream(events, allowed_lag=18)).group_by(lambda k: k).window(session(5)) \
        .aggregate(aggregate.counting()).write_to(sinks.collect())
    assert set(service.submit(p).join(timeout=30)) == {
        WindowResult(1, 8, "a", 2), WindowResult(20, 27, "a", 2), WindowResult(2, 7, "b", 1)
    }


def test_add_timestamps_then_window(service):
    p = Pipeline()
    p.read_from(sources.items(range(0, 100, 3))).add_timestamps(lambda x: x) \
        .window(tumbling(25)).aggregate(aggregate.summing()).write_to(sinks.collect())
    result = sorted(service.submit(p).join(timeout=30))
    expected = collections.Counter()
    for x in range(0, 100, 3):
        expected[x // 25] += x
    assert result == [WindowResult(k * 25, k * 25 + 25, None, v) for k, v in sorted(expected.items())]


def test_late_events_are_dropped_and_counted(service):
    events = [(100, "x"), (1000, "x"), (5, "late"), (2000, "x")]
    p = Pipeline()
    p.read_from(sources.test_stream(events)).window(tumbling(100)).aggregate(aggregate.to_list()) \
        .write_to(sinks.collect())
    job = service.submit(p)
    values = [v for r in job.join(timeout=30) for v in r.value]
    assert "late" not in values and values.count("x") == 3
    dropped = sum(t.processor_metrics.get("late_events_dropped", 0) for t in job.metrics().tasklets)
    assert dropped == 1


def test_generator_window_and_latency_sink(service):
    p = Pipeline()
    p.read_from(sources.generator(2000, count=400)).map(lambda x: x) \
        .window(tumbling(50)).aggregate(aggregate.counting()).write_to(sinks.latency())
    result = service.submit(p).join(timeout=30)
    assert result["count"] >= 1
    assert 0 <= result["p50_ms"] <= result["max_ms"]


# -- misuse ----------------------------------------------------------------------------------------


def test_window_without_timestamps_names_the_stage():
    p = Pipeline()
    stage = p.read_from(sources.items([1, 2])).map(lambda x: x, name="double")
    with pytest.raises(PipelineError, match="'double' has no timestamps"):
        stage.window(tumbling(10))


def test_misuse_errors():
    p = Pipeline()
    stage = p.read_from(sources.items([1]))
    with pytest.raises(PipelineError, match="aggregate"):
        stage.aggregate("counting")
    with pytest.raises(PipelineError, match="callable"):
        stage.map(42)
    with pytest.raises(PipelineError, match="parallelism"):
        stage.set_local_parallelism(0)
    sink = stage.write_to(sinks.collect())
    with pytest.raises(PipelineError, match="sink"):
        sink.map(lambda x: x)
    with pytest.raises(PipelineError, match="timestamped"):
        stage.write_to(sinks.latency())
    streaming = p.read_from(sources.generator(10))
    with pytest.raises(PipelineError, match="unbounded"):
        streaming.group_by(lambda x: x).aggregate(aggregate.counting())
    with pytest.raises(PipelineError, match="combine"):
        streaming.window(sliding(100, 10)).aggregate(AggregateOperation(lambda: 0, lambda a, x: a + 1))


def test_dangling_stage_and_empty_pipeline():
    with pytest.raises(PipelineError, match="empty"):
        Pipeline().to_dag()
    p = Pipeline()
    p.read_from(sources.items([1])).map(lambda x: x, name="lost")
    with pytest.raises(PipelineError, match="'lost' leads nowhere"):
        p.to_dag()


def test_wordcount_fits_in_eight_lines():
    import ast
    import inspect
    import textwrap

    (fn,) = ast.parse(textwrap.dedent(inspect.getsource(wordcount_pipeline))).body
    statements = fn.body[1:] if isinstance(fn.body[0], ast.Expr) else fn.body  # without the docstring
    lines = {n for s in statements for n in range(s.lineno, s.end_lineno + 1)}
    assert len(lines) <= 8, lines


def test_explain_lists_vertices_and_routing():
    text = wordcount_pipeline(["a"]).explain()
    assert "fused(" in text and "partitioned" in text


def test_submit_pipeline_returns_a_job(service):
    p = Pipeline()
    p.read_from(sources.items(range(5))).filter(bool).write_to(sinks.collect())
    job = service.submit(p)
    assert sorted(job.join(timeout=30)) == [1, 2, 3, 4]


def test_a_timestamped_stage_written_to_two_plain_sinks_drops_its_timestamps_once(service):
    """Planner bug found by the chaos tests: each consumer wanting plain items made its own
    '<vertex>-drop-timestamps' vertex, so a second one failed with 'duplicate vertex name'."""
    first, second = [], []
    p = Pipeline()
    stage = p.read_from(sources.test_stream([(1, "a"), (2, "b")])).map(str.upper)
    stage.write_to(sinks.callback(first.append))
    stage.write_to(sinks.callback(second.append))
    dag = p.to_dag()
    assert sum(v.name.endswith("-drop-timestamps") for v in dag.vertices) == 1
    service.run(dag, 10)
    assert first == second == ["A", "B"]
