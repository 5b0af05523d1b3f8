"""Unit tests of the engine's building blocks, single-threaded: inbox, outbox, queues,
inbound streams, collectors and a processor tasklet driven by hand."""

from __future__ import annotations

import pytest

from jetbench import (
    DONE,
    Inbox,
    JetbenchError,
    Outbox,
    Processor,
    ProcessorContext,
    Routing,
    Watermark,
)
from jetbench.core import IDLE_MESSAGE
from jetbench.core.outbox import BlockingOutbox
from jetbench.core.queues import InboundStream, SPSCQueue
from jetbench.core.routing import (
    BroadcastCollector,
    PartitionedCollector,
    RoundRobinCollector,
    make_collector,
)
from jetbench.core.tasklet import DONE_STATE, NO_PROGRESS, PROGRESS, ProcessorTasklet, TaskletState

# -- Inbox ------------------------------------------------------------------------------------------


def test_inbox_item_and_batch_api():
    box = Inbox([1, 2, 3, 4, 5])
    assert (len(box), bool(box), box.peek()) == (5, True, 1)
    assert box.poll() == 1 and box.remove() == 2
    assert list(box) == [3, 4, 5] and len(box) == 3  # iteration does not remove
    assert box.take(2) == [3, 4]
    assert box.take(0) == []
    assert box.take() == [5]
    assert (box.peek(), box.poll(), bool(box)) == (None, None, False)
    with pytest.raises(IndexError):
        box.remove()
    box = Inbox([7, 8])
    seen = []
    assert box.drain(seen.append) == 2 and seen == [7, 8] and not box
    box = Inbox([9])
    box.clear()
    assert len(box) == 0


def test_inbox_take_hands_over_the_list():
    items = [1, 2, 3]
    box = Inbox(items)
    assert box.take() is items  # no copy when nothing was consumed yet
    assert len(box) == 0


# -- Outbox -----------------------------------------------------------------------------------------


def test_outbox_refuses_when_full():
    box = Outbox(ordinal_count=1, capacity=3)
    assert [box.offer(i) for i in range(4)] == [True, True, True, False]
    assert box.room() == 0 and box.accepted == 3
    assert box.take_bucket(0) == [0, 1, 2]
    assert box.room() == 3 and box.offer(9)


def test_outbox_offer_batch_takes_a_prefix():
    box = Outbox(ordinal_count=1, capacity=4)
    assert box.offer("a")
    assert box.offer_batch(["b", "c", "d", "e"]) == 3
    assert box.offer_batch(iter(["x"])) == 0
    assert box.take_bucket(0) == ["a", "b", "c", "d"]
    batch = [1, 2]
    assert box.offer_batch(batch) == 2
    assert box.take_bucket(0) is batch  # whole list into an empty bucket: kept as is


def test_outbox_multiple_ordinals():
    box = Outbox(ordinal_count=3, capacity=2)
    assert box.offer("all")  # None: every ordinal
    assert box.offer("one", 1)
    assert box.offer("some", [0, 2])
    assert [box.take_bucket(o) for o in range(3)] == [
        ["all", "some"],
        ["all", "one"],
        ["all", "some"],
    ]
    box.offer("x", 1)
    box.offer("y", 1)
    assert not box.offer("z")  # ordinal 1 is full: nothing is accepted anywhere
    assert box.take_bucket(0) == [] and box.take_bucket(2) == []
    with pytest.raises(JetbenchError, match="no outbound ordinal 5"):
        box.offer("bad", 5)
    with pytest.raises(JetbenchError):
        Outbox(1, capacity=0)


def test_outbox_watermark_waits_for_data_and_blocks_data():
    box = Outbox(ordinal_count=2, capacity=4)
    box.offer("a", 0)
    assert not box.offer(Watermark(5))  # data pending: the watermark must wait
    box.take_bucket(0)
    assert box.offer(Watermark(5), 1)  # goes to every ordinal regardless of the argument
    assert box.pending_watermark == Watermark(5)
    assert not box.offer("b") and box.offer_batch(["b"]) == 0 and box.room() == 0
    assert not box.offer(Watermark(6))  # one control item at a time
    assert box.take_watermark() == Watermark(5)
    assert box.offer("b")


