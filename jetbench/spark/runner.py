"""SparkRunner: a jetbench DAG or Pipeline run as Spark stages (Jet's "the DAG on every member").

How a job becomes Spark work:

1. **Cuts.** Partitioned, all-to-one and broadcast edges are *cut*: they cross Spark partitions.
   (A partitioned edge into a stage-1 accumulator stays local, like Jet's local edges: its
   output is re-partitioned by key before combining anyway.) Every vertex gets a level, the
   most cuts on a path from a source; an edge between levels is cut too, so stages never form
   a cycle. **Stages** are the groups of vertices joined by uncut edges.
2. **Tasks.** Each stage runs as ``mapPartitionsWithIndex`` over its input: in every Spark
   partition a copy of the stage's sub-DAG runs to completion on a local `ExecutionService`
   (cooperative, one thread by default). Processor contexts carry global indices (partition
   ``p`` of ``P`` holds instances ``p * lp .. p * lp + lp - 1`` of ``P * lp``), so sources
   split their data over the whole cluster as they would over a Jet cluster. The stage's input
   comes in through a feeder vertex; what crosses a cut is captured by a capture vertex.
3. **Shuffles.** A cut edge into a stage becomes ``partitionBy``: the producer tags each item
   with its target partition, computed from the edge's key function with `stable_hash`
   (all-to-one: partition 0 of a one-partition stage; broadcast: every partition, so, as on
   a Jet cluster, every instance of every partition; unicast: round-robin). A stage with a
   single unicast input is fed without a shuffle, e.g. straight from a DataFrame's Spark
   partitions (Arrow IPC batches) or a parquet source's row groups (read with pyarrow in
   the task). Two-stage aggregation falls out of the DAG: stage 1 accumulates per partition
   before the shuffle, stage 2 combines after it.
4. **Results.** Collecting sinks return their ``result_part()`` from every task; the driver
   merges them with the sink's ``merge_results`` exactly as the local executor does, in
   partition order. `jetbench.spark.sinks` build their DataFrame inside Spark instead.

Event time in batch mode: watermarks do not cross Spark shuffles, so windows are emitted when
their stage's input completes; every window is computed over all its events and no event is
dropped as late (the local executor may drop events that arrive behind the watermark).

Jobs that cannot run this way raise `jetbench.RunnerError` naming the vertex: unbounded
sources, and processor suppliers or key functions that cannot be pickled for the workers
(lambdas and closures are fine: they go through ``pyspark.cloudpickle``; functions of modules
the workers cannot import need ``cloudpickle.register_pickle_by_value(module)``). Side
effects happen in the workers: a ``peek`` or ``callback`` sink does not see driver state.

Limits: a task holds its stage's output (and, for stages with several inputs, its input) in
memory until its sub-DAG completes; rows reach a collecting sink's ``result_part()`` on the
driver, so collect only what fits there (the Spark sinks keep data in Spark).
"""

from __future__ import annotations

import contextlib
import pickle
import re
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any
from zlib import crc32

from ..core.dag import DAG, Edge, Routing, Vertex
from ..core.errors import DagError, JetbenchError, JobError, JobTimeout, RunnerError
from ..core.execution import ExecutionService
from ..core.plan import merge_parts
from ..core.processor import Processor
from ..processors.aggregation import _Supplier as AggregateSupplier
from ..processors.emitter import EmittingProcessor
from ..processors.generator_source import GeneratorSource
from ._hash import stable_hash
from .sinks import SparkSink, rdd_to_dataframe
from .sources import DataFrameSource, ParquetSource

__all__ = ["SparkRunner", "StageInfo"]

#: Channel of the records that carry collecting sinks' result parts back to the driver.
RESULT = -1
#: In-task execution defaults (one cooperative thread: a Spark task owns one core).
DEFAULT_EXECUTION = {"cooperative_threads": 1, "noncooperative_max_idle_us": 1000}
#: Records a streaming feeder reads from Spark per call.
FEED_CHUNK = 4096

