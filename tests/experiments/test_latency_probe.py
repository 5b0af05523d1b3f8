"""The idle job's latency probe under a processing guarantee (issue 16): its counters are part
of its snapshots, so a restored probe goes on counting where the snapshot left it."""

from __future__ import annotations

import threading

import pytest

from jetbench import DAG, Edge, ExecutionService
from jetbench.core.job_config import JobConfig
from jetbench.experiments import LatencyProbeP
from jetbench.processors import collect_sink, map_processor
from jetbench.processors.generator_source import generator_source
from jetbench.testing import verify_processor


def test_the_probe_keeps_its_counters_in_every_snapshot_mode():
    items = [(t, f"e{t}") for t in range(25)]
    report = verify_processor(LatencyProbeP, input=items, expected=items)
    assert sum("snapshot" in run.mode for run in report.runs) == 3, "the three snapshot modes ran"
    for run in report.runs:
        probe = run.processor
        assert probe.items == len(items), run.mode
        if "inbox_limit=1" in run.mode.split(","):  # one item per batch: a sample each, none lost
            assert len(probe.samples) == len(items), run.mode
        assert all(s > 0 for s in probe.samples), run.mode


def test_a_restored_probe_at_a_lower_parallelism_adds_up_the_instances_it_stands_for():
    from jetbench.core.inbox import Inbox
    from jetbench.core.outbox import Outbox
    from jetbench.core.processor import ProcessorContext

    def context(k: int, n: int) -> ProcessorContext:
        return ProcessorContext(vertex_name="probe", local_index=k, global_index=k, local_parallelism=n,
                                total_parallelism=n, processing_guarantee="exactly_once")

    entries = []
    for k, count in enumerate((3, 5)):
        old = LatencyProbeP()
        old.init(Outbox(1, 10), context(k, 2))
        old.process(0, Inbox([(0, i) for i in range(count)]))
        assert old.save_to_snapshot()
        entries += old.outbox.take_snapshot()
    new = LatencyProbeP()
    new.init(Outbox(1, 10), context(0, 1))
    new.restore_from_snapshot(Inbox(entries))
    assert new.items == 8 and len(new.samples) == 2


class _FailOnce:
    """Raises once, at the item whose sequence number is ``at`` (``item[index]``, or the item)."""

    def __init__(self, at: int, index: int | None = 1):
        self.at, self.index, self.armed = at, index, True

    def __call__(self, item):
        if (item if self.index is None else item[self.index]) == self.at and self.armed:
            self.armed = False
            raise ValueError(f"injected failure at item {self.at}")
        return item


@pytest.mark.serial  # timing: failed beside other tests at load ~23 (scripts/test.sh runs it alone)
@pytest.mark.parametrize("guarantee", ["exactly_once", "at_least_once"])
def test_a_job_that_restarts_counts_each_item_once_in_the_probe(tmp_path, guarantee):
    n = 3000
    dag = DAG()
    src = dag.new_vertex("source", generator_source(20_000, timestamped=True, count=n), 1)
    probe = dag.new_vertex("probe", LatencyProbeP, 1)
    fail = dag.new_vertex("fail", map_processor(_FailOnce(2 * n // 3)), 1)
    dag.edge(Edge.between(src, probe)).edge(Edge.between(probe, fail))
    dag.edge(Edge.between(fail, dag.new_vertex("out", collect_sink())))
    config = JobConfig(guarantee, snapshot_interval_ms=10, snapshot_store=tmp_path / "s.sqlite")
    job = ExecutionService(cooperative_threads=2).submit(dag, config=config)
    result = job.join(30)
    assert job.restarts == 1 and job.restored_from > 0, "restarted from a snapshot, not from the start"
    assert sorted(item[1] for item in result) == list(range(n))
    (restored,) = [t.processor for t in job.tasklets if isinstance(t.processor, LatencyProbeP)]
    # a single-input chain aligns trivially: even at-least-once replays nothing the probe counted
    assert restored.items == n
    assert 0 < len(restored.samples) <= n
    assert not [t.name for t in threading.enumerate() if t.name.startswith("jetbench.")]


def test_the_idle_job_keeps_exactly_once_across_a_restart(tmp_path):
    from jetbench import sources
    from jetbench.experiments import idle_job
    from jetbench.processors import Transform, transform_processor

    n = 3000
    dag = idle_job(sources.generator(20_000, count=n), window_ms=10)
    (third,) = [v for v in dag.vertices if v.name == "map-3"]
    third.supplier = transform_processor(Transform(timestamped=True).map(_FailOnce(2 * n // 3, index=None)))
    config = JobConfig("exactly_once", snapshot_interval_ms=10, snapshot_store=tmp_path / "s.sqlite")
    job = ExecutionService(cooperative_threads=2).submit(dag, config=config)
    job.join(30)
    assert job.restarts == 1 and job.restored_from > 0
    (probe,) = [t.processor for t in job.tasklets if isinstance(t.processor, LatencyProbeP)]
    assert probe.items == n
