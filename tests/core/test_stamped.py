"""Stamped chunks (issue 17 §2): a timestamped stream's columns travel through queues, outboxes,
collectors and inboxes beside plain list chunks, counted in items, and reach a processor that did
not opt in as the ``(ts, item)`` pairs they stand for."""

from __future__ import annotations

import pytest

from jetbench.core.errors import JetbenchError
from jetbench.core.inbox import Inbox
from jetbench.core.items import DONE, SnapshotBarrier, Stamped, Watermark, chunk_tail, unzip_pairs
from jetbench.core.outbox import BlockingOutbox, Outbox
from jetbench.core.queues import InboundStream, SPSCQueue
from jetbench.core.routing import BroadcastCollector, PartitionedCollector, RoundRobinCollector
from jetbench.core.snapshot_tasklet import BarrierInboundStream
from jetbench.processors.planning import EventKey


def stamped(ts, items):
    return Stamped(list(ts), list(items))


def pairs_of(chunk):
    return chunk.pairs() if isinstance(chunk, Stamped) else list(chunk)


# -- the chunk ----------------------------------------------------------------------------------


def test_a_stamped_chunk_counts_items_and_slices_both_columns():
    chunk = stamped([1, 2, 3], "abc")
    assert len(chunk) == 3 and chunk and not Stamped([], [])
    assert chunk.slice(1, 2).pairs() == [(2, "b")]
    assert chunk_tail(chunk, 2).pairs() == [(3, "c")]
    copy = chunk.copy()
    copy.items.append("d")
    copy.ts.append(4)
    assert chunk.pairs() == [(1, "a"), (2, "b"), (3, "c")]


def test_unzip_names_the_item_that_is_not_a_pair():
    assert unzip_pairs([(1, "a"), (2, "b")]) == ([1, 2], ["a", "b"])
    with pytest.raises(JetbenchError, match=r"item 1 .* not a \(ts, item\) pair: 'abc'"):
        unzip_pairs([(1, "a"), "abc"])
    with pytest.raises(JetbenchError, match="item 0"):
        unzip_pairs([7])


# -- queues ---------------------------------------------------------------------------------------


def test_queue_capacity_counts_the_items_of_stamped_chunks():
    q = SPSCQueue(capacity=5)
    assert q.offer_chunk(stamped([1, 2, 3], "abc")) == 3
    assert q.size == 3
    # nearly full: a prefix of two items is accepted, as a stamped chunk of its own
    assert q.offer_chunk(stamped([4, 5, 6], "def")) == 2
    assert q.size == 5
    assert q.offer_chunk(stamped([6], "f")) == 0
    assert not q.offer_control(Watermark(3))
    chunks = list(q.chunks)
    assert [type(c) for c in chunks] == [Stamped, Stamped]
    assert chunks[1].pairs() == [(4, "d"), (5, "e")]


def test_a_drain_keeps_data_before_a_watermark_and_one_kind_of_chunk_per_batch():
    q = SPSCQueue(capacity=100)
    q.offer_chunk(stamped([1, 2], "ab"))
    q.offer_chunk(stamped([3], "c"))
    q.offer_chunk([(4, "d")])  # pairs from a producer that did not opt in
    q.offer_control(Watermark(4))
    q.offer_chunk(stamped([5], "e"))
    q.offer_control(DONE)
    stream = InboundStream(0, 0, [q])
    first = stream.drain(100)
    assert isinstance(first, Stamped) and first.pairs() == [(1, "a"), (2, "b"), (3, "c")]
    assert stream.watermark is None
    assert q.polled == 3 and q.size == 4  # the list chunk and what follows are still queued
    second = stream.drain(100)
    assert second == [(4, "d")]
    assert stream.watermark == Watermark(4)
    stream.watermark = None
    third = stream.drain(100)
    assert third.pairs() == [(5, "e")]
    assert stream.drain(100) is None and stream.done
    assert q.size == 0


def test_a_barrier_stream_keeps_stamped_data_before_the_barrier():
    q1, q2 = SPSCQueue(10), SPSCQueue(10)
    q1.offer_chunk(stamped([1], "a"))
    q1.offer_control(SnapshotBarrier(1))
    q1.offer_chunk(stamped([2], "b"))  # after the barrier: held until q2 delivers it too
    q2.offer_chunk(stamped([3], "c"))
    q2.offer_control(SnapshotBarrier(1))
    stream = BarrierInboundStream(0, 0, [q1, q2], aligned=True)
    got = []
    for _ in range(4):
        chunk = stream.drain(10)
        if chunk is not None:
            got += pairs_of(chunk)
        if stream.barrier is not None:
            break
    assert sorted(got) == [(1, "a"), (3, "c")]
    assert stream.barrier == SnapshotBarrier(1)
    assert pairs_of(stream.drain(10)) == [(2, "b")]


# -- inbox ------------------------------------------------------------------------------------------


def test_the_inbox_item_api_sees_pairs_of_a_stamped_batch():
    inbox = Inbox(stamped([1, 2, 3, 4], "abcd"))
    assert inbox.stamped and len(inbox) == 4
    assert inbox.peek() == (1, "a")
    assert inbox.poll() == (1, "a")
    assert list(inbox) == [(2, "b"), (3, "c"), (4, "d")]
    assert inbox.remove() == (2, "b")
    assert inbox.take_stamped(1) == ([3], ["c"])
    assert inbox.take() == [(4, "d")]
    assert not inbox and inbox.poll() is None
    seen = []
    inbox = Inbox(stamped([5, 6], "ef"))
    assert inbox.drain(seen.append) == 2 and seen == [(5, "e"), (6, "f")]