def test_sink_outbox_with_no_ordinals_accepts_watermarks():
    box = Outbox(ordinal_count=0, capacity=1)
    assert box.offer(Watermark(1))


def test_blocking_outbox_waits_instead_of_refusing():
    flushed = []

    def wait_for_room():
        flushed.append(box.take_bucket(0))

    box = BlockingOutbox(1, 2, "test", wait_for_room)
    assert all(box.offer(i) for i in range(5))
    assert box.offer_batch(list(range(5, 10))) == 5
    assert [x for chunk in flushed for x in chunk] + box.take_bucket(0) == list(range(10))


# -- queues -----------------------------------------------------------------------------------------


def test_spsc_queue_capacity_counts_items_and_controls():
    q = SPSCQueue(capacity=3)
    assert q.offer_chunk([1, 2]) == 2
    assert q.offer_chunk([3, 4]) == 1 and q.size == 3
    assert not q.offer_control(DONE)
    assert q.offer_chunk([5]) == 0
    q.chunks.popleft()
    q.polled += 2
    assert q.offer_control(Watermark(1)) and q.size == 2
    assert list(q.chunks) == [[3], Watermark(1)]


def _feed(q: SPSCQueue, *entries):
    for e in entries:
        if isinstance(e, list):
            assert q.offer_chunk(e) == len(e)
        else:
            assert q.offer_control(e)


def test_inbound_stream_round_robin_and_done():
    q0, q1 = SPSCQueue(10), SPSCQueue(10)
    s = InboundStream(ordinal=0, priority=0, queues=[q0, q1])
    _feed(q0, [1, 2], [3])
    _feed(q1, [10], DONE)
    assert s.drain(100) == [1, 2, 3, 10]  # whole chunks from every queue, stopping at DONE
    assert not s.done and s.size == 0
    _feed(q0, [4], DONE)
    assert s.drain(100) == [4]
    assert s.done and s.drain(100) is None
    assert s.capacity == 20


def test_inbound_stream_respects_limit_in_whole_chunks():
    q = SPSCQueue(100)
    s = InboundStream(0, 0, [q])
    _feed(q, [1, 2, 3], [4, 5, 6], [7])
    assert s.drain(4) == [1, 2, 3, 4, 5, 6]
    assert s.drain(4) == [7]


def test_inbound_stream_stops_at_coalesced_watermark():
    q0, q1 = SPSCQueue(10), SPSCQueue(10)
    s = InboundStream(0, 0, [q0, q1])
    _feed(q0, [1], Watermark(10), [2])
    _feed(q1, Watermark(5), [3])
    # q0: item 1, then WM 10 (not coalesced yet: q1 has none); q1: WM 5 -> coalesced 5
    assert s.drain(100) == [1]
    assert s.watermark == Watermark(5)
    s.watermark = None
    assert sorted(s.drain(100)) == [2, 3]
    _feed(q1, DONE)
    assert s.drain(100) is None and s.watermark == Watermark(10)  # q1 done: q0 alone decides


def test_inbound_stream_idle_marker_then_data_reactivates():
    q0, q1 = SPSCQueue(10), SPSCQueue(10)
    s = InboundStream(0, 0, [q0, q1])
    _feed(q0, Watermark(10))
    _feed(q1, Watermark(3), IDLE_MESSAGE)
    s.drain(100)
    assert s.watermark == Watermark(3)
    s.watermark = None
    s.drain(100)
    assert s.watermark == Watermark(10)  # q1 idle: it no longer holds the watermark back
    s.watermark = None
    _feed(q1, [1])
    assert s.drain(100) == [1]  # data on q1 makes it active again ...
    _feed(q0, Watermark(20))
    assert s.drain(100) is None
    assert s.watermark is None  # ... so WM 20 from q0 waits for q1 (still at 3)
    _feed(q1, Watermark(15))
    s.drain(100)
    assert s.watermark == Watermark(15)


