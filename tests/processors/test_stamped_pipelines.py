"""Property-based: timestamped DAGs mixing processors that read columns (stamped chunks) with
processors that read ``(ts, item)`` pairs give what the item-by-item definition gives.

A DAG is a source (1-2 instances) -> insert watermarks (from plain items with a ``ts_fn``, or
from ``(ts, item)`` pairs, emitted as pairs or as stamped chunks) -> a chain of random stages ->
optionally a stateful tail (a tumbling, sliding, global or session window, or `flat_map_stateful`
item by item, in batches or sorted; opted in, each reads columns or pairs as they come) -> a
checking sink. Stages: timestamped
map / filter / flat_map / fused chains (`TransformP`, opted in), a user processor reading pairs
item by item, a user processor reading and emitting columns, and optionally the planner's
drop-timestamps at the end; each with a random parallelism (1-2), inbound routing (partitioned by
an `EventKey` or by a function of the pair, unicast, isolated, broadcast) and queue size (1-8),
with a small outbox. The reference applies the same functions to the pairs one by one (a
broadcast edge multiplies its items by the consumer's parallelism). The sink also checks that no
item comes after a watermark above its timestamp: watermarks kept their place among the data.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from jetbench import DAG, Edge, ExecutionService, Processor, Watermark
from jetbench.core.errors import JetbenchError
from jetbench.core.inbox import Inbox
from jetbench.core.items import Stamped
from jetbench.core.outbox import Outbox
from jetbench.core.processor import ProcessorContext
from jetbench.processors import Transform, collect_sink, items_source, transform_processor
from jetbench.processors.aggregate_operation import counting, summing
from jetbench.processors.flat_map_stateful import flat_map_stateful
from jetbench.processors.insert_watermarks import InsertWatermarksP, insert_watermarks
from jetbench.processors.items_source import stamped_items_source
from jetbench.processors.planning import EventKey
from jetbench.processors.transform import TransformP
from jetbench.processors.window_aggregate import window_aggregate
from jetbench.processors.window_definition import WindowResult, session, sliding, tumbling

MAPS = [lambda x: x + 1, lambda x: 2 * x, lambda x: x % 17]
FILTERS = [lambda x: x % 2 == 0, lambda x: x % 3 != 0]
FLAT_MAPS = [lambda x: [x, x + 1], lambda x: [] if x % 5 == 0 else [x], lambda x: range(x % 3)]
STEPS = {"map": MAPS, "filter": FILTERS, "flat_map": FLAT_MAPS}
ROUTINGS = ["unicast", "event_key", "pair_key", "isolated", "broadcast"]


@dataclass(frozen=True)
class Stage:
    kind: str  # "chain" (TransformP steps), "pairs" (user, item API), "columns" (user, take_stamped)
    steps: tuple[tuple[str, int], ...]
    lp: int
    routing: str
    queue_size: int


TAILS = ["window", "sliding", "global", "session", "stateful", "stateful_batch", "stateful_sorted"]


@dataclass(frozen=True)
class Spec:
    items: tuple[int, ...]
    source_lp: int
    from_pairs: bool
    stages: tuple[Stage, ...]
    drop: bool
    outbox: int
    columns_source: bool = False  # from pairs: the source emits them as stamped chunks
    tail: str | None = None  # a stateful vertex (TAILS) after the stages
    tail_lp: int = 1


steps = st.lists(st.tuples(st.sampled_from(sorted(STEPS)), st.integers(0, 1)), min_size=0, max_size=3)


@st.composite
def stage_specs(draw):
    kind = draw(st.sampled_from(["chain", "chain", "pairs", "columns"]))
    return Stage(kind, tuple(draw(steps)) if kind == "chain" else (), draw(st.integers(1, 2)),
                 draw(st.sampled_from(ROUTINGS)), draw(st.integers(1, 8)))


specs = st.builds(
    Spec,
    items=st.lists(st.integers(0, 50), max_size=60).map(lambda xs: tuple(sorted(xs))),
    source_lp=st.integers(1, 2),
    from_pairs=st.booleans(),
    stages=st.lists(stage_specs(), min_size=1, max_size=5).map(tuple),
    drop=st.booleans(),
    outbox=st.integers(1, 16),
    columns_source=st.booleans(),
    tail=st.one_of(st.none(), st.sampled_from(TAILS)),
    tail_lp=st.integers(1, 2),
)


class PairsUser(Processor):
    """Did not opt in: must see (ts, item) pairs; reads them one by one, emits pairs."""

    def process(self, ordinal, inbox):
        while inbox:
            pair = inbox.peek()
            assert type(pair) is tuple and len(pair) == 2, pair
            t, x = pair
            if not self.outbox.offer((t, x + 3)):
                return
            inbox.remove()


class ColumnsUser(Processor):
    """Opted in: reads columns, emits columns, a prefix at a time when the outbox is nearly full."""

    accepts_stamped = True

    def process(self, ordinal, inbox):
        room = self.outbox.room()
        if room <= 0:
            return
        ts, items = inbox.take_stamped(room)
        assert self.outbox.offer_stamped(ts, [x * 3 for x in items]) == len(items)


class CheckingSink(Processor):
    """Collects what arrives, and any item that came after a watermark above its timestamp."""

    collects = True

    def __init__(self):
        self.got: list = []
        self.late: list = []
        self.watermark = None

    def process(self, ordinal, inbox):
        for item in inbox.take():
            self.got.append(item)
            if type(item) is tuple and len(item) == 2 and self.watermark is not None and item[0] < self.watermark:
                self.late.append((self.watermark, item))

    def try_process_watermark(self, watermark: Watermark) -> bool:
        if not watermark.is_idle_marker:
            self.watermark = watermark.timestamp
        return True

    def result_part(self):
        return self.got, self.late


def _fn_chain(stage: Stage):
    t = Transform(timestamped=True)
    for kind, i in stage.steps:
        t = getattr(t, kind)(STEPS[kind][i])
    return t


def tail_key(x):
    return x % 3


def add_to_total(k, x):
    k.state += x
    k.timer = math.inf  # the total goes out at the end of the input
    return [x * 10]


def add_to_total_all(k, pairs):
    out = []
    for ts, x in pairs:
        k.state += x
        out.append((ts, x * 10))
    k.timer = math.inf
    return out


def running_total(k, x):
    k.state += x
    k.timer = math.inf
    return [("run", k.key, k.state)]


def final_total(k):
    return [("total", k.key, k.state)]


def _tail(tail: str):
    if tail == "window":
        return window_aggregate(tail_key, counting(), tumbling(10))
    if tail == "sliding":
        return window_aggregate(tail_key, summing(abs), sliding(20, 10))
    if tail == "global":
        return window_aggregate(None, counting(), tumbling(10))
    if tail == "session":
        return window_aggregate(tail_key, counting(), session(4))
    if tail == "stateful_sorted":
        return flat_map_stateful(tail_key, int, running_total, final_total, sorted_input=True, order_key=abs)
    return flat_map_stateful(tail_key, int, add_to_total, final_total,
                             fn_all=add_to_total_all if tail == "stateful_batch" else None)


def _build(spec: Spec) -> DAG:
    dag = DAG()
    if spec.from_pairs and spec.columns_source:
        src = dag.new_vertex("source", stamped_items_source([3 * x for x in spec.items], list(spec.items)),
                             spec.source_lp)
        wm = dag.new_vertex("watermarks", insert_watermarks(None, 0, 5), spec.source_lp)
    elif spec.from_pairs:
        src = dag.new_vertex("source", items_source([(3 * x, x) for x in spec.items]), spec.source_lp)
        wm = dag.new_vertex("watermarks", insert_watermarks(None, 0, 5), spec.source_lp)
    else:
        src = dag.new_vertex("source", items_source(list(spec.items)), spec.source_lp)
        wm = dag.new_vertex("watermarks", insert_watermarks(lambda x: 3 * x, 0, 5), spec.source_lp)
    dag.edge(Edge.between(src, wm).isolated())
    prev, prev_lp = wm, spec.source_lp
    for i, stage in enumerate(spec.stages):
        if stage.kind == "chain":
            supplier = transform_processor(_fn_chain(stage))
        else:
            supplier = PairsUser if stage.kind == "pairs" else ColumnsUser
        v = dag.new_vertex(f"s{i}-{stage.kind}", supplier, stage.lp)
        edge = Edge.between(prev, v).queue_size(stage.queue_size)
        routing = stage.routing
        if routing == "isolated" and stage.lp < prev_lp:
            routing = "unicast"  # an isolated edge needs as many consumers as producers
        if routing == "event_key":
            edge.partitioned(EventKey(lambda x: x % 3))
        elif routing == "pair_key":
            edge.partitioned(lambda pair: pair[0] + pair[1])
        elif routing == "isolated":
            edge.isolated()
        elif routing == "broadcast":
            edge.broadcast()
        dag.edge(edge)
        prev, prev_lp = v, stage.lp
    if spec.tail is not None:  # each key in one instance (a global window: one instance)
        lp = 1 if spec.tail == "global" else spec.tail_lp
        v = dag.new_vertex(f"tail-{spec.tail}", _tail(spec.tail), lp)
        dag.edge(Edge.between(prev, v).partitioned(EventKey(tail_key)).queue_size(3))
        prev, prev_lp = v, lp
    if spec.drop:
        v = dag.new_vertex("drop-timestamps", transform_processor(Transform(timestamped=True, keep_timestamps=False)),
                           prev_lp)
        dag.edge(Edge.between(prev, v).isolated())
        prev = v
    sink = dag.new_vertex("sink", CheckingSink, 1)
    dag.edge(Edge.between(prev, sink))
    return dag


def _reference(spec: Spec) -> Counter:
    """The sink's items, applying each stage's functions to the pairs one by one."""
    pairs = Counter((3 * x, x) for x in spec.items)
    for stage in spec.stages:
        if stage.routing == "broadcast":
            pairs = Counter({p: n * stage.lp for p, n in pairs.items()})
        out: Counter = Counter()
        for (t, x), n in pairs.items():
            if stage.kind == "pairs":
                values = [x + 3]
            elif stage.kind == "columns":
                values = [x * 3]
            else:
                values = [x]
                for kind, i in stage.steps:
                    fn = STEPS[kind][i]
                    if kind == "map":
                        values = [fn(v) for v in values]
                    elif kind == "filter":
                        values = [v for v in values if fn(v)]
                    else:
                        values = [w for v in values for w in fn(v)]
            for v in values:
                out[(t, v)] += n
        pairs = out
    if spec.tail is not None:
        pairs = _reference_tail(spec.tail, pairs)
    if not spec.drop:
        return pairs
    items: Counter = Counter()
    for (_, x), n in pairs.items():
        items[x] += n
    return items


def _reference_tail(tail: str, pairs: Counter) -> Counter:
    """The tail's output over ``pairs`` (no event is late: every instance's items come in order
    of time, watermarks after them). Windows: per (end, key); sessions: a key's timestamps
    within the gap of each other; stateful: per item, and per key at the end."""
    out: Counter = Counter()
    if tail in ("window", "global", "sliding"):
        acc: Counter = Counter()
        for (t, x), n in pairs.items():
            key = None if tail == "global" else tail_key(x)
            first_end = t - t % 10 + 10
            for end in ([first_end] if tail != "sliding" else [first_end, first_end + 10]):
                acc[(end, key)] += n * (abs(x) if tail == "sliding" else 1)
        size = 20 if tail == "sliding" else 10
        for (end, key), value in acc.items():
            out[(end, WindowResult(end - size, end, key, value))] += 1
        return out
    if tail == "session":
        by_key: dict = {}
        for (t, x), n in pairs.items():
            by_key.setdefault(tail_key(x), Counter())[t] += n
        for key, stamps in by_key.items():
            start = end = None
            count = 0
            for t in sorted(stamps):
                if end is not None and t > end:
                    out[(end, WindowResult(start, end, key, count))] += 1
                    start, count = None, 0
                start = t if start is None else start
                end, count = t + 4, count + stamps[t]
            out[(end, WindowResult(start, end, key, count))] += 1
        return out
    totals: Counter = Counter()
    keys = set()
    expanded = sorted((t, abs(x), x) for (t, x), n in pairs.items() for _ in range(n))
    for t, _, x in expanded:  # sorted: by time, then order_key (abs), as sorted mode hands them over
        key = tail_key(x)
        keys.add(key)
        totals[key] += x
        out[(t, ("run", key, totals[key]) if tail == "stateful_sorted" else x * 10)] += 1
    for key in keys:
        out[(math.inf, ("total", key, totals[key]))] += 1
    return out


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs)
def test_stamped_transport_gives_the_item_by_item_result(spec):
    service = ExecutionService(cooperative_threads=2, outbox_capacity=spec.outbox)
    items, late = service.run(_build(spec), timeout=60)  # the one sink instance's result_part
    assert Counter(items) == _reference(spec)
    assert not late, late[:5]


# -- one job: who gets columns, who gets pairs; counts per vertex --------------------------------


def _mixed_dag(n: int) -> DAG:
    dag = DAG()
    src = dag.new_vertex("source", items_source(list(range(n))), 1)
    wm = dag.new_vertex("watermarks", insert_watermarks(lambda x: x * 2, 0, 10), 1)
    cols = dag.new_vertex("columns", ColumnsUser, 2)
    even = dag.new_vertex("filter", transform_processor(Transform(timestamped=True).filter(lambda x: x % 2 == 0)), 2)
    twice = dag.new_vertex("twice", transform_processor(Transform(timestamped=True).flat_map(lambda x: [x, -x])), 1)
    pairs = dag.new_vertex("pairs", PairsUser, 2)
    sink = dag.new_vertex("sink", collect_sink(), 1)
    dag.edge(Edge.between(src, wm)).edge(Edge.between(wm, cols).queue_size(3))
    dag.edge(Edge.between(cols, even).partitioned(EventKey(lambda x: x % 7)).queue_size(5))
    dag.edge(Edge.between(even, twice)).edge(Edge.between(twice, pairs).partitioned(lambda p: p[0] % 3))
    dag.edge(Edge.between(pairs, sink))
    return dag


def test_a_mixed_job_gives_the_pairs_and_the_counts_per_vertex_of_its_definition():
    n = 1000
    job = ExecutionService(cooperative_threads=2, outbox_capacity=16).submit(_mixed_dag(n))
    result = job.join(timeout=60)
    expected = [(2 * x, y + 3) for x in range(n) if (3 * x) % 2 == 0 for y in (3 * x, -3 * x)]
    assert sorted(result) == sorted(expected)
    # counts in items, whatever the chunks: a change in them is a change of meaning
    counts = {v: (m["received_count"], m["emitted_count"]) for v, m in job.metrics().by_vertex().items()}
    kept = n // 2
    assert counts == {
        "source": (0, n), "watermarks": (n, n), "columns": (n, n), "filter": (n, kept),
        "twice": (kept, 2 * kept), "pairs": (2 * kept, 2 * kept), "sink": (2 * kept, 0),
    }


def test_a_processor_that_did_not_opt_in_gets_pairs_from_a_stamped_producer():
    assert Processor().accepts_stamped is False  # the default
    dag = DAG()
    src = dag.new_vertex("source", items_source([1, 2, 3]), 1)
    wm = dag.new_vertex("watermarks", insert_watermarks(lambda x: x * 10, 0, 1), 1)
    pairs = dag.new_vertex("pairs", PairsUser, 1)
    sink = dag.new_vertex("sink", collect_sink(), 1)
    dag.edge(Edge.between(src, wm)).edge(Edge.between(wm, pairs)).edge(Edge.between(pairs, sink))
    assert ExecutionService().run(dag, timeout=30) == [(10, 4), (20, 5), (30, 6)]


def test_a_timestamped_map_fed_plain_items_fails_naming_the_vertex_and_the_item():
    dag = DAG()
    src = dag.new_vertex("source", items_source([1, 2]), 1)
    ts_map = dag.new_vertex("ts-map", transform_processor(Transform(timestamped=True).map(str)), 1)
    dag.edge(Edge.between(src, ts_map))
    with pytest.raises(JetbenchError, match=r"(?s)ts-map.*item 0 of a timestamped batch is not a \(ts, item\) pair: 1"):
        ExecutionService().run(dag, timeout=30)


@pytest.mark.parametrize("make", [
    lambda: InsertWatermarksP(None, allowed_lag=0, throttle_frame=1000),
    lambda: TransformP(Transform(timestamped=True).map(str)),
    lambda: TransformP(Transform(timestamped=True).filter(bool)),
], ids=["watermarks", "map", "filter"])
def test_a_column_processor_keeps_the_form_that_arrives(make):
    """Pairs from a producer that emits pairs go on as pairs (no unzip here and zip again at the
    next pair-reading vertex); columns go on as columns."""
    for inbox, kind in ((Inbox([(5, 1), (7, 2)]), list), (Inbox(Stamped([5, 7], [1, 2])), Stamped)):
        p = make()
        outbox = Outbox(1, capacity=8)
        p.init(outbox, ProcessorContext("v", 0, 0, 1, 1))
        p.process(0, inbox)
        out = outbox.take_chunk(0)
        assert type(out) is kind
        pairs = out.pairs() if isinstance(out, Stamped) else out
        # the watermark processor sends what comes before its first watermark first
        assert pairs and [t for t, _ in pairs] == [5, 7][:len(pairs)]
