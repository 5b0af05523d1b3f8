"""Sources outside `jetbench.processors` tell the truth about snapshots (issue 16): the Arrow
source (parquet row groups), the Nexmark source and the Spark stage feeders save their offsets
and go on from them in a new instance (Jet's three snapshot modes of `verify_processor`); what
cannot go back (a Spark partition's iterator, the capture of a cut edge) refuses a guarantee
at submit, naming the vertex."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jetbench import DAG, Edge, ExecutionService, JetbenchError
from jetbench.core.job_config import JobConfig
from jetbench.core.snapshot import snapshot_support
from jetbench.nexmark.config import NexmarkConfig
from jetbench.nexmark.source import NexmarkSourceP, nexmark_source
from jetbench.processors import collect_sink
from jetbench.processors.items_source import stamped_items_source
from jetbench.processors.supplier import ProcessorSupplier
from jetbench.spark.dataframe_sinks import SparkSinkP
from jetbench.spark.dataframe_sources import ArrowSourceP, ParquetSource
from jetbench.spark.stage_task import CaptureP, ListFeederP, StreamFeederP
from jetbench.testing import verify_processor

SNAPSHOT_MODES = ["inbox_limit=1, restore every snapshot", "inbox_limit=1, restore every other snapshot",
                  "inbox_limit=1, snapshots never restored"]


def _snapshot_modes_ran(report: Any) -> None:
    assert [run.mode for run in report.runs][-3:] == SNAPSHOT_MODES


@pytest.fixture
def parquet_dir(tmp_path):
    # two files of three row groups each, the row groups of different sizes
    for f in range(2):
        table = pa.table({"n": list(range(100 * f, 100 * f + 17)), "s": [f"r{i}" for i in range(17)]})
        pq.write_table(table, tmp_path / f"part-{f}.parquet", row_group_size=6)
    return tmp_path


@pytest.mark.parametrize("k, n", [(0, 1), (0, 2), (1, 2)])
def test_the_arrow_source_goes_on_from_its_batch_and_row(parquet_dir, k, n):
    source = ParquetSource(str(parquet_dir), columns=["n"], as_="value")
    source.chunk = 4  # several emissions per batch: snapshots fall inside batches
    source.batch_size = 5  # several batches per row group
    assert snapshot_support(source()) == "supported"
    total = source.part_count()
    expected = [x for p in range(k * total // n, (k + 1) * total // n) for batch in source.read([p]) for x in batch]
    assert expected
    report = verify_processor(source, expected=expected, context={"global_index": k, "total_parallelism": n})
    _snapshot_modes_ran(report)


def test_the_arrow_source_refuses_a_snapshot_of_another_parallelism(parquet_dir):
    source = ParquetSource(str(parquet_dir), columns=["n"], as_="value")
    p = source()
    assert isinstance(p, ArrowSourceP)
    from jetbench.core.inbox import Inbox
    from jetbench.core.outbox import Outbox
    from jetbench.core.processor import ProcessorContext
    from jetbench.processors.snapshotting import instance_key

    context = ProcessorContext("src", 0, 0, 1, 1)
    p.init(Outbox(1), context)
    old = ProcessorContext("src", 0, 0, 2, 2)
    inbox = Inbox([(instance_key("ArrowSourceP", old), (2, 1, 3))])
    with pytest.raises(JetbenchError, match="vertex 'src'.*parallelism 2"):
        p.restore_from_snapshot(inbox)
    p.close()


CONFIGS = {"one generator": NexmarkConfig(num_events=60, num_event_generators=1),
           "several generators": NexmarkConfig(num_events=60, num_event_generators=3)}


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("k, n", [(0, 1), (1, 2)])
def test_the_nexmark_source_goes_on_from_its_next_event(config, k, n):
    supplier = nexmark_source(CONFIGS[config])
    assert snapshot_support(supplier()) == "supported"
    plain = verify_processor(supplier, snapshots=False, assert_output=lambda output: None,
                             context={"global_index": k, "total_parallelism": n}).runs[0].output
    assert plain
    report = verify_processor(supplier, expected=plain, context={"global_index": k, "total_parallelism": n},
                              cooperative_warn_ms=None)  # a restore generates the skipped events again
    _snapshot_modes_ran(report)


def test_the_list_feeder_goes_on_from_its_position():
    supplier = ProcessorSupplier(ListFeederP, list(range(11)))
    assert snapshot_support(supplier()) == "supported"
    _snapshot_modes_ran(verify_processor(supplier, expected=list(range(11))))


@pytest.mark.parametrize("k, n", [(0, 1), (0, 2), (1, 2)])
def test_the_stamped_items_source_goes_on_from_its_position(k, n):
    ts, items = list(range(0, 110, 10)), [f"e{i}" for i in range(11)]
    supplier = stamped_items_source(ts, items)
    assert snapshot_support(supplier()) == "supported"
    expected = list(zip(ts, items, strict=True))[k::n]
    report = verify_processor(supplier, expected=expected, context={"global_index": k, "total_parallelism": n})
    _snapshot_modes_ran(report)


def test_the_stamped_items_source_emits_stamped_chunks_and_checks_its_columns():
    from jetbench.core.items import Stamped
    from jetbench.core.outbox import Outbox
    from jetbench.core.processor import ProcessorContext

    p = stamped_items_source((5, 7, 9), ("a", "b", "c"))()
    outbox = Outbox(1, capacity=2)
    p.init(outbox, ProcessorContext("src", 0, 0, 1, 1))
    assert not p.complete()
    chunk = outbox.take_chunk(0)
    assert type(chunk) is Stamped and (chunk.ts, chunk.items) == ([5, 7], ["a", "b"])
    assert p.complete()
    assert outbox.take_chunk(0).pairs() == [(9, "c")]
    with pytest.raises(JetbenchError, match="2 timestamps for 3 items"):
        stamped_items_source([1, 2], ["a", "b", "c"])


def test_the_spark_sink_commits_what_each_snapshot_covers():
    items = [{"a": 1}, {"a": 2}, {"a": 3}]
    report = verify_processor(SparkSinkP, input=items, output_ordinals=0,
                              assert_output=lambda output: None)
    _snapshot_modes_ran(report)
    for run in report.runs:
        assert run.processor.result_part() == items, run.mode


def _submit_refused(tmp_path, supplier: Any, vertex: str) -> None:
    dag = DAG()
    dag.edge(Edge.between(dag.new_vertex(vertex, supplier), dag.new_vertex("out", collect_sink())))
    with pytest.raises(JetbenchError, match=f"vertex {vertex!r}.*cannot save"):
        ExecutionService().submit(dag, config=JobConfig("exactly_once", snapshot_store=tmp_path / "s.sqlite"))


def test_a_spark_partition_feeder_and_a_capture_refuse_a_guarantee(tmp_path):
    assert snapshot_support(StreamFeederP(iter([[1, 2]]))) == "unsupported"
    assert snapshot_support(CaptureP(None)) == "unsupported"
    _submit_refused(tmp_path, ProcessorSupplier(StreamFeederP, iter([[1, 2]])), "feed")
    dag = DAG()
    src = dag.new_vertex("src", ProcessorSupplier(ListFeederP, [1, 2]))
    dag.edge(Edge.between(src, dag.new_vertex("capture", ProcessorSupplier(CaptureP, None))))
    with pytest.raises(JetbenchError, match="vertex 'capture'.*cannot save"):
        ExecutionService().submit(dag, config=JobConfig("exactly_once", snapshot_store=tmp_path / "s.sqlite"))


def test_a_nexmark_job_with_exactly_once_gives_the_plain_result(tmp_path):
    config = NexmarkConfig(num_events=500, num_event_generators=2)

    def job(guarantee: str) -> list[Any]:
        dag = DAG()
        src = dag.new_vertex("nexmark", nexmark_source(config), local_parallelism=2)
        dag.edge(Edge.between(src, dag.new_vertex("out", collect_sink())))
        cfg = JobConfig(guarantee, snapshot_interval_ms=1, snapshot_store=tmp_path / "s.sqlite")
        return ExecutionService(cooperative_threads=2).submit(dag, config=cfg).join(timeout=60)

    assert sorted(map(repr, job("exactly_once"))) == sorted(map(repr, job("none")))
    assert NexmarkSourceP.snapshot_support == "supported"


def test_the_settled_latency_sink_keeps_its_flushed_count_across_snapshots():
    from jetbench.nexmark.latency import SettledLatencySinkP

    items = [(0, "a"), (4e15, "flushed"), (5, "b"), (6e15, "flushed"), (7, "c")]
    report = verify_processor(SettledLatencySinkP, input=items, output_ordinals=0, assert_output=lambda output: None)
    _snapshot_modes_ran(report)
    for run in report.runs:
        part = run.processor.result_part()
        assert (part[0], part[4]) == (3, 2), run.mode