def test_inbound_stream_all_idle_forwards_idle_marker():
    q0, q1 = SPSCQueue(10), SPSCQueue(10)
    s = InboundStream(0, 0, [q0, q1])
    _feed(q0, Watermark(4), IDLE_MESSAGE)
    _feed(q1, IDLE_MESSAGE)
    got = []
    for _ in range(4):
        s.drain(100)
        if s.watermark is not None:
            got.append(s.watermark)
            s.watermark = None
    assert got == [Watermark(4), IDLE_MESSAGE]


# -- collectors -------------------------------------------------------------------------------------


def test_round_robin_collector_rotates_and_skips_full_targets():
    qs = [SPSCQueue(4) for _ in range(3)]
    c = RoundRobinCollector(qs)
    assert c.route([1, 2]) == 2 and c.route([3]) == 1 and c.route([4]) == 1
    assert [q.size for q in qs] == [2, 1, 1]
    assert c.route([5, 6, 7, 8, 9, 10, 11, 12]) == 8  # spills over the targets in turn
    assert [q.size for q in qs] == [4, 4, 4] and not c.pending
    assert c.route([13]) == 0 and c.pending
    qs[1].chunks.clear()
    qs[1].polled = qs[1].offered
    assert c.push() == 1 and not c.pending


def test_partitioned_collector_is_consistent():
    qs = [SPSCQueue(100) for _ in range(3)]
    c = PartitionedCollector(qs, key_fn=lambda x: x % 10)
    c.route(list(range(60)))
    for i, q in enumerate(qs):
        items = [x for chunk in q.chunks for x in chunk]
        assert all(hash(x % 10) % 3 == i for x in items)
    assert sum(q.size for q in qs) == 60


def test_partitioned_collector_keeps_remainders_per_target():
    qs = [SPSCQueue(2), SPSCQueue(100)]
    c = PartitionedCollector(qs, key_fn=lambda x: x)
    assert c.route([0, 2, 4, 1, 3]) == 4 and c.pending  # 4 waits for target 0
    assert not c.offer_control(DONE)  # control items follow pending data
    qs[0].chunks.clear()
    qs[0].polled = qs[0].offered
    assert c.offer_control(DONE) and not c.pending
    assert list(qs[0].chunks) == [[4], DONE]
    assert list(qs[1].chunks)[-1] is DONE


def test_broadcast_collector_copies_and_retries_only_refusers():
    qs = [SPSCQueue(2), SPSCQueue(5)]
    c = BroadcastCollector(qs)
    assert c.route([1, 2, 3]) == 5 and c.pending
    first = [x for chunk in qs[0].chunks for x in chunk]
    second = [x for chunk in qs[1].chunks for x in chunk]
    assert (first, second) == ([1, 2], [1, 2, 3])
    qs[0].chunks.clear()
    qs[0].polled = qs[0].offered
    assert c.push() == 1 and not c.pending
    assert qs[1].size == 3  # not sent twice


def test_control_item_broadcast_remembers_acceptors():
    qs = [SPSCQueue(1), SPSCQueue(1)]
    c = RoundRobinCollector(qs)
    c.route([1])  # fills target 0
    assert not c.offer_control(Watermark(1))  # target 1 takes it, target 0 is full
    assert qs[1].size == 1
    qs[0].chunks.clear()
    qs[0].polled = qs[0].offered
    assert c.offer_control(Watermark(1))
    assert qs[1].size == 1  # not offered twice


def test_make_collector_by_routing():
    qs = [SPSCQueue(4)]
    assert isinstance(make_collector(Routing.PARTITIONED, qs, abs), PartitionedCollector)
    assert isinstance(make_collector(Routing.BROADCAST, qs, None), BroadcastCollector)
    for r in (Routing.UNICAST, Routing.ISOLATED, Routing.ALL_TO_ONE):
        assert isinstance(make_collector(r, qs, None), RoundRobinCollector)