_CUT_ROUTINGS = (Routing.PARTITIONED, Routing.ALL_TO_ONE, Routing.BROADCAST)
_DIRECT_ROUTINGS = (Routing.UNICAST, Routing.ISOLATED)


# ==================================================================================================
# Task side: what runs inside the Spark Python workers
# ==================================================================================================


class Tagger:
    """Tags items crossing a cut with their target partition: ``(target, (input_id, item))``."""

    __slots__ = ("input_id", "routing", "key_fn", "partitions")

    def __init__(self, input_id: int, routing: Routing, key_fn: Callable[[Any], Any] | None, partitions: int):
        self.input_id = input_id
        self.routing = routing
        self.key_fn = key_fn
        self.partitions = partitions

    def __getstate__(self) -> tuple:
        return self.input_id, self.routing.value, self.key_fn, self.partitions

    def __setstate__(self, state: tuple) -> None:
        self.input_id, routing, self.key_fn, self.partitions = state
        self.routing = Routing(routing)

    def tag(self, items: list, start: int = 0) -> list:
        iid, n, routing = self.input_id, self.partitions, self.routing
        if n == 1 or routing is Routing.ALL_TO_ONE:
            return [(0, (iid, x)) for x in items]
        if routing is Routing.PARTITIONED:
            key_fn = self.key_fn
            out = []
            append = out.append
            for x in items:
                k = key_fn(x)
                h = crc32(k.encode("utf-8", "surrogatepass")) if type(k) is str else stable_hash(k)
                append((h % n, (iid, x)))
            return out
        if routing is Routing.BROADCAST:
            return [(t, (iid, x)) for x in items for t in range(n)]
        return [((start + i) % n, (iid, x)) for i, x in enumerate(items)]  # unicast: round-robin


class CaptureP(Processor):
    """Sink of a cut edge inside a task: keeps the items (tagged for the shuffle, if any)."""

    def __init__(self, out: list, tagger: Tagger | None):
        self.out = out
        self.tagger = tagger
        self.count = 0

    def process(self, ordinal: int, inbox) -> None:
        items = inbox.take()
        if self.tagger is None:
            self.out += items
        else:
            self.out += self.tagger.tag(items, self.count)
            self.count += len(items)

    def try_process_watermark(self, watermark: Any) -> bool:
        return True  # event time does not cross Spark shuffles (batch mode)


class StreamFeederP(EmittingProcessor):
    """The stage's single input, read from the Spark partition's iterator on its own thread
    (non-cooperative: reading blocks on Spark). ``mode``: ``items``, ``keyed`` (strip the
    shuffle tags) or ``arrow`` (records -> lists of items by the source's ``reader``)."""

    is_cooperative = False

    def __init__(self, records: Iterator[Any], mode: str, reader: Any):
        self.records = records
        self.mode = mode
        self.reader = reader
        self._lists: Iterator[list] = iter(())

    def complete(self) -> bool:
        if not self._emitter.flush():
            return False
        if self.mode == "arrow":
            items = next(self._lists, None)
            while items is None:
                record = next(self.records, _END)
                if record is _END:
                    return True
                self._lists = self.reader.read(record)
                items = next(self._lists, None)
        else:
            chunk = list(islice(self.records, FEED_CHUNK))
            if not chunk:
                return True
            items = [r[1][1] for r in chunk] if self.mode == "keyed" else chunk
        if items:
            self._emitter.emit(items)
        return False


class ListFeederP(EmittingProcessor):
    """One input of a multi-input stage, already read into a list."""

    def __init__(self, items: list):
        self.items = items
        self.pos = 0

    def complete(self) -> bool:
        emitter = self._emitter
        room = emitter.free_room()
        if room <= 0:
            return False
        chunk = self.items[self.pos:self.pos + room]
        self.pos += len(chunk)
        if chunk:
            emitter.emit(chunk)
        return self.pos >= len(self.items) and not emitter.pending