def test_take_stamped_unzips_pairs_and_hands_whole_columns_over():
    assert Inbox([(1, "a"), (2, "b")]).take_stamped(1) == ([1], ["a"])
    ts, items = [1, 2], ["a", "b"]
    inbox = Inbox(Stamped(ts, items))
    got_ts, got_items = inbox.take_stamped()
    assert got_ts is ts and got_items is items  # no copy when the whole batch goes
    assert not inbox.stamped and len(inbox) == 0
    with pytest.raises(JetbenchError, match="not a"):
        Inbox([1, 2]).take_stamped()


# -- outbox and emitter ---------------------------------------------------------------------------


def test_offer_stamped_accepts_a_prefix_counted_in_items():
    box = Outbox(ordinal_count=1, capacity=4)
    assert box.offer_stamped([1, 2, 3], list("abc")) == 3
    assert box.room() == 1
    assert box.offer_stamped([4, 5], list("de")) == 1
    assert box.offer_stamped([5], ["e"]) == 0
    assert box.accepted == 4
    chunk = box.take_chunk()
    assert isinstance(chunk, Stamped) and chunk.pairs() == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]


def test_items_and_columns_in_one_bucket_keep_their_order_as_pairs():
    box = Outbox(ordinal_count=1, capacity=10)
    box.offer((0, "z"))
    box.offer_stamped([1], ["a"])
    box.offer_batch([(2, "b")])
    box.offer_stamped([3], ["c"])
    box.offer((4, "d"))
    assert box.take_bucket() == [(0, "z"), (1, "a"), (2, "b"), (3, "c"), (4, "d")]


def test_a_watermark_waits_for_stamped_data_and_blocks_it():
    box = Outbox(ordinal_count=1, capacity=10)
    box.offer_stamped([1], ["a"])
    assert not box.offer(Watermark(1))  # the data goes first
    box.take_chunk()
    assert box.offer(Watermark(1))
    assert box.offer_stamped([2], ["b"]) == 0
    assert box.take_watermark() == Watermark(1)
    assert box.offer_stamped([2], ["b"]) == 1


def test_offer_stamped_refuses_columns_of_different_lengths():
    box = Outbox(ordinal_count=1, capacity=10, owner="vertex 'm'#0")
    with pytest.raises(JetbenchError, match="vertex 'm'#0: offer_stamped.. got 2 timestamps for 1 items"):
        box.offer_stamped([1, 2], ["a"])


def test_a_blocking_outbox_waits_until_all_columns_are_in():
    waits = []

    def wait_for_room():
        waits.append(box.take_chunk())

    box = BlockingOutbox(1, 2, "sink", wait_for_room)
    assert box.offer_stamped([1, 2, 3], list("abc")) == 3
    assert [c.pairs() for c in waits] == [[(1, "a"), (2, "b")]]
    assert box.take_bucket() == [(3, "c")]


# -- routing ----------------------------------------------------------------------------------------


def _route_all(collector, chunk):
    collector.route(chunk)
    return [[p for c in q.chunks for p in pairs_of(c)] for q in collector.targets]


@pytest.mark.parametrize("key_fn", [EventKey(lambda x: x % 3), lambda pair: pair[0] % 2, lambda pair: pair])
def test_a_partitioned_edge_routes_each_stamped_item_where_its_pair_goes(key_fn):
    items = list(range(20))
    ts = [i * 10 for i in items]
    by_pairs = _route_all(PartitionedCollector([SPSCQueue(100) for _ in range(3)], key_fn),
                          list(zip(ts, items, strict=True)))
    by_columns = _route_all(PartitionedCollector([SPSCQueue(100) for _ in range(3)], key_fn), Stamped(ts, items))
    assert by_columns == by_pairs
    assert sum(map(len, by_pairs)) == 20


def test_a_partitioned_stamped_chunk_waits_per_target_when_a_queue_is_full():
    targets = [SPSCQueue(2), SPSCQueue(2)]
    collector = PartitionedCollector(targets, EventKey(lambda x: 0))
    assert collector.route(Stamped([1, 2, 3], list("abc"))) == 2
    assert collector.pending
    targets[0].chunks.clear()
    targets[0].polled = targets[0].offered
    assert collector.push() == 1 and not collector.pending
    assert pairs_of(targets[0].chunks[0]) == [(3, "c")]


def test_broadcast_gives_each_target_its_own_columns():
    targets = [SPSCQueue(10), SPSCQueue(10)]
    BroadcastCollector(targets).route(Stamped([1], ["a"]))
    a, b = targets[0].chunks[0], targets[1].chunks[0]
    assert a.pairs() == b.pairs() == [(1, "a")]
    assert a.ts is not b.ts and a.items is not b.items


def test_round_robin_keeps_the_refused_tail_as_a_stamped_chunk():
    targets = [SPSCQueue(2)]
    collector = RoundRobinCollector(targets)
    assert collector.route(Stamped([1, 2, 3], list("abc"))) == 2
    targets[0].chunks.clear()
    targets[0].polled = 2
    assert collector.push() == 1
    assert isinstance(targets[0].chunks[0], Stamped)