# -- a tasklet driven by hand -------------------------------------------------------------------------


class Log(Processor):
    def __init__(self):
        self.log = []

    def process(self, ordinal, inbox):
        self.log.append(("items", ordinal, inbox.take()))

    def try_process_watermark(self, wm):
        self.log.append(("wm", wm.timestamp))
        return True

    def complete_edge(self, ordinal):
        self.log.append(("complete_edge", ordinal))
        return True

    def complete(self):
        self.log.append(("complete",))
        return True

    def close(self):
        self.log.append(("close",))


def _tasklet(processor, inbound, collectors=(), outbox_capacity=8):
    ctx = ProcessorContext("v", 0, 0, 1, 1)
    return ProcessorTasklet(
        processor, ctx, list(inbound), list(collectors), outbox_capacity, outbox_capacity
    )


def _run_to_end(t, max_calls=200):
    results = []
    for _ in range(max_calls):
        r = t.call()
        results.append(r)
        if r & DONE_STATE:
            return results
    raise AssertionError(f"tasklet not done after {max_calls} calls: {t}")


def test_tasklet_priorities_watermarks_and_completion():
    q_lo, q_hi = SPSCQueue(10), SPSCQueue(10)
    lo = InboundStream(ordinal=0, priority=5, queues=[q_lo])
    hi = InboundStream(ordinal=1, priority=0, queues=[q_hi])
    _feed(q_lo, ["a"], Watermark(7), ["b"], DONE)
    _feed(q_hi, [1, 2], Watermark(3), [4], DONE)
    p = Log()
    t = _tasklet(p, [lo, hi])
    assert t.state is TaskletState.INIT
    results = _run_to_end(t)
    assert results[-1] == DONE_STATE | PROGRESS
    # ordinal 1 (priority 0) first, up to its completion; its watermark 3 waits for ordinal 0,
    # which has none yet, and is released when ordinal 1 is done (done inputs don't hold back)
    assert p.log == [
        ("items", 1, [1, 2]),
        ("items", 1, [4]),
        ("complete_edge", 1),
        ("items", 0, ["a"]),
        ("wm", 7),
        ("items", 0, ["b"]),
        ("complete_edge", 0),
        ("complete",),
        ("close",),
    ]
    assert t.state is TaskletState.END and t.closed and t.is_done
    assert (t.received_count, t.received_batches) == (5, 4)
    assert t.call() == DONE_STATE | PROGRESS  # stays done


def test_tasklet_reports_no_progress_when_starved():
    q = SPSCQueue(4)
    p = Log()
    t = _tasklet(p, [InboundStream(0, 0, [q])])
    assert t.call() & PROGRESS  # init
    assert t.call() == NO_PROGRESS  # nothing to do
    _feed(q, [1])
    assert t.call() == PROGRESS


def test_tasklet_backpressure_flag_and_flush():
    class Emit(Processor):
        def __init__(self):
            self.i = 0

        def complete(self):
            while self.i < 10:
                if not self.outbox.offer(self.i):
                    return False
                self.i += 1
            return True

    q = SPSCQueue(3)
    t = _tasklet(Emit(), [], [RoundRobinCollector([q])], outbox_capacity=4)
    t.call()  # init
    t.call()  # offers 4, flushes 3 to the queue
    assert q.size == 3 and t.refused
    # the outbox bucket refills once more while the collector holds the refused remainder;
    # then the tasklet is stuck: at most one bucket in flight plus one in the outbox
    t.call()
    assert t.call() == NO_PROGRESS and t.processor.i == 8
    q.chunks.clear()
    q.polled = q.offered
    assert t.call() == PROGRESS
    assert t.emitted_count >= 4


def test_tasklet_abort_closes_once():
    p = Log()
    t = _tasklet(p, [InboundStream(0, 0, [SPSCQueue(2)])])
    t.call()
    t.abort()
    t.abort()
    assert p.log == [("close",)] and t.is_done and t.state is TaskletState.END
