"""What runs inside the Spark Python workers for `jetbench.spark.SparkRunner`.

Everything here travels pickled to the workers (with ``pyspark.cloudpickle``) and imports
neither pyspark (but for the task's partition id, inside a task) nor the driver side: a
`StagePlan` says what one stage's task runs, `run_stage` runs one copy of the stage's sub-DAG
over one Spark partition on a local `ExecutionService`, and `StageFunction`/`SourceFunction`
are the ``mapInArrow`` functions the driver hands to Spark.

Stages exchange Arrow record batches: every stage's output is a DataFrame of `OUTPUT_SCHEMA`
rows ``(part, input, channel, data)``: ``data`` a pickled list of up to `CHUNK` items of one cut
edge (``channel``), ``part`` the value of the partition column that makes Spark's own hash
partitioning (``repartition(n, "part")``, a JVM shuffle) deliver the row to the partition the
edge's key chose in Python (`Tagger`, `Outlet`). How a job is cut into stages is
`jetbench.spark.stage_cut`; the driver that wires the stages into DataFrames is
`jetbench.spark.runner`.
"""

from __future__ import annotations

import itertools
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar
from zlib import crc32

import pyarrow as pa

from ..core.dag import DAG, Edge, Routing, Vertex
from ..core.execution import ExecutionService
from ..core.processor import Processor, ProcessorContext
from ..processors.emitter import EmittingProcessor
from ..processors.snapshotting import restored_position, save_position
from ._hash import spark_partition_keys, stable_hash
from .lowering import TypedAggregation

if TYPE_CHECKING:
    from ..core.inbox import Inbox

__all__ = [
    "CHUNK",
    "AccumulatorRows",
    "EMPTY",
    "OUTPUT_COLUMNS",
    "OUTPUT_SCHEMA",
    "PARTITION_COLUMN",
    "RESULT",
    "InputSpec",
    "OutputSpec",
    "Outlet",
    "SourceFunction",
    "StageFunction",
    "StagePlan",
    "Tagger",
    "TypedOutlet",
    "TypedRows",
    "chunks",
    "flushed",
    "items_of",
    "partition_of",
    "run_stage",
    "to_batches",
]

#: Channel of the records that carry collecting sinks' result parts back to the driver.
RESULT = -1
#: Items per row (one pickled list) of a stage's output.
CHUNK = 4096
#: The columns of every stage's output DataFrame (see `Outlet`), and their Spark schema.
OUTPUT_COLUMNS = ("part", "input", "channel", "data")
OUTPUT_SCHEMA = "part int, input int, channel int, data binary"
INPUT, DATA = 1, 3
#: A row's ``data`` holding no items (the driver adds one such row per partition of a shuffle, since
#: Spark runs a ``mapInArrow`` task only where there are rows, and a stage runs in every partition).
EMPTY = pickle.dumps([], pickle.HIGHEST_PROTOCOL)
#: The column the driver appends to every stage's input: the Spark partition it comes from.
PARTITION_COLUMN = "_jetbench_partition"
#: An output row: the partition column's value, the consumer's input id, the channel, a pickled list.
Row = tuple[int, int, int, bytes]


class Tagger:
    """Where the items of a cut edge go: `route` splits a list of items by target partition
    (``routing`` of the edge, ``partitions`` of the consuming stage), and ``input_id`` says which
    input of the consuming stage they are."""

    __slots__ = ("input_id", "routing", "key_fn", "partitions")

    def __init__(self, input_id: int, routing: Routing, key_fn: Callable[[Any], Any] | None, partitions: int):
        self.input_id = input_id
        self.routing = routing
        self.key_fn = key_fn
        self.partitions = partitions

    def __getstate__(self) -> tuple[int, str, Callable[[Any], Any] | None, int]:
        return self.input_id, self.routing.value, self.key_fn, self.partitions

    def __setstate__(self, state: tuple[int, str, Callable[[Any], Any] | None, int]) -> None:
        self.input_id, routing, self.key_fn, self.partitions = state
        self.routing = Routing(routing)

    def route(self, items: list[Any], start: int = 0) -> dict[int, list[Any]]:
        """``items`` by target partition (``start``: items routed before, for round-robin)."""
        n, routing = self.partitions, self.routing
        if n == 1 or routing is Routing.ALL_TO_ONE:
            return {0: items}
        if routing is Routing.BROADCAST:
            return dict.fromkeys(range(n), items)
        out: list[list[Any]] = [[] for _ in range(n)]
        if routing is Routing.PARTITIONED:
            key_fn = self.key_fn
            assert key_fn is not None  # a partitioned edge has a key function
            appends = [o.append for o in out]
            for x in items:
                k = key_fn(x)
                h = crc32(k.encode("utf-8", "surrogatepass")) if type(k) is str else stable_hash(k)
                appends[h % n](x)
        else:  # unicast: round-robin
            for i, x in enumerate(items):
                out[(start + i) % n].append(x)
        return {t: xs for t, xs in enumerate(out) if xs}


