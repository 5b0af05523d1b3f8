"""Where a snapshot's barrier is, as samplers see it (issue 16): per edge in the queue, held for
alignment or passed, per tasklet its snapshot state.

The job is driven by gates, never by timing: two sources feed a two-input vertex that takes
nothing while its gate is shut, and the second source and the sink each finish saving only when
told. Each step waits (with a generous limit) for what the gates make inevitable.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from jetbench import DAG, Edge, ExecutionService, Processor
from jetbench.core.job_config import JobConfig
from jetbench.core.metrics import JobMetrics, QueueStatistics
from jetbench.core.sampler import MetricsSampler
from jetbench.frames import metrics_frame


class Gates:
    def __init__(self) -> None:
        self.join_takes = threading.Event()  # the two-input vertex processes its inbox
        self.late_saves = threading.Event()  # the second source finishes saving
        self.sink_saves = threading.Event()  # the sink finishes saving
        self.stop = threading.Event()  # the sources complete


def gated_dag(g: Gates) -> DAG:
    """src -> early (passes 5 of src's 8 items on, the 3 others once it has forwarded its barrier)
    -> join #0; late (saves only once told) -> join #1; join -> sink."""

    class Source(Processor):
        def init(self, outbox: Any, context: Any) -> None:
            super().init(outbox, context)
            self.sent = 0

        def complete(self) -> bool:
            while self.sent < 8 and self.outbox.offer(self.sent):
                self.sent += 1
            return self.sent == 8 and g.stop.is_set()

    class Early(Processor):
        def init(self, outbox: Any, context: Any) -> None:
            super().init(outbox, context)
            self.buffer: list[int] = []
            self.sent, self.limit = 0, 5

        def process(self, ordinal: int, inbox: Any) -> None:
            self.buffer += list(inbox)
            inbox.clear()

        def try_process(self) -> bool:
            while self.sent < min(self.limit, len(self.buffer)) and self.outbox.offer(self.buffer[self.sent]):
                self.sent += 1
            return True

        def save_to_snapshot(self) -> bool:
            self.limit = 8  # the three others travel after the barrier
            return True

    class Late(Processor):
        def complete(self) -> bool:
            return g.stop.is_set()

        def save_to_snapshot(self) -> bool:
            return g.late_saves.is_set()

    class Join(Processor):
        def process(self, ordinal: int, inbox: Any) -> None:
            if g.join_takes.is_set():
                inbox.clear()

    class Sink(Processor):
        def process(self, ordinal: int, inbox: Any) -> None:
            inbox.clear()

        def save_to_snapshot(self) -> bool:
            return g.sink_saves.is_set()

    dag = DAG()
    src = dag.new_vertex("src", Source, local_parallelism=1)
    early = dag.new_vertex("early", Early, local_parallelism=1)
    late = dag.new_vertex("late", Late, local_parallelism=1)
    join = dag.new_vertex("join", Join, local_parallelism=1)
    sink = dag.new_vertex("sink", Sink, local_parallelism=1)
    dag.edge(Edge.between(src, early)).edge(Edge.from_(early).to(join, 0)).edge(Edge.from_(late).to(join, 1)).edge(Edge.between(join, sink))
    return dag


def wait_for(job: Any, predicate: Any, what: str, timeout: float = 20.0) -> JobMetrics:
    deadline = time.monotonic() + timeout
    while True:
        m = job.metrics()
        if predicate(m):
            return m
        assert not job.is_done, f"the job ended ({job.status}) before {what}"
        assert time.monotonic() < deadline, f"never saw {what}: {edges(m)} {states(m)}"
        time.sleep(0.005)


def edges(m: JobMetrics) -> dict[str, QueueStatistics]:
    return {q.edge: q for q in m.by_edge()}


def states(m: JobMetrics) -> dict[str, tuple[str, int]]:
    return {t.vertex: (t.snapshot_state, t.snapshot_id) for t in m.tasklets}


def barrier_words(m: JobMetrics) -> dict[str, tuple[int, str]]:
    return {name: (q.barrier_id, q.barrier) for name, q in edges(m).items()}


@pytest.mark.parametrize("guarantee", ["exactly_once", "at_least_once"])
def test_the_barrier_is_seen_in_the_queue_then_held_then_passed(tmp_path, guarantee):
    g = Gates()
    config = JobConfig(guarantee, snapshot_interval_ms=3_600_000, snapshot_store=tmp_path / "s.sqlite")
    job = ExecutionService(cooperative_threads=2).submit(gated_dag(g), name="gated", config=config)
    exported: list[Any] = []
    exporter = threading.Thread(target=lambda: exported.append(job.export_snapshot("one", timeout=60)))
    try:
        # the join holds items in its inbox: it takes nothing more from early's queue
        m = wait_for(job, lambda m: m.tasklet("join").received_count > 0 and m.tasklet("early").emitted_count == 5,
                     "the join holding items")
        assert m.barrier_in_flight() == 0 and all(q.barrier == "" for q in m.by_edge())
        exporter.start()

        # snapshot 1: early saved and its barrier waits in the queue; late is still saving
        m = wait_for(job, lambda m: edges(m)["early → join #0"].barrier == "in queue", "the barrier in the queue")
        assert m.barrier_in_flight() == 1
        q = edges(m)["early → join #0"]
        assert (q.barrier_id, q.barrier_in_queue, q.barrier_held, q.barrier_passed) == (1, 1, 0, 0)
        assert barrier_words(m) == {"src → early #0": (1, "passed"), "early → join #0": (1, "in queue"),
                                    "late → join #1": (0, ""), "join → sink #0": (0, "")}
        assert states(m) == {"src": ("saved", 1), "early": ("saved", 1), "late": ("saving", 1), "join": ("awaiting barrier", 1),
                             "sink": ("awaiting barrier", 1)}

        # the join takes its inbox, then the barrier: held until late's comes (exactly-once)
        g.join_takes.set()
        held = "held" if guarantee == "exactly_once" else "received"
        m = wait_for(job, lambda m: edges(m)["early → join #0"].barrier == held and
                     m.tasklet("early").emitted_count == 8, f"the barrier {held} with three items behind it")
        q = edges(m)["early → join #0"]
        assert (q.barrier_id, q.barrier_in_queue, q.barrier_held, q.barrier_passed) == (1, 0, 1, 0)
        frame = metrics_frame(m, kind="queue").set_index("edge")  # the frame has the barrier columns
        assert frame.loc["early → join #0", ["barrier_id", "barrier", "barrier_held"]].tolist() == [1, held, 1]
        sampler = MetricsSampler(job)  # so do a sampler's records (one sample, taken here)
        sampler.sample()
        rows = {r["edge"]: r for r in sampler.records if r["kind"] == "queue"}
        assert (rows["early → join #0"]["barrier_id"], rows["early → join #0"]["barrier"]) == (1, held)
        assert {r["vertex"]: r["snapshot_state"] for r in sampler.records if r["kind"] == "tasklet"}["join"] == (
            "aligning" if guarantee == "exactly_once" else "awaiting barrier")
        assert states(m)["join"] == ("aligning" if guarantee == "exactly_once" else "awaiting barrier", 1)
        if guarantee == "exactly_once":  # the held queue is not drained: the three items wait in it
            assert q.size == 3 and m.tasklet("join").received_count == 5
            barrier_of_join = m.tasklet("join").inbound_barriers
            assert [(b.ordinal, b.snapshot_id, b.in_queue, b.held, b.passed) for b in barrier_of_join] == [
                (0, 1, 0, 1, 0), (1, 1, 0, 0, 0)]
        else:  # at-least-once drains past the barrier
            wait_for(job, lambda m: m.tasklet("join").received_count == 8, "the items after the barrier taken")

        # late saves: the join aligns, saves and forwards; the sink holds it while it saves
        g.late_saves.set()
        m = wait_for(job, lambda m: edges(m)["join → sink #0"].barrier == held, "the barrier at the sink")
        assert barrier_words(m) == {"src → early #0": (1, "passed"), "early → join #0": (1, "passed"), "late → join #1": (1, "passed"),
                                    "join → sink #0": (1, held)}
        assert states(m) == {"src": ("saved", 1), "early": ("saved", 1), "late": ("saved", 1), "join": ("saved", 1),
                             "sink": ("saving", 1)}
        if guarantee == "exactly_once":  # past the barrier, the three items are taken now
            wait_for(job, lambda m: m.tasklet("join").received_count == 8, "the items after the barrier taken")

        # the sink saves: snapshot 1 is complete, nothing is in flight any more
        g.sink_saves.set()
        exporter.join(60)
        assert exported and exported[0].snapshot_id == 1
        m = wait_for(job, lambda m: m.barrier_in_flight() == 0 and all(s == ("", 0) for s in states(m).values()),
                     "snapshot 1 over")
        assert all((q.barrier_id, q.barrier) == (0, "") for q in m.by_edge())
    finally:
        g.join_takes.set()
        g.late_saves.set()
        g.sink_saves.set()
        g.stop.set()
    job.join(30)
    if exporter.is_alive():
        exporter.join(60)


def test_a_job_without_a_guarantee_reports_no_barriers():
    g = Gates()
    g.join_takes.set()
    job = ExecutionService().submit(gated_dag(g), name="plain")
    wait_for(job, lambda m: m.tasklet("join").received_count == 5, "the five items")
    m = job.metrics()
    assert all((t.snapshot_state, t.snapshot_id, t.inbound_barriers) == ("", 0, ()) for t in m.tasklets)
    assert all((q.barrier_id, q.barrier) == (0, "") for q in m.by_edge())
    g.stop.set()
    job.join(30)
