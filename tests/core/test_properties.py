"""Property-based: random DAGs give the same multiset as a direct Python evaluation.

A DAG is a source, a trunk of stages, and optionally two branches re-joined at a two-input
sink (a diamond). Stages are map / filter / flat_map / two-stage keyed counting(), each with a
random local parallelism (1-3), inbound routing and queue size (1-64). The reference evaluates
the same functions on multisets: a broadcast edge multiplies its items by the consumer's
parallelism, every other routing delivers each item once.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from jetbench import DAG, Edge, ExecutionService
from jetbench.processors import (
    accumulate_by_key,
    collect_sink,
    combine_by_key,
    counting,
    filter_processor,
    flat_map_processor,
    items_source,
    map_processor,
)

MAPS = [lambda x: x + 1, lambda x: 2 * x, lambda x: x % 17, lambda x: -x]
FILTERS = [lambda x: x % 2 == 0, lambda x: x % 3 != 0, lambda x: abs(x) < 40]
FLAT_MAPS = [
    lambda x: [x, x + 1],
    lambda x: [] if x % 5 == 0 else [x],
    lambda x: range(abs(x) % 4),
]
KEYS = [lambda x: x % 3, lambda x: x % 7, lambda x: x]
ROUTINGS = ["unicast", "partitioned", "broadcast", "isolated", "all_to_one"]


@dataclass(frozen=True)
class Stage:
    kind: str  # map | filter | flat_map | count
    fn: int
    lp: int
    routing: str
    queue_size: int
    combine_lp: int = 1


@dataclass(frozen=True)
class Spec:
    items: tuple[int, ...]
    source_lp: int
    trunk: tuple[Stage, ...]
    branches: tuple[tuple[Stage, ...], tuple[Stage, ...]] | None
    sink_lp: int
    sink_routings: tuple[str, str]
    sink_queue: int
    outbox: int


small_lp = st.integers(1, 3)
queue_sizes = st.integers(1, 64)


@st.composite
def stages(draw):
    kind = draw(st.sampled_from(["map", "filter", "flat_map", "count"]))
    n = {"map": len(MAPS), "filter": len(FILTERS), "flat_map": len(FLAT_MAPS), "count": len(KEYS)}[
        kind
    ]
    return Stage(
        kind=kind,
        fn=draw(st.integers(0, n - 1)),
        lp=draw(small_lp),
        routing=draw(st.sampled_from(ROUTINGS)),
        queue_size=draw(queue_sizes),
        combine_lp=draw(small_lp),
    )


chains = st.lists(stages(), min_size=0, max_size=3).map(tuple)

specs = st.builds(
    Spec,
    items=st.lists(st.integers(-50, 50), max_size=120).map(tuple),
    source_lp=small_lp,
    trunk=chains,
    branches=st.none() | st.tuples(chains, chains),
    sink_lp=small_lp,
    sink_routings=st.tuples(st.sampled_from(ROUTINGS), st.sampled_from(ROUTINGS)),
    sink_queue=queue_sizes,
    outbox=st.sampled_from([1, 3, 64, 1024]),
)


def _kv_to_int(kv):
    return kv[0] * 100_000 + kv[1]


def _key0(kv):
    return kv[0]


def _identity(x):
    return x


class Builder:
    """Builds the DAG and, alongside, the reference multiset of every vertex's output."""

    def __init__(self) -> None:
        self.dag = DAG()
        self.count = 0
        self.out_ordinals: dict[str, int] = {}

    def vertex(self, label, supplier, lp):
        self.count += 1
        v = self.dag.new_vertex(f"{label}{self.count}", supplier, lp)
        self.out_ordinals[v.name] = 0
        return v

    def connect(self, up, down, routing, queue_size, down_ordinal=0, key=_identity) -> int:
        """Add an edge; return the factor by which it multiplies items (broadcast: LP)."""
        if routing == "isolated" and down.local_parallelism < up.local_parallelism:
            routing = "unicast"
        ordinal = self.out_ordinals[up.name]
        self.out_ordinals[up.name] += 1
        edge = Edge.from_(up, ordinal).to(down, down_ordinal).queue_size(queue_size)
        if routing == "partitioned":
            edge.partitioned(key)
        elif routing == "broadcast":
            edge.broadcast()
        elif routing == "isolated":
            edge.isolated()
        elif routing == "all_to_one":
            edge.all_to_one()
        self.dag.edge(edge)
        return down.local_parallelism if routing == "broadcast" else 1

    def stage(self, head, ref: Counter, s: Stage):
        if s.kind == "count":
            key = KEYS[s.fn]
            acc = self.vertex("acc", accumulate_by_key(key, counting()), s.lp)
            factor = self.connect(head, acc, s.routing, s.queue_size)
            combine = self.vertex("combine", combine_by_key(counting()), s.combine_lp)
            self.connect(acc, combine, "partitioned", s.queue_size, key=_key0)
            conv = self.vertex("kv2int", map_processor(_kv_to_int), s.combine_lp)
            self.connect(combine, conv, "unicast", s.queue_size)
            counts: Counter = Counter()
            for x, m in ref.items():
                counts[key(x)] += m * factor
            return conv, Counter(_kv_to_int(kv) for kv in counts.items())
        if s.kind == "map":
            fn = MAPS[s.fn]
            v = self.vertex("map", map_processor(fn), s.lp)
            out = Counter()
            factor = self.connect(head, v, s.routing, s.queue_size)
            for x, m in ref.items():
                out[fn(x)] += m * factor
            return v, out
        if s.kind == "filter":
            fn = FILTERS[s.fn]
            v = self.vertex("filter", filter_processor(fn), s.lp)
            factor = self.connect(head, v, s.routing, s.queue_size)
            return v, Counter({x: m * factor for x, m in ref.items() if fn(x)})
        fn = FLAT_MAPS[s.fn]
        v = self.vertex("flat", flat_map_processor(fn), s.lp)
        factor = self.connect(head, v, s.routing, s.queue_size)
        out = Counter()
        for x, m in ref.items():
            for y in fn(x):
                out[y] += m * factor
        return v, out

    def chain(self, head, ref, chain):
        for s in chain:
            head, ref = self.stage(head, ref, s)
        return head, ref