def dumps(obj: Any) -> bytes:
    """``obj`` pickled: with `pickle` (fast), or with ``pyspark.cloudpickle`` if it cannot (items
    of classes the workers cannot import, such as those defined in a notebook or pickled by value)."""
    try:
        return pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        from pyspark import cloudpickle  # in the worker

        return cloudpickle.dumps(obj, pickle.HIGHEST_PROTOCOL)


class Outlet:
    """What one task sends down one cut edge (``channel``), as rows of the stage's output
    DataFrame (`OUTPUT_SCHEMA`): ``(part, input, channel, data)``, ``data`` a pickled list of at
    most `CHUNK` items, ``part`` the value that Spark's hash partitioning sends to the target
    partition (`spark_partition_keys`), so ``repartition(n, "part")`` delivers each row where the
    Python side decided."""

    def __init__(self, channel: int, tagger: Tagger | None):
        self.channel = channel
        self.tagger = tagger
        self.by_target: dict[int, list[Any]] = {}
        self.count = 0

    def add(self, items: list[Any]) -> None:
        by_target = self.by_target
        if self.tagger is None:
            by_target.setdefault(0, []).extend(items)
            return
        for target, chunk in self.tagger.route(items, self.count).items():
            by_target.setdefault(target, []).extend(chunk)
        self.count += len(items)

    def rows(self) -> Iterator[Row]:
        tagger = self.tagger
        keys = spark_partition_keys(tagger.partitions) if tagger is not None else [0]
        input_id = tagger.input_id if tagger is not None else 0
        channel = self.channel
        if tagger is None and not self.by_target:
            # a consumer fed without a shuffle runs only on partitions with a row: give it one
            yield 0, input_id, channel, EMPTY
        for target, items in self.by_target.items():
            for i in range(0, len(items), CHUNK):
                yield keys[target], input_id, channel, dumps(items[i:i + CHUNK])
        self.by_target.clear()


@dataclass
class TypedRows:
    """Rows of a lowered cut edge (`TypedOutlet`): its typed columns by name and ``data``."""

    channel: int
    columns: dict[str, list[Any]]
    data: list[bytes | None]


class TypedOutlet:
    """What one task sends down a cut edge that Spark aggregates (`TypedAggregation`): the
    ``(key, accumulator)`` pairs that fit Spark's types as typed rows, the others as pickled chunks
    in rows of their own (see `jetbench.spark.lowering`). No partition column: Spark's
    ``groupBy`` does the shuffle. ``partition`` numbers the rows apart from other tasks' (the
    sequence numbers that break ties, the group of each pickled chunk)."""

    def __init__(self, typed: TypedAggregation, partition: int):
        self.typed = typed
        self.names = [f.name for f in typed.fields()]
        self.columns: list[list[Any]] = [[] for _ in self.names]
        self.rest: list[Any] = []
        self.seq = (partition + 1) << 40  # typed rows' order, then the pickled chunks' groups

    def add(self, items: list[Any]) -> None:
        columns, rest = self.typed.encode_pairs(items, self.seq)
        if columns[0]:
            self.seq += len(columns[0])
            for mine, new in zip(self.columns, columns, strict=True):
                mine += new
        self.rest += rest

    def rows(self) -> Iterator[TypedRows]:
        n = len(self.columns[0])
        for i in range(0, n, CHUNK * 16):
            yield TypedRows(self.typed.channel, {name: column[i:i + CHUNK * 16]
                                                 for name, column in zip(self.names, self.columns, strict=True)},
                            [None] * min(CHUNK * 16, n - i))
        g = self.typed.group_names()[-1]
        chunks = [self.rest[i:i + CHUNK] for i in range(0, len(self.rest), CHUNK)]
        if chunks:
            groups = list(range(self.seq, self.seq + len(chunks)))
            self.seq += len(chunks)
            yield TypedRows(self.typed.channel, {g: groups}, [dumps(chunk) for chunk in chunks])
        self.columns = [[] for _ in self.names]
        self.rest = []