class _Fixed:
    """A supplier returning processors made by ``factory`` (a closure over task-local state)."""

    def __init__(self, factory: Callable[[], Processor]):
        self.factory = factory

    def __call__(self) -> Processor:
        return self.factory()


class GlobalContextSupplier:
    """Wraps a vertex supplier so its processors see cluster-wide indices: instance j of
    ``lp`` in partition p of P gets global index ``p * lp + j`` of ``P * lp``."""

    def __init__(self, supplier: Callable[[], Any], partition: int, partitions: int):
        self.supplier = supplier
        self.partition = partition
        self.partitions = partitions
        merge = getattr(supplier, "merge_results", None)
        if merge is not None:
            self.merge_results = merge

    def __call__(self) -> Any:
        processor = self.supplier()
        if not isinstance(processor, Processor):
            return processor  # the engine reports it, naming the vertex
        init = processor.init
        p, n = self.partition, self.partitions

        def init_with_global_context(outbox: Any, context: Any) -> None:
            lp = context.local_parallelism
            init(outbox, replace(context, global_index=p * lp + context.local_index, total_parallelism=n * lp))

        processor.init = init_with_global_context
        return processor


@dataclass
class InputSpec:
    input_id: int
    vertex: str
    ordinal: int
    routing: str
    key_fn: Any
    priority: int
    queue_size: int


@dataclass
class OutputSpec:
    channel: int
    vertex: str
    ordinal: int
    queue_size: int
    tagger: Tagger | None


@dataclass
class StagePlan:
    """What a stage task needs (pickled once on the driver, shipped with the task)."""

    index: int
    partitions: int
    mode: str  # none | items | keyed | arrow | multi
    vertices: list[tuple[str, Any, int | None]]
    edges: list[tuple[str, int, str, int, str, Any, int, int]]
    inputs: list[InputSpec]
    outputs: list[OutputSpec]
    collecting: list[str]
    execution: dict[str, Any]
    reader: Any = None


def _route(edge: Edge, routing: str, key_fn: Any) -> Edge:
    r = Routing(routing)
    if r is Routing.PARTITIONED:
        return edge.partitioned(key_fn)
    if r is Routing.ALL_TO_ONE:
        return edge.all_to_one()
    if r is Routing.BROADCAST:
        return edge.broadcast()
    if r is Routing.ISOLATED:
        return edge.isolated()
    return edge


def _unique(dag_names: set[str], base: str) -> str:
    name, k = base, 1
    while name in dag_names:
        k += 1
        name = f"{base}-{k}"
    dag_names.add(name)
    return name


def run_stage(plan: StagePlan, partition: int, records: Iterator[Any]) -> Iterator[tuple[int, Any]]:
    """Run one copy of the stage's sub-DAG over this partition's input; yield
    ``(channel, record)`` for every cut edge leaving the stage and ``(RESULT, (vertex, part))``
    for every collecting instance."""
    dag = DAG()
    names = {name for name, _, _ in plan.vertices}
    vertices: dict[str, Vertex] = {}
    for name, supplier, lp in plan.vertices:
        vertices[name] = dag.new_vertex(name, GlobalContextSupplier(supplier, partition, plan.partitions), lp)
    for src, src_ord, dst, dst_ord, routing, key_fn, priority, queue_size in plan.edges:
        edge = Edge.from_(vertices[src], src_ord).to(vertices[dst], dst_ord)
        dag.edge(_route(edge, routing, key_fn).priority(priority).queue_size(queue_size))

    feeders: list[tuple[InputSpec, Callable[[], Processor]]] = []
    if plan.mode == "none":
        for _ in records:  # the partition's placeholder element
            pass
    elif plan.mode == "multi":
        lists: dict[int, list] = {spec.input_id: [] for spec in plan.inputs}
        for _, (input_id, item) in records:
            lists[input_id].append(item)
        for spec in plan.inputs:
            feeders.append((spec, lambda items=lists[spec.input_id]: ListFeederP(items)))
    else:
        (spec,) = plan.inputs
        feeders.append((spec, lambda: StreamFeederP(records, plan.mode, plan.reader)))
    for spec, factory in feeders:
        feeder = dag.new_vertex(_unique(names, f"spark-input-{spec.input_id}"), _Fixed(factory), 1)
        edge = Edge.from_(feeder, 0).to(vertices[spec.vertex], spec.ordinal)
        dag.edge(_route(edge, spec.routing, spec.key_fn).priority(spec.priority).queue_size(spec.queue_size))

    stores: list[tuple[int, list]] = []
    for out in plan.outputs:
        store: list = []
        stores.append((out.channel, store))
        capture = dag.new_vertex(_unique(names, f"spark-output-{out.channel}"),
                                 _Fixed(lambda store=store, tagger=out.tagger: CaptureP(store, tagger)), 1)
        dag.edge(Edge.from_(vertices[out.vertex], out.ordinal).to(capture).queue_size(out.queue_size))

    job = ExecutionService(**plan.execution).submit(dag, name=f"spark-stage-{plan.index}-part-{partition}")
    job.join()
    for channel, store in stores:
        for record in store:
            yield channel, record
        store.clear()
    if plan.collecting:
        collecting = set(plan.collecting)
        for t in job.tasklets:
            if t.vertex_name in collecting:
                yield RESULT, (t.vertex_name, t.processor.result_part())


