"""Completion (DONE, complete_edge, complete, close) and watermarks, end to end and unit."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from engine_helpers import Lifecycle, ListSource, RecordingSink, Supplier, Tracked, linear_dag

from jetbench import DAG, Edge, ExecutionService, JetbenchError, Watermark
from jetbench.core import IDLE_MESSAGE
from jetbench.core.watermarks import WatermarkCoalescer
from jetbench.processors import flat_map_processor, map_processor

# -- completion ---------------------------------------------------------------------------------


class Probe(Tracked):
    """A three-input processor logging its lifecycle; complete_edge and complete refuse a few
    times; emits one (ordinal, count) pair per ordinal from its final complete() call."""

    def __init__(self, lifecycle: Lifecycle, edge_refusals: int = 2, complete_refusals: int = 3):
        super().__init__(lifecycle)
        self.edge_refusals = edge_refusals
        self.complete_refusals = complete_refusals
        self.edge_calls: Counter = Counter()
        self.completed_edges: list[int] = []
        self.counts: Counter = Counter()
        self.complete_calls = 0
        self.violations: list[str] = []
        self._out: list | None = None

    def process(self, ordinal, inbox):
        if not inbox:
            self.violations.append("process() with an empty inbox")
        if ordinal in self.completed_edges:
            self.violations.append(f"process({ordinal}) after complete_edge({ordinal})")
        if self.complete_calls:
            self.violations.append("process() after complete()")
        self.lifecycle.log(self, f"process:{ordinal}")
        self.counts[ordinal] += len(inbox.take())

    def complete_edge(self, ordinal):
        self.lifecycle.log(self, f"complete_edge:{ordinal}")
        if ordinal in self.completed_edges:
            self.violations.append(f"complete_edge({ordinal}) after it returned True")
        self.edge_calls[ordinal] += 1
        if self.edge_calls[ordinal] <= self.edge_refusals:
            return False
        self.completed_edges.append(ordinal)
        return True

    def complete(self):
        self.lifecycle.log(self, "complete")
        self.complete_calls += 1
        if self.complete_calls <= self.complete_refusals:
            return False
        if self._out is None:
            self._out = [(o, self.counts[o]) for o in range(3)]
        while self._out:
            if not self.outbox.offer(self._out[0]):
                return False
            self._out.pop(0)
        return True


class LazySource(ListSource):
    """Returns False from complete() ``refusals`` times before emitting anything."""

    def __init__(self, items, refusals=5, **kw):
        super().__init__(items, **kw)
        self.refusals_left = refusals
        self.complete_calls = 0

    def complete(self):
        self.complete_calls += 1
        if self.refusals_left:
            self.refusals_left -= 1
            return False
        return super().complete()


def test_lifecycle_order_and_exactly_once(service):
    lifecycle = Lifecycle()
    probes = Supplier(lambda: Probe(lifecycle))
    lazies = Supplier(lambda: LazySource(range(500), refusals=5, per_call=20, lifecycle=lifecycle))
    sink = Supplier(lambda: RecordingSink(lifecycle=lifecycle))
    dag = DAG()
    s0 = dag.new_vertex("s0", lazies, 2)
    s1 = dag.new_vertex("s1", lambda: ListSource(range(300), per_call=7, lifecycle=lifecycle), 1)
    s2 = dag.new_vertex("s2", lambda: ListSource([], lifecycle=lifecycle), 3)  # emits nothing
    probe = dag.new_vertex("probe", probes, 2)
    out = dag.new_vertex("out", sink, 1)
    dag.edge(Edge.from_(s0).to(probe, 0).queue_size(4))
    dag.edge(Edge.from_(s1).to(probe, 1).partitioned(lambda x: x))
    dag.edge(Edge.from_(s2).to(probe, 2).broadcast())
    dag.edge(Edge.between(probe, out))
    job = service.submit(dag)
    job.join(timeout=20)

    # close() exactly once for every processor instance of the job
    expected = {("s0", 0), ("s0", 1), ("s1", 0), ("s2", 0), ("s2", 1), ("s2", 2)}
    expected |= {("probe", 0), ("probe", 1), ("out", 0)}
    assert dict(lifecycle.closes) == {key: 1 for key in expected}

    for p in probes.created:
        assert p.violations == []
        mine = [e for v, i, e in lifecycle.events if (v, i) == ("probe", p.context.global_index)]
        assert mine[0] == "init" and mine[-1] == "close" and mine.count("close") == 1
        # complete_edge retried with the same ordinal until True, then never again for it
        assert dict(p.edge_calls) == {0: 3, 1: 3, 2: 3}
        assert sorted(p.completed_edges) == [0, 1, 2]
        edge_events = [e for e in mine if e.startswith("complete_edge")]
        for k in range(0, 9, 3):
            assert len(set(edge_events[k : k + 3])) == 1
        # complete() only after every edge completed, re-called until True, then close
        first_complete = mine.index("complete")
        assert all(not e.startswith(("process", "complete_edge")) for e in mine[first_complete:-1])
        assert p.complete_calls == 4
        assert mine[first_complete:] == ["complete"] * 4 + ["close"]
    for s in lazies.created:
        assert s.complete_calls >= 6 and s.pos == len(s.items)

    total = Counter()
    (out_p,) = sink.created
    for ordinal, count in out_p.items:
        total[ordinal] += count
    assert dict(total) == {0: 500, 1: 300, 2: 0}
    assert len(out_p.items) == 6  # 3 pairs from each of the 2 probe instances
    assert out_p.events[-2:] == [("complete_edge", 0), ("complete",)]


def test_source_emitting_from_repeated_complete_calls(service):
    sources = Supplier(lambda: LazySource(range(100), refusals=10, per_call=1))
    sinks = Supplier(lambda: RecordingSink())
    service.submit(linear_dag(sources, sinks, 1, 1)).join(timeout=10)
    (src,), (snk,) = sources.created, sinks.created
    assert src.complete_calls >= 110
    assert snk.items == list(range(100))


def test_close_called_once_without_any_input(service):
    lifecycle = Lifecycle()
    dag = linear_dag(
        lambda: ListSource([], lifecycle=lifecycle),
        lambda: RecordingSink(lifecycle=lifecycle),
        source_lp=3,
        sink_lp=2,
    )
    assert service.submit(dag).join(timeout=10) is None
    assert dict(lifecycle.closes) == {
        ("source", 0): 1,
        ("source", 1): 1,
        ("source", 2): 1,
        ("sink", 0): 1,
        ("sink", 1): 1,
    }


# -- watermarks end to end ------------------------------------------------------------------------


def _event_stream(n, wm_every, offset=0):
    """Items (ts) with increasing timestamps; Watermark(t) before item t on a schedule.
    Watermark(t) means: no later item has a timestamp below t."""
    out = []
    for t in range(n):
        if t and (t + offset) % wm_every == 0:
            out.append(Watermark(t))
        out.append(t)
    return out


def _burst(x):
    """Expands the item just before each watermark 30-fold: more than the outbox takes."""
    return [x] * (30 if x % 10 == 9 else 1)


@pytest.mark.parametrize("via", ["direct", "map", "flat_map"])
def test_items_before_watermark_are_processed_first(threads, via):
    service = ExecutionService(cooperative_threads=threads, outbox_capacity=8)
    stream = _event_stream(600, 10)
    sinks = Supplier(lambda: RecordingSink(record_watermarks=True))
    dag = DAG()
    src = dag.new_vertex("src", lambda: ListSource(stream, per_call=13), 1)
    sink = dag.new_vertex("sink", sinks, 1)
    expected = stream
    if via == "direct":
        dag.edge(Edge.between(src, sink).queue_size(4))
    else:
        if via == "map":
            mid = dag.new_vertex("ident", map_processor(lambda x: x), 1)
        else:  # what the outbox refuses waits in the processor, not in the outbox
            mid = dag.new_vertex("burst", flat_map_processor(_burst), 1)
            expected = [y for x in stream for y in ([x] if isinstance(x, Watermark) else _burst(x))]
        dag.edge(Edge.between(src, mid).queue_size(4))
        dag.edge(Edge.between(mid, sink).queue_size(3))
    service.submit(dag).join(timeout=20)
    (p,) = sinks.created
    seen = [Watermark(e[1]) if e[0] == "wm" else e[2] for e in p.events if e[0] in ("wm", "item")]
    assert seen == expected  # one path: exactly the emitted order, watermarks in place


class WmLog:
    """A global, append-only log shared by producers and the consumer (list.append is atomic)."""

    def __init__(self):
        self.entries: list[tuple] = []


class LoggingWmSource(ListSource):
    def __init__(self, stream, log: WmLog, name: str, **kw):
        super().__init__(stream, split=False, **kw)
        self.log = log
        self.name = name

    def init(self, outbox, context):
        super().init(outbox, context)
        self.name = f"{self.name}#{context.global_index}"

    def complete(self):
        emitted = 0
        while self.pos < len(self.items):
            if self.per_call and emitted >= self.per_call:
                return False
            item = self.items[self.pos]
            if isinstance(item, Watermark):
                # logged before the offer so the log never lags what the consumer can see;
                # removed again if refused (a source is the only writer of its own entries)
                entry = ("offered", self.name, item.timestamp)
                self.log.entries.append(entry)
            if not self.outbox.offer(item):
                if isinstance(item, Watermark):
                    self.log.entries.remove(entry)
                return False
            self.pos += 1
            emitted += 1
        self.log.entries.append(("finished", self.name, None))
        return True


class LoggingWmSink(RecordingSink):
    def __init__(self, log: WmLog):
        super().__init__()
        self.log = log

    def process(self, ordinal, inbox):
        for item in inbox.take():
            self.log.entries.append(("item", ordinal, item))

    def try_process_watermark(self, watermark):
        self.log.entries.append(("seen", None, watermark.timestamp))
        return True


def _check_coalesced_log(log: WmLog, producers: set[str], min_seen: int = 3):
    latest: dict[str, int | None] = {p: None for p in producers}
    finished: set[str] = set()
    seen: list[int] = []
    for kind, who, value in list(log.entries):
        if kind == "offered":
            latest[who] = value
        elif kind == "finished":
            finished.add(who)
        elif kind == "seen":
            # the coalesced watermark never exceeds what a live producer has offered so far
            for p in producers - finished:
                assert latest[p] is not None and value <= latest[p], (value, p, latest)
            assert not seen or value > seen[-1], f"not increasing: {seen[-3:]} then {value}"
            seen.append(value)
        elif kind == "item":
            # an item arriving after watermark w has a timestamp >= w
            assert not seen or value >= seen[-1], (value, seen[-1])
    assert len(seen) >= min_seen, seen
    return seen


def test_watermarks_from_two_producers_are_coalesced_to_min(service):
    log = WmLog()
    streams = [_event_stream(800, 10), _event_stream(800, 10, offset=5)]
    made = []

    def supplier():
        # instance 0 runs ahead (big steps), instance 1 lags (tiny steps)
        k = len(made)
        p = LoggingWmSource(streams[k], log, "src", per_call=[200, 3][k])
        made.append(p)
        return p

    sinks = Supplier(lambda: LoggingWmSink(log))
    dag = linear_dag(supplier, sinks, 2, 1, lambda e: e.queue_size(16))
    service.submit(dag).join(timeout=20)
    seen = _check_coalesced_log(log, {"src#0", "src#1"})
    items = [e[2] for e in log.entries if e[0] == "item"]
    assert Counter(items) == Counter([t for t in range(800)] * 2)
    # both final watermarks (790 and 795) were offered; the last one seen is at least the min
    assert seen[-1] >= 790


def test_watermarks_coalesced_over_inbound_ordinals(service):
    log = WmLog()
    dag = DAG()
    a = dag.new_vertex(
        "a", lambda: LoggingWmSource(_event_stream(500, 7), log, "a", per_call=50), 1
    )
    b = dag.new_vertex(
        "b", lambda: LoggingWmSource(_event_stream(500, 11), log, "b", per_call=2), 1
    )
    sink = dag.new_vertex("sink", lambda: LoggingWmSink(log), 1)
    dag.edge(Edge.from_(a).to(sink, 0).queue_size(8)).edge(Edge.from_(b).to(sink, 1).queue_size(8))
    service.submit(dag).join(timeout=20)
    _check_coalesced_log(log, {"a#0", "b#0"})


def test_watermarks_through_parallel_map(service):
    """src(2) -> map(3) -> sink(1): two levels of coalescing keep the item/watermark order."""
    log = WmLog()
    made = []

    def supplier():
        p = LoggingWmSource(
            _event_stream(400, 10, offset=len(made) * 3), log, "src", per_call=[40, 5][len(made)]
        )
        made.append(p)
        return p

    dag = DAG()
    src = dag.new_vertex("src", supplier, 2)
    ident = dag.new_vertex("ident", map_processor(lambda x: x), 3)
    sink = dag.new_vertex("sink", lambda: LoggingWmSink(log), 1)
    dag.edge(Edge.between(src, ident).queue_size(4)).edge(Edge.between(ident, sink).queue_size(4))
    service.submit(dag).join(timeout=20)
    _check_coalesced_log(log, {"src#0", "src#1"}, min_seen=1)
    assert len([e for e in log.entries if e[0] == "item"]) == 800


def test_idle_producer_does_not_hold_back_watermarks(service):
    """Producer 0 sends Watermark(10), then the idle marker, and stays alive; producer 1's
    watermarks must still reach the sink. Idle markers never reach try_process_watermark.

    Producer 0 leaves once the sink has seen Watermark(40); a deadline only keeps a broken
    engine from hanging the test, and the test fails if it was the deadline that ended it."""
    state = {"sink_saw_40": False, "ended_by_deadline": False}

    class Idler(ListSource):
        def complete(self):
            if not super().complete():
                return False
            if state["sink_saw_40"]:
                return True
            if time.monotonic() > self.deadline:
                state["ended_by_deadline"] = True
                return True
            return False

        def init(self, outbox, context):
            super().init(outbox, context)
            self.deadline = time.monotonic() + 10.0

    class Sink(RecordingSink):
        def try_process_watermark(self, wm):
            if wm.timestamp == 40:
                state["sink_saw_40"] = True
            return super().try_process_watermark(wm)

    made = []

    def supplier():
        k = len(made)
        stream = (
            [Watermark(10), IDLE_MESSAGE]
            if k == 0
            else [Watermark(20), 1, Watermark(30), 2, Watermark(40)]
        )
        p = Idler(stream, split=False)
        made.append(p)
        return p

    sinks = Supplier(Sink)
    dag = DAG()
    src = dag.new_vertex("src", supplier, 2)
    ident = dag.new_vertex("ident", map_processor(lambda x: x), 1)
    sink = dag.new_vertex("sink", sinks, 1)
    dag.edge(Edge.between(src, ident)).edge(Edge.between(ident, sink))
    service.submit(dag).join(timeout=30)
    assert state["sink_saw_40"] and not state["ended_by_deadline"], "the idle producer held the watermark back"
    (p,) = sinks.created
    wms = [e[1] for e in p.events if e[0] == "wm"]
    assert wms[-1] == 40 and wms == sorted(set(wms))
    assert all(ts < 10**9 for ts in wms)  # the idle marker is handled by the engine


# -- WatermarkCoalescer unit tests ------------------------------------------------------------------


def test_coalescer_emits_min_over_inputs():
    c = WatermarkCoalescer(3)
    assert c.observe(0, Watermark(10)) is None  # inputs 1 and 2 have none yet
    assert c.observe(1, Watermark(20)) is None
    assert c.observe(2, Watermark(5)) == Watermark(5)
    assert c.observe(2, Watermark(15)) == Watermark(10)
    assert c.observe(1, Watermark(25)) is None  # min still 10
    assert c.observe(0, Watermark(30)) == Watermark(15)
    assert c.observe(2, Watermark(40)) == Watermark(25)
    assert c.last_emitted == 25 and c.top_observed == 40


def test_coalescer_done_inputs_do_not_hold_back():
    c = WatermarkCoalescer(2)
    assert c.observe(0, Watermark(10)) is None
    assert c.done(1) == Watermark(10)
    assert c.observe(0, Watermark(12)) == Watermark(12)
    assert c.done(0) is None  # everything done: DONE follows, nothing to emit

    c = WatermarkCoalescer(3)
    c.observe(0, Watermark(50))
    c.observe(1, Watermark(7))
    assert c.observe(2, Watermark(30)) == Watermark(7)
    assert c.done(1) == Watermark(30)
    assert c.done(2) == Watermark(50)


def test_coalescer_idle_marker_excludes_input_until_it_speaks_again():
    c = WatermarkCoalescer(2)
    c.observe(0, Watermark(10))
    assert c.observe(1, Watermark(5)) == Watermark(5)
    assert c.observe(1, IDLE_MESSAGE) == Watermark(10)  # input 1 idle: min over input 0
    assert c.any_idle
    assert c.observe(0, Watermark(20)) == Watermark(20)
    assert c.observe(1, Watermark(12)) is None  # active again, but 12 < 20 already emitted
    assert not c.any_idle
    assert c.observe(0, Watermark(30)) is None  # held back by input 1 at 12
    assert c.observe(1, Watermark(31)) == Watermark(30)


def test_coalescer_data_marks_idle_input_active():
    c = WatermarkCoalescer(2)
    c.observe(0, Watermark(10))
    c.observe(1, IDLE_MESSAGE)
    assert c.last_emitted == 10
    c.mark_active(1)  # data arrived on input 1: it holds the watermark back again
    assert not c.any_idle
    assert c.observe(0, Watermark(20)) is None
    assert c.observe(1, Watermark(15)) == Watermark(15)


def test_coalescer_all_idle_forwards_top_then_idle_marker():
    c = WatermarkCoalescer(2)
    c.observe(0, Watermark(10))
    assert c.observe(1, Watermark(5)) == Watermark(5)
    assert c.observe(0, IDLE_MESSAGE) is None  # min over input 1 is still 5
    assert c.observe(1, IDLE_MESSAGE) == Watermark(10)  # all idle: the top watermark first
    assert c.idle_pending
    assert c.take_idle() == IDLE_MESSAGE  # then the idle marker
    assert c.take_idle() is None
    assert c.observe(1, IDLE_MESSAGE) is None  # already forwarded

    c = WatermarkCoalescer(1)
    assert c.observe(0, IDLE_MESSAGE) == IDLE_MESSAGE  # nothing observed: idle marker at once
    assert c.observe(0, IDLE_MESSAGE) is None
    assert c.observe(0, Watermark(3)) == Watermark(3)
    assert c.observe(0, IDLE_MESSAGE) == IDLE_MESSAGE


def test_coalescer_idle_with_done_input():
    c = WatermarkCoalescer(2)
    c.observe(0, Watermark(8))
    assert c.done(1) == Watermark(8)
    assert c.observe(0, IDLE_MESSAGE) == IDLE_MESSAGE  # only done and idle inputs left


@pytest.mark.parametrize("second", [10, 9, -1])
def test_coalescer_rejects_non_increasing_watermark(second):
    c = WatermarkCoalescer(2)
    c.observe(0, Watermark(10))
    with pytest.raises(JetbenchError, match="input 0"):
        c.observe(0, Watermark(second))
    c.observe(1, Watermark(10))  # other inputs are independent


def test_coalescer_single_input_passes_increasing_watermarks():
    c = WatermarkCoalescer(1)
    assert [c.observe(0, Watermark(t)) for t in (1, 2, 5)] == [
        Watermark(1),
        Watermark(2),
        Watermark(5),
    ]


def test_non_increasing_watermark_fails_the_job(service):
    from jetbench import JobError

    stream = [1, Watermark(10), 2, Watermark(10), 3]
    sinks = Supplier(lambda: RecordingSink())
    job = service.submit(linear_dag(lambda: ListSource(stream), sinks, 1, 1))
    with pytest.raises(JobError, match="watermarks must increase") as info:
        job.join(timeout=10)
    assert isinstance(info.value.__cause__, JetbenchError)
    assert sinks.created[0].closed == 1