class CaptureP(Processor):
    """Sink of a cut edge inside a task: hands the items to the task's `Outlet` for the edge.

    The outlet is the task's, outside any snapshot: a job asking for a processing guarantee
    refuses it (Spark retries the whole task instead)."""

    snapshot_support: ClassVar[str] = "unsupported"

    def __init__(self, outlet: Outlet | TypedOutlet):
        self.outlet = outlet

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self.outlet.add(inbox.take())

    def try_process_watermark(self, watermark: Any) -> bool:
        return True  # event time does not cross Spark shuffles (batch mode)


class StreamFeederP(EmittingProcessor):
    """The stage's single input, lists of items read from the Spark partition on its own thread
    (non-cooperative: reading blocks on Spark): unpickled chunks of a producer stage, or a
    source's Arrow batches decoded by its reader.

    The partition's iterator is read once and cannot go back: a job asking for a processing
    guarantee refuses it (Spark retries the whole task instead)."""

    is_cooperative = False
    snapshot_support: ClassVar[str] = "unsupported"

    def __init__(self, lists: Iterator[list[Any]]):
        self.lists = lists

    def complete(self) -> bool:
        if not self._emitter.flush():
            return False
        items = next(self.lists, None)
        if items is None:
            return True
        if items:
            self._emitter.emit(items)
        return False


class ListFeederP(EmittingProcessor):
    """One input of a multi-input stage, already read into a list.

    Snapshots: each instance saves how many items it has emitted; a restored one goes on from there."""

    snapshot_support: ClassVar[str] = "supported"

    def __init__(self, items: list[Any]):
        self.items = items
        self.pos = 0

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():  # items taken before the barrier go first
            return False
        return save_position(self.outbox, "ListFeederP", self.context, self.pos)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        saved = restored_position(inbox, "ListFeederP", self.context)
        if saved is not None:
            (self.pos,) = saved

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

    merge_results: Callable[[list[Any]], Any]

    def __init__(self, supplier: Callable[[], Any], partition: int, partitions: int):
        self.supplier = supplier
        self.partition = partition
        self.partitions = partitions
        merge = getattr(supplier, "merge_results", None)
        if merge is not None:
            self.merge_results = merge

    def __call__(self) -> Any:
        return self.supplier()

    def processor_context(self, context: ProcessorContext) -> ProcessorContext:
        """What the engine gives each instance (`jetbench.core.plan`): the global index and total."""
        lp = context.local_parallelism
        return replace(context, global_index=self.partition * lp + context.local_index,
                       total_parallelism=self.partitions * lp)


@dataclass
class InputSpec:
    """A cut edge into the stage, seen from inside the task: fed by a feeder vertex."""

    input_id: int
    vertex: str
    ordinal: int
    routing: str
    key_fn: Any
    priority: int
    queue_size: int


@dataclass
class OutputSpec:
    """A cut edge out of the stage, seen from inside the task: captured on ``channel``."""

    channel: int
    vertex: str
    ordinal: int
    queue_size: int
    tagger: Tagger | None
    typed: TypedAggregation | None = None


#: An uncut edge inside a stage: source, source ordinal, destination, destination ordinal,
#: routing (its value), key function, priority, queue size.
EdgeSpec = tuple[str, int, str, int, str, Any, int, int]


@dataclass
class StagePlan:
    """What a stage task needs (pickled once on the driver, shipped with the task)."""

    index: int
    partitions: int
    mode: str  # none | items | keyed | arrow | multi
    vertices: list[tuple[str, Any, int | None]]
    edges: list[EdgeSpec]
    inputs: list[InputSpec]
    outputs: list[OutputSpec]
    collecting: list[str]
    execution: dict[str, Any]
    reader: Any = None
    #: the typed columns of the stage's lowered outputs, after `OUTPUT_SCHEMA`'s
    extra: list[pa.Field] = field(default_factory=list)


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


def chunks(batches: Iterator[pa.RecordBatch]) -> Iterator[list[Any]]:
    """The lists of items in rows of a stage's output (their ``data`` column), in order."""
    loads = pickle.loads
    for batch in batches:
        for blob in batch.column(DATA).to_pylist():
            yield loads(blob)


