"""Barrier alignment in one inbound ordinal (`BarrierInboundStream`): with exactly-once
(``aligned``) a queue that delivered the snapshot barrier is not drained again until every live
queue has delivered it, so nothing after the barrier is processed before the snapshot; with
at-least-once it goes on. Watermarks and DONE go through the same drain as in a plain stream."""

from __future__ import annotations

import pytest

from jetbench.core.errors import JetbenchError
from jetbench.core.items import DONE, SnapshotBarrier, Stamped, Watermark
from jetbench.core.queues import SPSCQueue
from jetbench.core.snapshot_tasklet import BarrierInboundStream


def stream(aligned: bool) -> tuple[BarrierInboundStream, SPSCQueue, SPSCQueue]:
    q0, q1 = SPSCQueue(16), SPSCQueue(16)
    return BarrierInboundStream(0, 0, [q0, q1], aligned), q0, q1


def drain_all(s: BarrierInboundStream) -> list:
    out: list = []
    for _ in range(4):  # a few drains: one visits each queue until a control item stops it
        chunk = s.drain(100)
        if chunk is not None:
            out += chunk.pairs() if isinstance(chunk, Stamped) else chunk
    return out


def test_exactly_once_holds_a_queue_past_its_barrier_until_every_queue_delivered_it():
    s, q0, q1 = stream(aligned=True)
    q0.offer_chunk(["a"])
    q0.offer_control(SnapshotBarrier(1))
    q0.offer_chunk(["after"])
    q1.offer_chunk(["b"])
    assert sorted(drain_all(s)) == ["a", "b"]  # "after" waits: q1 has not delivered barrier 1
    assert s.barrier is None
    q1.offer_control(SnapshotBarrier(1))
    got = None
    while s.barrier is None:  # what the tasklet does: drain until the barrier is complete
        assert got is None, got  # nothing after the barrier came before it was complete
        got = s.drain(100)
    assert s.barrier == SnapshotBarrier(1) and got is None
    s.barrier = None  # the tasklet takes it (and saves its state)
    assert drain_all(s) == ["after"]


def test_at_least_once_drains_past_a_barrier():
    s, q0, q1 = stream(aligned=False)
    q0.offer_chunk(["a"])
    q0.offer_control(SnapshotBarrier(1))
    q0.offer_chunk(["after"])
    assert drain_all(s) == ["a", "after"]
    assert s.barrier is None
    q1.offer_control(SnapshotBarrier(1))
    drain_all(s)
    assert s.barrier == SnapshotBarrier(1)


def test_a_retired_queue_does_not_hold_the_barrier_back():
    s, q0, q1 = stream(aligned=True)
    q0.offer_control(SnapshotBarrier(1))
    q1.offer_control(DONE)
    drain_all(s)
    assert s.barrier == SnapshotBarrier(1)


def test_watermarks_still_coalesce_and_a_second_barrier_before_the_first_completes_fails():
    s, q0, q1 = stream(aligned=True)
    q0.offer_control(Watermark(5))
    q1.offer_control(Watermark(7))
    drain_all(s)
    assert s.watermark == Watermark(5)
    q0.offer_control(SnapshotBarrier(1))
    q1.offer_control(SnapshotBarrier(2))
    with pytest.raises(JetbenchError, match="SnapshotBarrier\\(2\\) came while SnapshotBarrier\\(1\\)"):
        drain_all(s)
