"""Consumer lag where a user watches a job: the dashboard's Partitions rows (offset read, high
watermark, lag, event-time watermark, records/s per partition), the total in its header and in
the progress line, from a job reading a real broker's 3-partition topic."""

from __future__ import annotations

import threading
import time

import pytest

from jetbench import ExecutionService, Pipeline, sinks, sources
from jetbench.notebook.dashboard_model import DashboardModel
from jetbench.notebook.job_counts import JobCounts, summary

from .helpers import produce

pytestmark = pytest.mark.kafka


def state_when(model: DashboardModel, ok, what: str, timeout: float = 60) -> dict:
    """The dashboard's state at the first tick for which ``ok(state)`` holds (within ``timeout``)."""
    deadline = time.monotonic() + timeout
    while not ok(state := model.update()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {state['partitions']}"
        time.sleep(0.05)
    return state


def test_a_job_read_to_the_end_shows_each_partition_caught_up(bootstrap, topic_name):
    topic = topic_name()
    produce(bootstrap, topic, [(i % 3, 1_000 + i, None, i) for i in range(300)], partitions=3)
    p = Pipeline()
    p.read_from(sources.kafka(topic, bootstrap, value_deserializer=int)).set_local_parallelism(1) \
        .write_to(sinks.noop())
    job = ExecutionService().submit(p.to_dag())
    try:
        model = DashboardModel(job)
        # the source reads all, then refreshes the high watermarks it saw (every 0.5 s)
        state = state_when(model, lambda s: s["totals"]["lag"] == 0 and len(s["partitions"]) == 3
                           and all(r["high"] == 100 for r in s["partitions"]), "the source to catch up")
        rows = {r["partition"]: r for r in state["partitions"]}
        assert set(rows) == {f"{topic}[{n}]" for n in range(3)}
        for n in range(3):
            row = rows[f"{topic}[{n}]"]
            assert (row["offset"], row["high"], row["lag"]) == (100, 100, 0), row
            assert row["watermark"] is None  # no event-time stage: no watermarks kept
            assert row["vertex"] == state["rows"][0]["vertex"] and row["instance"] == 0
        line = summary(JobCounts.of(job))
        assert line.endswith(" · lag 0 records"), line

        # 90 more records (30 per partition): read at once, a rate per partition over the tick
        produce(bootstrap, topic, [(i % 3, 2_000 + i, None, i) for i in range(90)])
        state = state_when(model, lambda s: all(r["offset"] == 130 for r in s["partitions"]), "the new records")
        assert all(r["rate"] is not None and r["rate"] > 0 for r in state["partitions"]), state["partitions"]
    finally:
        job.cancel()
    final = model.update(final=True)
    assert all(r["rate"] is None for r in final["partitions"])  # no per-tick rate once final
    html = job.dashboard().snapshot_html()  # the static copy a notebook keeps
    assert " · lag 0 records" in html and f"<td>{topic}[2]</td><td>130</td>" in html, html


def test_a_source_held_back_by_a_blocked_stage_shows_its_lag(bootstrap, topic_name):
    """The stage after the source blocks: the source fills the queue and waits, with records of
    every partition left unread; the progress line and the dashboard say how many."""
    topic = topic_name()
    produce(bootstrap, topic, [(i % 3, 1_000 + i, None, i) for i in range(30_000)], partitions=3)
    gate = threading.Event()

    def held(x):
        gate.wait(60)
        return x

    p = Pipeline()
    p.read_from(sources.kafka(topic, bootstrap, value_deserializer=int)).set_local_parallelism(1) \
        .map(held).write_to(sinks.noop())
    dag = p.to_dag()
    for edge in dag.edges:
        edge.queue_size(2)
    job = ExecutionService(outbox_capacity=16).submit(dag)
    try:
        model = DashboardModel(job)
        # held back after its first batch: the partitions it has not read from yet are known too
        state = state_when(model, lambda s: len(s["partitions"]) == 3 and all(r["high"] for r in s["partitions"])
                           and any(r["offset"] for r in s["partitions"]), "the high watermarks")
        rows = state["partitions"]
        read = sum(r["offset"] or 0 for r in rows)
        assert 0 < read < 30_000
        # each row's lag is its high watermark minus the offset read (0 when nothing was read)
        assert all(r["lag"] == r["high"] - (r["offset"] or 0) for r in rows), rows
        assert state["totals"]["lag"] == sum(r["lag"] for r in rows) > 0, state["totals"]
        assert sum(r["high"] for r in rows) <= 30_000
        assert f"lag {state['totals']['lag']:,} records" in summary(JobCounts.of(job))
    finally:
        gate.set()
        job.cancel()