def feeds(plan: StagePlan, partition: int, batches: Iterator[pa.RecordBatch]) -> dict[int, Iterator[list[Any]] | list[Any]]:
    """What the stage's feeder vertices emit, by input id: an iterator of lists of items for a
    single input (read as the sub-DAG runs), a list of items per input for several (read first)."""
    if plan.mode == "none":
        for _ in batches:  # the partition's placeholder row
            pass
        return {}
    if plan.mode == "multi":
        lists: dict[int, list[Any]] = {spec.input_id: [] for spec in plan.inputs}
        loads = pickle.loads
        for batch in batches:
            for input_id, blob in zip(batch.column(INPUT).to_pylist(), batch.column(DATA).to_pylist(), strict=True):
                lists[input_id] += loads(blob)
        return dict(lists)
    (spec,) = plan.inputs
    if plan.mode == "arrow":
        return {spec.input_id: plan.reader.read_partition(partition, batches)}
    return {spec.input_id: chunks(batches)}


def run_stage(plan: StagePlan, partition: int, batches: Iterator[pa.RecordBatch]) -> Iterator[Row | TypedRows]:
    """Run one copy of the stage's sub-DAG over this partition's input (Arrow batches: a
    producer stage's rows, a source's records or one placeholder row); yield the output rows
    (`OUTPUT_SCHEMA`) of every cut edge leaving the stage, then ``(0, 0, RESULT, pickled
    (vertex, part))`` for every collecting instance; a lowered edge's rows come as `TypedRows`."""
    dag = DAG()
    names = {name for name, _, _ in plan.vertices}
    vertices: dict[str, Vertex] = {}
    for name, supplier, lp in plan.vertices:
        vertices[name] = dag.new_vertex(name, GlobalContextSupplier(supplier, partition, plan.partitions), lp)
    for src, src_ord, dst, dst_ord, routing, key_fn, priority, queue_size in plan.edges:
        edge = Edge.from_(vertices[src], src_ord).to(vertices[dst], dst_ord)
        dag.edge(_route(edge, routing, key_fn).priority(priority).queue_size(queue_size))

    fed = feeds(plan, partition, batches)
    for spec in plan.inputs:
        feed = fed[spec.input_id]
        factory: Callable[[], Processor] = (partial(ListFeederP, feed) if isinstance(feed, list)
                                            else partial(StreamFeederP, feed))
        feeder = dag.new_vertex(_unique(names, f"spark-input-{spec.input_id}"), _Fixed(factory), 1)
        edge = Edge.from_(feeder, 0).to(vertices[spec.vertex], spec.ordinal)
        dag.edge(_route(edge, spec.routing, spec.key_fn).priority(spec.priority).queue_size(spec.queue_size))

    outlets: list[Outlet | TypedOutlet] = []
    for out in plan.outputs:
        outlet = TypedOutlet(out.typed, partition) if out.typed is not None else Outlet(out.channel, out.tagger)
        outlets.append(outlet)
        capture = dag.new_vertex(_unique(names, f"spark-output-{out.channel}"), _Fixed(partial(CaptureP, outlet)), 1)
        source, ordinal = vertices[out.vertex], out.ordinal
        pre = out.typed.pre_vertex() if out.typed is not None else None
        if pre is not None:  # a lowered window's frames: folded here, named after the window vertex
            name, supplier = pre
            between = dag.new_vertex(_unique(names, name), GlobalContextSupplier(supplier, partition, plan.partitions), 1)
            dag.edge(Edge.from_(source, ordinal).to(between).queue_size(out.queue_size))
            source, ordinal = between, 0
        dag.edge(Edge.from_(source, ordinal).to(capture).queue_size(out.queue_size))

    job = ExecutionService(**plan.execution).submit(dag, name=f"spark-stage-{plan.index}-part-{partition}")
    job.join()
    for outlet in outlets:
        yield from outlet.rows()
    if plan.collecting:
        collecting = set(plan.collecting)
        for t in job.tasklets:
            if t.vertex_name in collecting:
                part = (t.vertex_name, t.processor.result_part())
                yield 0, 0, RESULT, dumps(part)


def to_batches(rows: Iterator[Row | TypedRows], max_rows: int = 64, max_bytes: int = 64 << 20,
               extra: list[pa.Field] | None = None) -> Iterator[pa.RecordBatch]:
    """Output rows as Arrow record batches of `OUTPUT_SCHEMA` and the ``extra`` typed columns
    (null but in `TypedRows`, which become batches of their own); bounded in rows and bytes."""
    extra = extra or []
    batch: list[Row] = []
    size = 0
    for row in rows:
        if isinstance(row, TypedRows):
            if batch:
                yield _batch(batch, extra)
                batch, size = [], 0
            yield _typed_batch(row, extra)
            continue
        batch.append(row)
        size += len(row[3])
        if len(batch) >= max_rows or size >= max_bytes:
            yield _batch(batch, extra)
            batch, size = [], 0
    if batch:
        yield _batch(batch, extra)


