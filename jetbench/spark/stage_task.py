"""What runs inside the Spark Python workers for `jetbench.spark.SparkRunner`.

Everything here travels pickled to the workers (with ``pyspark.cloudpickle``) and imports
neither pyspark nor the driver side: a `StagePlan` says what one stage's task runs, `run_stage`
runs one copy of the stage's sub-DAG over one Spark partition on a local `ExecutionService`, and
the small callables below (`StageFunction`, `Select`, `ReadArrow`, `target_partition`) are the
functions the driver hands to ``mapPartitions``/``partitionBy``. How a job is cut into stages is
`jetbench.spark.stage_cut`; the driver that wires the stages into RDDs is
`jetbench.spark.runner`.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from itertools import islice
from typing import TYPE_CHECKING, Any, ClassVar
from zlib import crc32

from ..core.dag import DAG, Edge, Routing, Vertex
from ..core.execution import ExecutionService
from ..core.processor import Processor, ProcessorContext
from ..processors.emitter import EmittingProcessor
from ..processors.snapshotting import restored_position, save_position
from ._hash import stable_hash

if TYPE_CHECKING:
    from ..core.inbox import Inbox

__all__ = [
    "FEED_CHUNK",
    "RESULT",
    "InputSpec",
    "OutputSpec",
    "ReadArrow",
    "Select",
    "StageFunction",
    "StagePlan",
    "Tagger",
    "no_records",
    "run_stage",
    "target_partition",
]

#: Channel of the records that carry collecting sinks' result parts back to the driver.
RESULT = -1
#: Records a streaming feeder reads from Spark per call.
FEED_CHUNK = 4096


class Tagger:
    """Tags items crossing a cut with their target partition: ``(target, (input_id, item))``."""

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

    def tag(self, items: list[Any], start: int = 0) -> list[tuple[int, tuple[int, Any]]]:
        iid, n, routing = self.input_id, self.partitions, self.routing
        if n == 1 or routing is Routing.ALL_TO_ONE:
            return [(0, (iid, x)) for x in items]
        if routing is Routing.PARTITIONED:
            key_fn = self.key_fn
            assert key_fn is not None  # a partitioned edge has a key function
            out: list[tuple[int, tuple[int, Any]]] = []
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
    """Sink of a cut edge inside a task: keeps the items (tagged for the shuffle, if any).

    It appends to a list the task owns, outside any snapshot: a job asking for a processing
    guarantee refuses it (Spark retries the whole task instead)."""

    snapshot_support: ClassVar[str] = "unsupported"

    def __init__(self, out: list[Any], tagger: Tagger | None):
        self.out = out
        self.tagger = tagger
        self.count = 0

    def process(self, ordinal: int, inbox: Inbox) -> None:
        items = inbox.take()
        if self.tagger is None:
            self.out += items
        else:
            self.out += self.tagger.tag(items, self.count)
            self.count += len(items)

    def try_process_watermark(self, watermark: Any) -> bool:
        return True  # event time does not cross Spark shuffles (batch mode)


_END = object()


class StreamFeederP(EmittingProcessor):
    """The stage's single input, read from the Spark partition's iterator on its own thread
    (non-cooperative: reading blocks on Spark). ``mode``: ``items``, ``keyed`` (strip the
    shuffle tags) or ``arrow`` (records -> lists of items by the source's ``reader``).

    The partition's iterator is read once and cannot go back: a job asking for a processing
    guarantee refuses it (Spark retries the whole task instead)."""

    is_cooperative = False
    snapshot_support: ClassVar[str] = "unsupported"

    def __init__(self, records: Iterator[Any], mode: str, reader: Any):
        self.records = records
        self.mode = mode
        self.reader = reader
        self._lists: Iterator[list[Any]] = iter(())

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
        lists: dict[int, list[Any]] = {spec.input_id: [] for spec in plan.inputs}
        for _, (input_id, item) in records:
            lists[input_id].append(item)
        for spec in plan.inputs:
            feeders.append((spec, partial(ListFeederP, lists[spec.input_id])))
    else:
        (spec,) = plan.inputs
        feeders.append((spec, partial(StreamFeederP, records, plan.mode, plan.reader)))
    for spec, factory in feeders:
        feeder = dag.new_vertex(_unique(names, f"spark-input-{spec.input_id}"), _Fixed(factory), 1)
        edge = Edge.from_(feeder, 0).to(vertices[spec.vertex], spec.ordinal)
        dag.edge(_route(edge, spec.routing, spec.key_fn).priority(spec.priority).queue_size(spec.queue_size))

    stores: list[tuple[int, list[Any]]] = []
    for out in plan.outputs:
        store: list[Any] = []
        stores.append((out.channel, store))
        capture = dag.new_vertex(_unique(names, f"spark-output-{out.channel}"),
                                 _Fixed(partial(CaptureP, store, out.tagger)), 1)
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


def no_records(records: Iterator[Any]) -> Iterator[Any]:
    """Drain a stage that has no output and no collecting sink (run it for its side effects)."""
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


def target_partition(key: int) -> int:
    """The ``partitionBy`` function: a tagged record's key already is its target partition."""
    return key