class StageFunction:
    """The ``mapPartitionsWithIndex`` function of a stage: the plan travels pickled."""

    def __init__(self, plan_bytes: bytes):
        self.plan_bytes = plan_bytes

    def __call__(self, partition: int, records: Iterator[Any]) -> Iterator[tuple[int, Any]]:
        return run_stage(pickle.loads(self.plan_bytes), partition, records)


class Select:
    """Records of one channel, without the channel."""

    def __init__(self, channel: int):
        self.channel = channel

    def __call__(self, records: Iterator[tuple[int, Any]]) -> Iterator[Any]:
        channel = self.channel
        return (r for c, r in records if c == channel)


def _no_records(records: Iterator[Any]) -> Iterator[Any]:
    for _ in records:
        pass
    return iter(())


class ReadArrow:
    """An Arrow source's records -> items (optionally tagged for a shuffle)."""

    def __init__(self, reader: Any, tagger: Tagger | None = None):
        self.reader = reader
        self.tagger = tagger

    def __call__(self, records: Iterator[Any]) -> Iterator[Any]:
        count = 0
        tagger = self.tagger
        for record in records:
            for items in self.reader.read(record):
                if tagger is not None:
                    n = len(items)
                    items = tagger.tag(items, count)
                    count += n
                yield from items


_END = object()


def _target(key: int) -> int:
    return key


# ==================================================================================================
# Driver side: planning
# ==================================================================================================


@dataclass(eq=False)
class StageInfo:
    """A stage as planned: its vertices, cut edges in and out, partitions and input mode."""

    index: int
    level: int
    vertices: list[Vertex]
    inputs: list[Edge] = field(default_factory=list)
    outputs: list[Edge] = field(default_factory=list)
    partitions: int = 1
    mode: str = "none"
    collecting: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [v.name for v in self.vertices]

    def __repr__(self) -> str:
        return f"StageInfo({self.index}, {self.names}, partitions={self.partitions}, mode={self.mode!r})"


@dataclass(eq=False)
class SparkPlan:
    dag: DAG
    stages: list[StageInfo]
    stage_of: dict[str, StageInfo]
    arrow_sources: dict[str, Any]  # vertex -> DataFrameSource / ParquetSource
    arrow_inputs: dict[str, Any]  # vertex -> the RDD its reader reads
    spark_sinks: dict[str, SparkSink]
    collecting: set[str]
    cut: set[int]  # ids of cut edges

    def explain(self) -> str:
        lines = []
        for st in self.stages:
            lines.append(f"stage {st.index}: {st.partitions} partition(s), input {st.mode}: {', '.join(st.names)}")
            for e in st.inputs:
                lines.append(f"  <- {e.source.name} ({e.routing.value})")
            for e in st.outputs:
                lines.append(f"  -> {e.destination.name} ({e.routing.value})")
        for name in self.spark_sinks:
            lines.append(f"spark sink: {name}")
        return "\n".join(lines)