_NAMES = list(OUTPUT_COLUMNS)


def _batch(rows: list[Row], extra: list[pa.Field]) -> pa.RecordBatch:
    part, input_id, channel, data = zip(*rows, strict=True)
    n = len(rows)
    return pa.RecordBatch.from_arrays(
        [pa.array(part, pa.int32()), pa.array(input_id, pa.int32()), pa.array(channel, pa.int32()),
         pa.array(data, pa.binary()), *(pa.nulls(n, f.type) for f in extra)],
        names=_NAMES + [f.name for f in extra])


def _typed_batch(rows: TypedRows, extra: list[pa.Field]) -> pa.RecordBatch:
    n = len(rows.data)
    zeros = pa.array([0] * n, pa.int32())
    columns = rows.columns
    return pa.RecordBatch.from_arrays(
        [zeros, zeros, pa.array([rows.channel] * n, pa.int32()), pa.array(rows.data, pa.binary()),
         *(pa.array(columns[f.name], f.type) if f.name in columns else pa.nulls(n, f.type) for f in extra)],
        names=_NAMES + [f.name for f in extra])


def partition_of(batches: Iterator[pa.RecordBatch], partitions: int) -> tuple[int, Iterator[pa.RecordBatch]]:
    """The Spark partition a task's input comes from, and the input without it.

    The driver appends ``spark_partition_id()`` as the last column (`PARTITION_COLUMN`) of every
    stage's input, evaluated below any union: a ``mapInArrow`` inside a union sees the union's
    partition number in its ``TaskContext``, not its input's. A partition without rows (only
    stages fed by a shuffle or a DataFrame can have one; placeholder inputs always have a row)
    falls back to the task's partition number modulo ``partitions``."""
    seen: list[pa.RecordBatch] = []
    partition = None
    for batch in batches:
        seen.append(batch.drop_columns([PARTITION_COLUMN]))
        if batch.num_rows:
            partition = batch.column(batch.num_columns - 1)[0].as_py()
            break
    if partition is None:
        from pyspark import TaskContext  # in the worker, inside a task

        context = TaskContext.get()
        partition = context.partitionId() % partitions if context is not None else 0
    rest = (batch.drop_columns([PARTITION_COLUMN]) for batch in batches)
    return partition, itertools.chain(seen, rest)


class StageFunction:
    """The ``mapInArrow`` function of a stage: the plan travels pickled; the task's Spark
    partition says which copy of the stage it runs."""

    def __init__(self, plan_bytes: bytes):
        self.plan_bytes = plan_bytes

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        plan: StagePlan = pickle.loads(self.plan_bytes)
        partition, batches = partition_of(batches, plan.partitions)
        return to_batches(run_stage(plan, partition, batches), extra=plan.extra)


def flushed(outlet: Outlet, lists: Iterator[list[Any]]) -> Iterator[Row]:
    """The rows of ``outlet`` fed ``lists`` of items, sent on whenever it holds ``CHUNK * 16`` items."""
    for items in lists:
        outlet.add(items)
        if sum(len(xs) for xs in outlet.by_target.values()) >= CHUNK * 16:
            yield from outlet.rows()
    yield from outlet.rows()


class SourceFunction:
    """The ``mapInArrow`` function that reads a DataFrame/parquet source straight into rows of
    one cut edge (``channel``), tagged for a shuffle by ``tagger`` (or not, for a Spark sink)."""

    def __init__(self, reader: Any, channel: int, tagger: Tagger | None, partitions: int):
        self.reader = reader
        self.channel = channel
        self.tagger = tagger
        self.partitions = partitions

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        partition, batches = partition_of(batches, self.partitions)
        return to_batches(flushed(Outlet(self.channel, self.tagger), self.reader.read_partition(partition, batches)))


class AccumulatorRows:
    """The ``mapInArrow`` function after Spark's aggregation of a lowered cut edge: its rows
    (`TypedAggregation.aggregate`) become ``(key, accumulator)`` pairs again, sent on as the
    rows of a cut edge (`Outlet`, tagged by ``tagger`` for the combining stage's shuffle)."""

    def __init__(self, typed: TypedAggregation, tagger: Tagger):
        self.typed = typed
        self.tagger = tagger

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return to_batches(flushed(Outlet(self.typed.channel, self.tagger), map(self.typed.decode, batches)))


def items_of(rows: Iterator[Any]) -> Iterator[Any]:
    """Items of rows holding a ``data`` column of pickled lists (an RDD's ``flatMap``)."""
    for row in rows:
        yield from pickle.loads(row[0])