def build(spec: Spec) -> tuple[DAG, Counter]:
    b = Builder()
    head = b.vertex("source", items_source(list(spec.items)), spec.source_lp)
    ref = Counter(spec.items)
    head, ref = b.chain(head, ref, spec.trunk)
    sink = b.vertex("sink", collect_sink(), spec.sink_lp)
    if spec.branches is None:
        factor = b.connect(head, sink, spec.sink_routings[0], spec.sink_queue)
        return b.dag, Counter({x: m * factor for x, m in ref.items()})
    expected: Counter = Counter()
    for ordinal, branch in enumerate(spec.branches):
        tail, branch_ref = b.chain(head, ref, branch)
        factor = b.connect(
            tail, sink, spec.sink_routings[ordinal], spec.sink_queue, down_ordinal=ordinal
        )
        for x, m in branch_ref.items():
            expected[x] += m * factor
    return b.dag, expected


@pytest.mark.parametrize("stealing", [False, True], ids=["no-stealing", "stealing"])
@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(spec=specs)
def test_random_dag_matches_reference(threads, stealing, spec):
    service = ExecutionService(
        cooperative_threads=threads, work_stealing=stealing, outbox_capacity=spec.outbox
    )
    dag, expected = build(spec)
    result = service.submit(dag).join(timeout=60)
    assert Counter(result) == +expected


def test_builder_reference_example():
    """The reference evaluation itself, on a hand-checked diamond."""
    spec = Spec(
        items=(1, 2, 3, 4),
        source_lp=2,
        trunk=(Stage("map", 1, 2, "isolated", 4),),  # 2x
        branches=(
            (Stage("filter", 1, 1, "unicast", 2),),  # not divisible by 3: 2, 4, 8
            (Stage("count", 0, 3, "broadcast", 8, 2),),  # x % 3 counted 3 times
        ),
        sink_lp=2,
        sink_routings=("broadcast", "unicast"),
        sink_queue=3,
        outbox=3,
    )
    _, expected = build(spec)
    # branch 0: [2, 4, 8] broadcast to 2 sink instances; branch 1: 2,4,6,8 -> keys 2,1,0,2
    assert expected == Counter({2: 2, 4: 2, 8: 2, 200_006: 1, 100_003: 1, 3: 1})
    result = ExecutionService(cooperative_threads=1).run(build(spec)[0], timeout=10)
    assert Counter(result) == expected
