"""Routing policies end to end: a recording sink collects (global_index, item) per instance."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from engine_helpers import ListSource, RecordingSink, Supplier, linear_dag

from jetbench import DAG, Edge


def _run_routing(service, configure, items, source_lp, sink_lp, per_call=10, tag=False):
    shared: list = []
    sinks = Supplier(lambda: RecordingSink(shared))
    sources = Supplier(lambda: ListSource(items, per_call=per_call, tag=tag))
    dag = linear_dag(sources, sinks, source_lp, sink_lp, configure)
    service.submit(dag).join(timeout=20)
    by_instance: dict[int, list] = defaultdict(list)
    for index, item in shared:
        by_instance[index].append(item)
    assert len(sinks.created) == sink_lp
    for s in sinks.created:  # every instance completed normally, even those that got nothing
        assert s.events[-1] == ("complete",)
        assert s.closed == 1
    return shared, by_instance


def test_partitioned_same_key_same_instance_exactly_once(service):
    items = [(k % 37, seq) for seq, k in enumerate(range(3000))]
    shared, by_instance = _run_routing(
        service, lambda e: e.partitioned(lambda item: item[0]), items, source_lp=2, sink_lp=3
    )
    assert Counter(item for _, item in shared) == Counter(items)
    owner: dict[int, set[int]] = defaultdict(set)
    for index, (key, _) in shared:
        owner[key].add(index)
    assert all(len(instances) == 1 for instances in owner.values()), owner
    assert len(by_instance) == 3  # 37 keys spread over all 3 instances


def test_partitioned_preserves_per_key_order_from_one_producer(service):
    items = [(k % 5, seq) for seq, k in enumerate(range(2000))]
    shared, _ = _run_routing(service, lambda e: e.partitioned(lambda i: i[0]), items, 1, 3)
    per_key: dict[int, list[int]] = defaultdict(list)
    for _, (key, seq) in shared:
        per_key[key].append(seq)
    for seqs in per_key.values():
        assert seqs == sorted(seqs)


def test_broadcast_every_instance_gets_every_item(service):
    items = list(range(1500))
    _, by_instance = _run_routing(service, lambda e: e.broadcast(), items, source_lp=2, sink_lp=3)
    assert sorted(by_instance) == [0, 1, 2]
    for received in by_instance.values():
        assert Counter(received) == Counter(items)


def test_isolated_each_consumer_fed_by_one_producer(service):
    items = list(range(2000))
    shared, by_instance = _run_routing(
        service, lambda e: e.isolated(), items, source_lp=2, sink_lp=4, tag=True
    )
    assert sorted(item for _, item in shared) == sorted((i % 2, i) for i in items)
    assert sorted(by_instance) == [0, 1, 2, 3]  # chunks alternate over a producer's consumers
    for consumer, received in by_instance.items():
        producers = {producer for producer, _ in received}
        assert producers == {consumer % 2}, (consumer, producers)


def test_isolated_equal_parallelism_is_one_to_one(service):
    items = list(range(600))
    _, by_instance = _run_routing(service, lambda e: e.isolated(), items, 3, 3, tag=True)
    for consumer, received in by_instance.items():
        assert {p for p, _ in received} == {consumer}
        # one producer, one queue: FIFO order is kept
        assert [x for _, x in received] == sorted(x for _, x in received)


def test_all_to_one_only_instance_zero_receives(service):
    items = list(range(2500))
    shared, by_instance = _run_routing(service, lambda e: e.all_to_one(), items, 2, 3)
    assert set(by_instance) == {0}
    assert Counter(item for _, item in shared) == Counter(items)


def test_unicast_each_item_exactly_once(service):
    items = list(range(3000))
    shared, by_instance = _run_routing(service, lambda e: e.unicast(), items, 2, 3)
    assert Counter(item for _, item in shared) == Counter(items)
    assert len(shared) == len(items)
    assert len(by_instance) == 3  # round-robin over chunks reaches every instance


def test_unicast_single_path_keeps_order(service):
    items = list(range(5000))
    shared, _ = _run_routing(service, lambda e: e.queue_size(8), items, 1, 1, per_call=7)
    assert [x for _, x in shared] == items


def test_outbound_ordinals_route_separately(service):
    """A source emitting to ordinal 0, ordinal 1, or both (ordinal=None) via two edges."""

    class Splitter(ListSource):
        def complete(self):
            while self.pos < len(self.items):
                x = self.items[self.pos]
                target = None if x % 3 == 0 else x % 3 - 1  # 0 -> both, 1 -> ord 0, 2 -> ord 1
                if not self.outbox.offer(x, target):
                    return False
                self.pos += 1
            return True

    items = list(range(900))
    left_items: list = []
    right_items: list = []
    dag = DAG()
    src = dag.new_vertex("src", lambda: Splitter(items), 1)
    left = dag.new_vertex("left", lambda: RecordingSink(left_items), 2)
    right = dag.new_vertex("right", lambda: RecordingSink(right_items), 1)
    dag.edge(Edge.from_(src, 0).to(left)).edge(Edge.from_(src, 1).to(right).queue_size(4))
    service.submit(dag).join(timeout=20)
    assert sorted(x for _, x in left_items) == [x for x in items if x % 3 in (0, 1)]
    assert sorted(x for _, x in right_items) == [x for x in items if x % 3 in (0, 2)]


@pytest.mark.parametrize("slow_merge", [False, True], ids=["fast-merge", "slow-merge"])
def test_priority_edge_consumed_first(service, slow_merge):
    """Ordinal 1 has priority 0 and is drained and completed before any ordinal-0 item.
    A slow merge lets the last items and DONE of an edge arrive in one drain."""
    lo_items = [("lo", i) for i in range(3000)]  # more than its queue: its producer blocks
    hi_items = [("hi", i) for i in range(300)]
    merge = Supplier(lambda: RecordingSink(max_per_call=1 if slow_merge else None))
    dag = DAG()
    lo = dag.new_vertex("lo", lambda: ListSource(lo_items, per_call=50), 1)
    hi = dag.new_vertex("hi", lambda: ListSource(hi_items, per_call=3), 2)
    sink = dag.new_vertex("merge", merge, 2)
    dag.edge(Edge.from_(lo).to(sink, 0).priority(1).queue_size(64))
    dag.edge(Edge.from_(hi).to(sink, 1).priority(0).queue_size(16))
    service.submit(dag).join(timeout=20)
    total_lo = total_hi = 0
    for p in merge.created:
        ev = p.events
        done_hi = ev.index(("complete_edge", 1))
        done_lo = ev.index(("complete_edge", 0))
        assert ev.count(("complete_edge", 1)) == ev.count(("complete_edge", 0)) == 1
        lo_positions = [k for k, e in enumerate(ev) if e[0] == "item" and e[1] == 0]
        hi_positions = [k for k, e in enumerate(ev) if e[0] == "item" and e[1] == 1]
        assert all(k < done_hi for k in hi_positions)
        assert all(done_hi < k < done_lo for k in lo_positions)
        assert all(e[2][0] == ("lo" if e[1] == 0 else "hi") for e in ev if e[0] == "item")
        assert ev[-1] == ("complete",)
        total_lo += len(lo_positions)
        total_hi += len(hi_positions)
    assert (total_lo, total_hi) == (3000, 300)


def test_priority_groups_with_several_edges(service):
    """Edges of equal priority interleave; the next priority group waits for the whole group."""
    merge = Supplier(lambda: RecordingSink())
    dag = DAG()
    a = dag.new_vertex("a", lambda: ListSource([("a", i) for i in range(400)], per_call=5), 1)
    b = dag.new_vertex("b", lambda: ListSource([("b", i) for i in range(400)], per_call=5), 1)
    c = dag.new_vertex("c", lambda: ListSource([("c", i) for i in range(400)], per_call=5), 1)
    sink = dag.new_vertex("merge", merge, 1)
    dag.edge(Edge.from_(c).to(sink, 0).priority(7).queue_size(8))
    dag.edge(Edge.from_(a).to(sink, 1).priority(-1).queue_size(8))
    dag.edge(Edge.from_(b).to(sink, 2).priority(-1).queue_size(8))
    service.submit(dag).join(timeout=20)
    (p,) = merge.created
    tags = [e[2][0] for e in p.events if e[0] == "item"]
    first_c = tags.index("c")
    assert set(tags[:first_c]) == {"a", "b"} and tags[:first_c].count("a") == 400
    assert set(tags[first_c:]) == {"c"} and len(tags) == 1200
    edge_done = [e[1] for e in p.events if e[0] == "complete_edge"]
    assert sorted(edge_done[:2]) == [1, 2] and edge_done[2] == 0


def test_a_chunk_no_target_takes_waits_uncopied():
    """A chunk (or a partitioned part) that a full queue refuses waits as it is: copying it
    would cost a pass over its items each time the queue is still full (a chunk is copied only
    when a queue takes a part of it)."""
    from jetbench.core.queues import SPSCQueue
    from jetbench.core.routing import PartitionedCollector, RoundRobinCollector

    full = SPSCQueue(capacity=3)
    full.offer_chunk([0, 0, 0])
    chunk = [1, 2, 3]
    unicast = RoundRobinCollector([full])
    assert unicast.route(chunk) == 0 and unicast.pending
    assert unicast.push() == 0  # still full
    full.popleft()  # the consumer takes what was there
    full.polled += 3
    assert unicast.push() == 3 and full.chunks[0] is chunk

    queue = SPSCQueue(capacity=2)
    queue.offer_chunk([0, 0])
    partitioned = PartitionedCollector([queue], key_fn=lambda x: x)
    assert partitioned.route([4, 5]) == 0
    part = next(p for p in partitioned._rests if p)
    assert partitioned.push() == 0
    assert next(p for p in partitioned._rests if p) is part  # refused again, not copied
    queue.popleft()
    queue.polled += 2
    assert partitioned.push() == 2 and queue.chunks[0] is part


# -- a chunk handed to a queue belongs to its consumer at once ------------------------------------


def _consumer_joins_on_wake(first, other_chunk):
    """Queue ``first`` of a consumer whose stream also reads a second queue holding
    ``other_chunk``: when a producer's offer wakes it (`SPSCQueue.wake`, as it wakes a dedicated
    thread), the consumer drains at once, the schedule a blocking sink's thread can take
    between a producer's append and its next step. The drain joins the second queue's chunk
    into the chunk it popped first (the producer's): what a producer reads of its chunk after
    offering it may have grown. Returns the drained batches."""
    from jetbench.core.queues import InboundStream, SPSCQueue

    second = SPSCQueue(capacity=64)
    second.offer_chunk(other_chunk)
    stream = InboundStream(0, 0, [first, second])
    drained: list = []
    first.wake = lambda: drained.append(stream.drain(1000))
    return drained


@pytest.mark.parametrize("routing", ["unicast", "partitioned", "broadcast"])
def test_a_producer_never_reads_a_chunk_again_once_a_queue_took_it(routing):
    """Issue 36's duplicated lines: a producer offered a chunk, the consumer's thread (woken by
    the offer) popped it and joined another queue's chunk into it, and the producer, reading the
    chunk's length after the offer, took the joined items for a refused remainder and sent them
    again, to the next instance (unicast) or the same one (partitioned, broadcast). Each item
    must reach the consumers once."""
    from jetbench.core.queues import SPSCQueue
    from jetbench.core.routing import BroadcastCollector, PartitionedCollector, RoundRobinCollector

    woken, other = SPSCQueue(capacity=64), SPSCQueue(capacity=64)
    drained = _consumer_joins_on_wake(woken, ["b1", "b2"])
    if routing == "unicast":
        collector = RoundRobinCollector([woken, other])
        moved = collector.route(["a1", "a2"])
    elif routing == "partitioned":
        collector = PartitionedCollector([woken, other], key_fn=lambda x: 0)  # every item to queue 0
        moved = collector.route(["a1", "a2"])
    else:
        collector = BroadcastCollector([woken])
        moved = collector.route(["a1", "a2"])
    for _ in range(3):
        if collector.pending:
            moved += collector.push()
    woken.wake = None
    for q in (woken, other):
        while q.chunks:
            drained.append(q.popleft())
    got = Counter(x for chunk in drained if chunk for x in chunk)
    assert got == Counter(["a1", "a2", "b1", "b2"]), f"{routing}: {sorted(got.elements())}"
    assert moved == 2 and not collector.pending