def _is_unbounded(supplier: Any) -> bool:
    if isinstance(supplier, GeneratorSource):
        return supplier.count is None
    return getattr(supplier, "streaming", False) is True or getattr(supplier, "unbounded", False) is True


def _pickle_check(obj: Any, what: str) -> None:
    from pyspark import cloudpickle

    try:
        cloudpickle.dumps(obj)
    except Exception as exc:
        raise RunnerError(
            f"{what} cannot be shipped to Spark workers: {type(exc).__name__}: {exc}. "
            "Functions must be picklable with pyspark.cloudpickle (lambdas and closures are; "
            "locks, open files, sockets, generators and Spark objects are not)"
        ) from exc


class SparkRunner:
    """Runs DAGs and Pipelines on Spark (see the module doc for how).

    ``session``: a SparkSession (default: `jetbench.spark.session()`). ``partitions``: Spark
    partitions of stages after a shuffle or without input (default: the session's default
    parallelism). ``execution_config`` goes to the `ExecutionService` inside each task
    (default ``cooperative_threads=1``).
    """

    def __init__(self, session: Any = None, *, partitions: int | None = None, **execution_config: Any):
        if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1):
            raise JetbenchError(f"SparkRunner: partitions must be an int >= 1, got {partitions!r}")
        self._session = session
        self.partitions = partitions
        self.execution = {**DEFAULT_EXECUTION, **execution_config}
        ExecutionService(**self.execution)  # fail here on a bad setting

    @property
    def session(self) -> Any:
        if self._session is None:
            from ._session import session

            self._session = session()
        return self._session

    def __repr__(self) -> str:
        return f"SparkRunner(partitions={self.partitions}, execution={self.execution})"

    # -- planning ----------------------------------------------------------------------------------

    def _to_dag(self, job: Any, fuse: bool | None) -> DAG:
        from ..pipeline.stages import Pipeline

        if isinstance(job, Pipeline):
            for node in job.nodes:
                if node.kind == "source" and node.params["source"].streaming:
                    raise RunnerError(
                        f"vertex {node.name!r}: SparkRunner runs batch jobs; this source is unbounded "
                        "(e.g. sources.generator without count). Give it a count, or run the job locally"
                    )
            return job.to_dag(fuse=fuse)
        if isinstance(job, DAG):
            return job
        if hasattr(job, "to_dag"):
            return job.to_dag()
        raise JetbenchError(f"SparkRunner.run() takes a DAG or a Pipeline, got {job!r}")

    def plan(self, job: Any, fuse: bool | None = None) -> SparkPlan:
        """Cut the job into stages (nothing runs); `SparkPlan.explain` lists them."""
        dag = self._to_dag(job, fuse)
        threads = self.execution["cooperative_threads"]
        dag.validate(threads)
        order = dag.topological_order()
        position = {v.name: i for i, v in enumerate(order)}
        df_sources = {v.name: v.supplier for v in order if isinstance(v.supplier, (DataFrameSource, ParquetSource))}
        spark_sinks = {v.name: v.supplier for v in order if isinstance(v.supplier, SparkSink)}
        collecting = set(spark_sinks)
        for v in order:
            if v.name in spark_sinks and dag.outbound_edges(v):
                raise RunnerError(f"vertex {v.name!r}: a Spark sink cannot have outbound edges")
            if v.name in df_sources or v.name in spark_sinks:
                continue
            if _is_unbounded(v.supplier):
                raise RunnerError(
                    f"vertex {v.name!r}: SparkRunner runs batch jobs; this source is unbounded "
                    "(e.g. a generator without count). Give it a count, or run the job locally"
                )
            if self._probe(v):
                collecting.add(v.name)
            _pickle_check(v.supplier, f"vertex {v.name!r}: its processor supplier")
        for e in dag.edges:
            if e.key_fn is not None:
                _pickle_check(e.key_fn, f"edge {e.source.name!r} -> {e.destination.name!r}: its key function")

        def local(e: Edge) -> bool:
            """A partitioned/all-to-one edge into a stage-1 accumulator: kept inside the stage."""
            dst = e.destination
            if not (isinstance(dst.supplier, AggregateSupplier) and dst.supplier.label in ("accumulate_by_key", "accumulate")):
                return False
            outs = dag.outbound_edges(dst)
            return bool(outs) and all(o.routing in (Routing.PARTITIONED, Routing.ALL_TO_ONE) for o in outs)

        def cut(e: Edge) -> bool:
            if e.source.name in df_sources or e.destination.name in spark_sinks:
                return True
            return e.routing in _CUT_ROUTINGS and not local(e)

        level: dict[str, int] = {}
        for v in order:
            if v.name in df_sources:
                level[v.name] = -1
                continue
            ins = dag.inbound_edges(v)
            level[v.name] = max((level[e.source.name] + (1 if cut(e) else 0) for e in ins), default=0)
        cut_edges = {id(e) for e in dag.edges if cut(e) or level[e.source.name] != level[e.destination.name]}

        # stages: components of regular vertices joined by uncut edges
        parent = {v.name: v.name for v in order if v.name not in df_sources and v.name not in spark_sinks}

        def find(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for e in dag.edges:
            if id(e) not in cut_edges:
                a, b = find(e.source.name), find(e.destination.name)
                if a != b:
                    parent[max(a, b, key=position.get)] = min(a, b, key=position.get)
        groups: dict[str, list[Vertex]] = {}
        for v in dag.vertices:
            if v.name in parent:
                groups.setdefault(find(v.name), []).append(v)
        ordered = sorted(groups.values(), key=lambda vs: (level[vs[0].name], min(position[v.name] for v in vs)))
        stages = [StageInfo(i, level[vs[0].name], vs) for i, vs in enumerate(ordered)]
        stage_of = {v.name: st for st in stages for v in st.vertices}
        for e in dag.edges:
            if id(e) in cut_edges:
                if e.destination.name in stage_of:
                    stage_of[e.destination.name].inputs.append(e)
                if e.source.name in stage_of:
                    stage_of[e.source.name].outputs.append(e)

        sc = self.session.sparkContext
        default_partitions = self.partitions or sc.defaultParallelism
        arrow_inputs = {name: source.spark_input(sc, default_partitions) for name, source in df_sources.items()}
        for st in stages:
            st.collecting = [v.name for v in st.vertices if v.name in collecting]
            ins = st.inputs
            if not ins:
                st.mode, st.partitions = "none", default_partitions
            elif len(ins) == 1 and (ins[0].routing in _DIRECT_ROUTINGS or local(ins[0])):
                src = ins[0].source.name
                if src in df_sources:
                    st.mode, st.partitions = "arrow", arrow_inputs[src].getNumPartitions()
                else:
                    st.mode, st.partitions = "items", stage_of[src].partitions
            else:
                st.mode = "keyed" if len(ins) == 1 else "multi"
                st.partitions = 1 if any(e.routing is Routing.ALL_TO_ONE for e in ins) else default_partitions
        return SparkPlan(dag, stages, stage_of, df_sources, arrow_inputs, spark_sinks, collecting, cut_edges)

    @staticmethod
    def _probe(v: Vertex) -> bool:
        """Make one processor on the driver: checks the supplier and learns whether it collects."""
        try:
            processor = v.supplier()
        except Exception as exc:
            raise JobError(f"vertex {v.name!r}: its supplier raised {type(exc).__name__}: {exc}", v.name, 0) from exc
        if not isinstance(processor, Processor):
            raise DagError(f"vertex {v.name!r}: supplier returned {processor!r}, not a jetbench.Processor")
        collects = bool(getattr(processor, "collects", False))
        with contextlib.suppress(Exception):  # a probe only; the real instances close in the tasks
            processor.close()
        return collects

    def explain(self, job: Any, fuse: bool | None = None) -> str:
        return self.plan(job, fuse).explain()

    def _stage_plan(self, plan: SparkPlan, st: StageInfo) -> StagePlan:
        members = {v.name for v in st.vertices}
        edges = [
            (e.source.name, e.source_ordinal, e.destination.name, e.destination_ordinal, e.routing.value,
             e.key_fn, e.edge_priority, e.edge_queue_size)
            for e in plan.dag.edges
            if id(e) not in plan.cut and e.source.name in members
        ]
        inputs = [
            InputSpec(i, e.destination.name, e.destination_ordinal, e.routing.value, e.key_fn, e.edge_priority,
                      e.edge_queue_size)
            for i, e in enumerate(st.inputs)
        ]
        outputs = [
            OutputSpec(plan.dag.edges.index(e), e.source.name, e.source_ordinal, e.edge_queue_size, self._tagger(plan, e))
            for e in st.outputs
        ]
        reader = None
        if st.mode == "arrow":
            reader = plan.arrow_sources[st.inputs[0].source.name].reader
        return StagePlan(st.index, st.partitions, st.mode, [(v.name, v.supplier, v.local_parallelism) for v in st.vertices],
                         edges, inputs, outputs, st.collecting, self.execution, reader)

    @staticmethod
    def _tagger(plan: SparkPlan, e: Edge) -> Tagger | None:
        """How the producer marks items of cut edge ``e``: None for a consumer fed without a shuffle."""
        consumer = plan.stage_of.get(e.destination.name)
        if consumer is None or consumer.mode in ("items", "arrow"):
            return None
        return Tagger(consumer.inputs.index(e), e.routing, e.key_fn, consumer.partitions)

    # -- running -----------------------------------------------------------------------------------

    def run(self, job: Any, timeout: float | None = None, fuse: bool | None = None) -> Any:
        """Run ``job`` on Spark; return its collecting sink's value as the local executor would.

        Raises `RunnerError` (before anything runs) for shapes Spark cannot run, `JobError` if a
        processor fails in a task, `JobTimeout` after ``timeout`` seconds (the Spark jobs are cancelled).
        """
        from pyspark import cloudpickle
        from pyspark.storagelevel import StorageLevel

        plan = self.plan(job, fuse)
        spark = self.session
        sc = spark.sparkContext
        rdds: dict[int, Any] = {}
        uses: Counter = Counter()
        channel = {id(e): i for i, e in enumerate(plan.dag.edges)}

        def producer_rdd(e: Edge, tagger: Tagger | None) -> Any:
            """Items (tagged if ``tagger``) of cut edge ``e`` as an RDD."""
            source = plan.arrow_sources.get(e.source.name)
            if source is not None:
                return plan.arrow_inputs[e.source.name].mapPartitions(ReadArrow(source.reader, tagger))
            producer = plan.stage_of[e.source.name]
            uses[producer.index] += 1
            return rdds[producer.index].mapPartitions(Select(channel[id(e)]))

        for st in plan.stages:
            stage_plan = self._stage_plan(plan, st)
            try:
                plan_bytes = cloudpickle.dumps(stage_plan)
            except Exception as exc:  # the per-vertex checks passed: name the stage
                raise RunnerError(f"stage {st.index} ({', '.join(st.names)}) cannot be pickled: {exc}") from exc
            if st.mode == "none":
                base = sc.parallelize(range(st.partitions), st.partitions)
            elif st.mode == "arrow":
                base = plan.arrow_inputs[st.inputs[0].source.name]
            elif st.mode == "items":
                base = producer_rdd(st.inputs[0], None)
            else:
                parts = [producer_rdd(e, self._tagger(plan, e) if e.source.name in plan.arrow_sources else None)
                         for e in st.inputs]
                union = parts[0] if len(parts) == 1 else sc.union(parts)
                base = union.partitionBy(st.partitions, _target)
            rdds[st.index] = base.mapPartitionsWithIndex(StageFunction(plan_bytes))

        sink_inputs: dict[str, list[Any]] = {}
        for name, sink in plan.spark_sinks.items():
            sink_inputs[name] = [producer_rdd(e, None) for e in plan.dag.inbound_edges(plan.dag.vertex(name))]
            if sink.schema is None:  # schema inference reads the first rows in a job of its own
                for e in plan.dag.inbound_edges(plan.dag.vertex(name)):
                    if e.source.name in plan.stage_of:
                        uses[plan.stage_of[e.source.name].index] += 1
        finals = []
        for st in plan.stages:
            if st.collecting:
                finals.append(rdds[st.index].mapPartitions(Select(RESULT)))
            elif not st.outputs:
                finals.append(rdds[st.index].mapPartitions(_no_records))
            else:
                continue
            uses[st.index] += 1
        persisted = [rdds[i] for i, n in uses.items() if n > 1]
        for rdd in persisted:
            rdd.persist(StorageLevel.MEMORY_AND_DISK)

        tag = f"jetbench-{uuid.uuid4().hex}"
        timed_out = threading.Event()
        timer = None
        if timeout is not None:
            def cancel() -> None:
                timed_out.set()
                sc.cancelJobsWithTag(tag)

            timer = threading.Timer(timeout, cancel)
            timer.daemon = True
        sc.addJobTag(tag)
        try:
            if timer is not None:
                timer.start()
            results: dict[str, Any] = {}
            for name, sink in plan.spark_sinks.items():
                items = sink_inputs[name][0] if len(sink_inputs[name]) == 1 else sc.union(sink_inputs[name])
                df = rdd_to_dataframe(spark, items, sink.schema)
                if sink.kind == "dataframe":
                    df = df.localCheckpoint(eager=True)
                results[name] = sink.finish(df)
            records = []
            if finals:
                records = (finals[0] if len(finals) == 1 else sc.union(finals)).collect()
        except Exception as exc:
            if timed_out.is_set():
                raise JobTimeout(f"SparkRunner: the job did not finish within {timeout} s; its Spark jobs were cancelled") from exc
            raise _job_error(exc) from exc
        finally:
            if timer is not None:
                timer.cancel()
            sc.removeJobTag(tag)
            for rdd in persisted:
                rdd.unpersist()
        return self._result(plan, records, results)

    @staticmethod
    def _result(plan: SparkPlan, records: list, results: dict[str, Any]) -> Any:
        parts: dict[str, list] = {}
        for vertex, part in records:
            parts.setdefault(vertex, []).append(part)
        for v in plan.dag.vertices:
            if v.name in results:
                return results[v.name]
            if v.name in parts:
                merge = getattr(v.supplier, "merge_results", None)
                return merge(parts[v.name]) if merge is not None else merge_parts(parts[v.name])
        return None


_JOB_ERROR = re.compile(r"(?:jetbench\.core\.errors\.)?JobError: (.+)")
_ANY_ERROR = re.compile(r"^(\w+(?:\.\w+)*(?:Error|Exception|Exit|Interrupt)): (.+)$", re.MULTILINE)


def _job_error(exc: Exception) -> JetbenchError:
    """A failed Spark action as a `JobError` naming the vertex when a processor failed."""
    if isinstance(exc, JetbenchError):
        return exc
    text = str(exc)
    m = _JOB_ERROR.search(text)
    if m:
        message = m.group(1).strip()
        vertex = re.search(r"in vertex '([^']+)'", message)
        instance = re.search(r" instance (\d+)", message)
        return JobError(f"SparkRunner: {message}", vertex.group(1) if vertex else None,
                        int(instance.group(1)) if instance else None)
    errors = [f"{name}: {msg}" for name, msg in _ANY_ERROR.findall(text) if "Py4J" not in name]
    detail = errors[-1] if errors else text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return JobError(f"SparkRunner: the Spark job failed: {detail}")
