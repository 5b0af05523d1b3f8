"""How `jetbench.spark.SparkRunner` cuts a job into Spark stages: pure graph work, no Spark.

1. **Cuts.** Partitioned, all-to-one and broadcast edges are *cut*: they cross Spark partitions.
   (A partitioned edge into a stage-1 accumulator stays local, like Jet's local edges: its
   output is re-partitioned by key before combining anyway; see `is_stage1_accumulator`.)
   Every vertex gets a level, the most cuts on a path from a source; an edge between levels is
   cut too, so stages never form a cycle. **Stages** are the groups of vertices joined by uncut
   edges. Edges out of a DataFrame or parquet source and into a Spark sink are always cut:
   those vertices are read or written by Spark itself, not run in a stage.
2. **Input modes.** A stage without cut inputs runs over placeholder partitions (``none``); a
   stage with a single unicast input (or a local edge into a stage-1 accumulator) is fed
   without a shuffle, from a DataFrame/parquet source's records (``arrow``) or from its
   producer stage's partitions (``items``); other stages are fed through a shuffle, with one
   input (``keyed``) or several (``multi``).
3. **Partitions** need two numbers only Spark knows (its default parallelism and how many
   partitions a DataFrame has): `cut` leaves them out and `assign_partitions` fills them in
   from plain numbers, so everything here runs (and is tested) without a Spark session.

`cut` also refuses, before anything runs, what Spark cannot run: unbounded sources, Spark
sinks with outbound edges, and suppliers or key functions that cannot be pickled for the
workers (checked with ``pyspark.cloudpickle``, a pure-Python module: no JVM is started).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.dag import DAG, Edge, Routing, Vertex
from ..core.errors import DagError, JetbenchError, JobError
from ..core.processor import Processor
from ..processors.aggregation import AccumulateByKeyP, CombineByKeyP
from ..processors.generator_source import GeneratorP
from ..processors.supplier import made_by
from ..processors.window_aggregate import WindowAggregate
from ..runner_errors import RunnerError
from .dataframe_sinks import SparkSink
from .dataframe_sources import DataFrameSource, ParquetSource
from .join_lowering import JOIN_KINDS, JoinSide, TypedJoin, lower_join, residual_key
from .join_lowering import why_python as why_join_python
from .lowering import KEY_TYPES, TypedAggregation, lower
from .stage_task import InputSpec, OutputSpec, StagePlan, Tagger
from .window_lowering import TypedWindow, WindowCombine, window_key

__all__ = [
    "ARROW_SOURCES",
    "CUT_ROUTINGS",
    "DIRECT_ROUTINGS",
    "WINDOW_MIN_ITEMS",
    "SparkPlan",
    "StageInfo",
    "assign_partitions",
    "cut",
    "is_stage1_accumulator",
    "is_unbounded",
    "job_to_dag",
    "known_items",
    "lower_aggregations",
    "source_partitions",
]

#: Routings whose edges cross Spark partitions (a shuffle, or all to partition 0).
CUT_ROUTINGS = (Routing.PARTITIONED, Routing.ALL_TO_ONE, Routing.BROADCAST)
#: Routings a stage can be fed through without a shuffle.
DIRECT_ROUTINGS = (Routing.UNICAST, Routing.ISOLATED)
#: Suppliers whose data Spark (or pyarrow inside the tasks) reads: they feed stages, not run in one.
ARROW_SOURCES = (DataFrameSource, ParquetSource)


def is_stage1_accumulator(supplier: Any) -> bool:
    """True for the supplier of a stage-1 accumulator (``accumulate_by_key`` or the global
    ``accumulate``): it folds items into per-key accumulators and emits them, unfinished, for a
    combining stage. Read from the supplier's public attributes: its ``processor`` is the
    accumulating processor and its ``params`` do not ask it to ``finish``."""
    processor = getattr(supplier, "processor", None)
    if processor is not AccumulateByKeyP:
        return False
    params = getattr(supplier, "params", None)
    return isinstance(params, Mapping) and params.get("finish") is False


def is_unbounded(supplier: Any) -> bool:
    """True for a DAG source that never completes (a generator without count, a stream)."""
    if made_by(supplier, GeneratorP):
        return supplier.count is None
    return getattr(supplier, "streaming", False) is True or getattr(supplier, "unbounded", False) is True


def job_to_dag(job: Any, fuse: bool | None = None) -> DAG:
    """The DAG of a DAG, a Pipeline (refusing unbounded sources by name) or anything with ``to_dag()``."""
    from ..pipeline.stages import Pipeline

    if isinstance(job, Pipeline):
        for node in job.nodes:
            if node.kind == "source" and node.streaming:
                raise RunnerError(
                    f"vertex {node.name!r}: SparkRunner runs batch jobs; this source is unbounded "
                    "(e.g. sources.generator without count). Give it a count, or run the job locally"
                )
        return job.to_dag(fuse=fuse)
    if isinstance(job, DAG):
        return job
    if hasattr(job, "to_dag"):
        dag: DAG = job.to_dag()
        return dag
    raise JetbenchError(f"SparkRunner.run() takes a DAG or a Pipeline, got {job!r}")


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
    """A job cut into stages (see the module doc); `explain` lists them."""

    dag: DAG
    stages: list[StageInfo]
    stage_of: dict[str, StageInfo]
    arrow_sources: dict[str, Any]  # vertex -> DataFrameSource / ParquetSource
    spark_sinks: dict[str, SparkSink]
    collecting: set[str]
    cut: set[int]  # ids of cut edges
    #: cut edges that Spark aggregates, by channel (`lower_aggregations`)
    typed: dict[int, TypedAggregation] = field(default_factory=dict)
    #: combining and window vertices whose aggregation stays in Python, and why
    python_aggregations: dict[str, str] = field(default_factory=dict)
    #: vertices whose tasks run another supplier (a lowered window's `WindowCombine`, a lowered join's)
    replaced: dict[str, Any] = field(default_factory=dict)
    #: join vertices Spark joins for (`jetbench.spark.join_lowering`), and those it does not, and why
    joins: dict[str, TypedJoin] = field(default_factory=dict)
    python_joins: dict[str, str] = field(default_factory=dict)

    def explain(self) -> str:
        """Each stage: where it runs (a stage runs in Python: a copy of its sub-DAG on a local
        executor in each Spark task, over Arrow batches with ``mapInArrow``), its partitions,
        input mode and vertices; each cut edge: how Spark moves its rows, and which aggregations
        Spark runs (``groupBy().agg()``) and which stay in Python, and why."""
        lines = []
        for st in self.stages:
            lines.append(f"stage {st.index} [Python, mapInArrow]: {st.partitions} partition(s), "
                         f"input {st.mode}: {', '.join(st.names)}")
            for e in st.inputs:
                lines.append(f"  <- {e.source.name} ({e.routing.value}): {self.movement(e)}")
            for e in st.outputs:
                lines.append(f"  -> {e.target.name} ({e.routing.value})")
        for channel, typed in self.typed.items():
            e = self.dag.edges[channel]
            if isinstance(typed, JoinSide):
                continue  # the joins' lines follow
            if isinstance(typed, TypedWindow):
                lines.append(f"Spark window aggregation {e.target.name}: {typed.describe()} in the JVM over typed "
                             f"columns ({KEY_TYPES}; accumulators in Spark types) of frames folded in Python before "
                             f"the shuffle; frames of other types go pickled to {e.target.name}, which combines "
                             f"and finishes the windows in Python")
                continue
            lines.append(f"Spark aggregation {e.source.name} -> {e.target.name}: {typed.describe()} in the JVM over "
                         f"typed columns ({KEY_TYPES}; accumulators in Spark types); pairs of other types "
                         f"go pickled to {e.target.name}, which combines and finishes in Python")
        for name, why in self.python_aggregations.items():
            lines.append(f"Python aggregation {name}: {why}")
        for name, join in self.joins.items():
            lines.append(f"Spark join {name}: {join.describe()} in the JVM over typed key columns ({KEY_TYPES}; "
                         f"bools and integral floats as ints) with the items pickled beside them; rows whose key "
                         f"Spark cannot hold, and every row of an equal hash, go pickled to {name}, which joins "
                         f"them in Python")
        for name, why in self.python_joins.items():
            lines.append(f"Python join {name}: {why}")
        for name in self.spark_sinks:
            lines.append(f"spark sink: {name} (a DataFrame built in Spark from its input rows)")
        if self.stages:
            spark_runs = [what for what, there in (("aggregations", any(not isinstance(t, JoinSide) for t in
                                                                         self.typed.values())),
                                                    ("joins", self.joins)) if there]
            lines.append("Python stages: user functions and the processors of the DAG run in the Python workers; "
                         "Spark runs the shuffles" + (f" and the {' and '.join(spark_runs)} above" if spark_runs else ""))
        return "\n".join(lines)

    def movement(self, e: Edge) -> str:
        """How Spark moves the rows of cut edge ``e`` into its consumer stage."""
        consumer = self.stage_of[e.target.name]
        typed = self.typed.get(self.channel(e))
        if isinstance(typed, JoinSide):
            return (f"typed rows, Spark {typed.describe()} (its own shuffle), then its rows and those on the "
                    f"Python path to repartition({consumer.partitions}, part)")
        if typed is not None:
            how = "by key" if typed.keyed else "all to partition 0"
            return (f"typed rows, Spark {typed.describe()} (its own shuffle), then its accumulators "
                    f"to repartition({consumer.partitions}, part) {how}")
        source = "read by Spark" if e.source.name in self.arrow_sources else "rows of pickled items"
        if consumer.mode in ("items", "arrow"):
            return f"{source}, no shuffle (the producer's partitions)"
        if e.routing is Routing.BROADCAST:
            how = f"a copy for each of {consumer.partitions} partitions"
        elif e.routing is Routing.PARTITIONED:
            how = "target partition from the edge's key, hashed in Python"
        elif e.routing is Routing.ALL_TO_ONE or consumer.partitions == 1:
            how = "all to partition 0"
        else:
            how = "round-robin"
        return f"{source}, Spark shuffle repartition({consumer.partitions}, part): {how}"

    def tagger(self, e: Edge) -> Tagger | None:
        """How the producer marks items of cut edge ``e``: None for a consumer fed without a shuffle."""
        consumer = self.stage_of.get(e.target.name)
        if consumer is None or consumer.mode in ("items", "arrow"):
            return None
        return Tagger(consumer.inputs.index(e), e.routing, self.key_fn(e), consumer.partitions)

    def key_fn(self, e: Edge) -> Any:
        """What the items of cut edge ``e`` reaching its consumer are partitioned by: the edge's key
        function, for a lowered window the window and key of its accumulators (`window_key`), for a
        lowered join the hash of the key of the rows on the Python path (`residual_key`)."""
        typed = self.typed.get(self.channel(e))
        if isinstance(typed, JoinSide):
            return residual_key
        return window_key if isinstance(typed, TypedWindow) else e.key_fn

    def channel(self, e: Edge) -> int:
        """The channel of cut edge ``e`` in its producer's output rows: the edge's index in the DAG."""
        return self.dag.edges.index(e)

    def task_plan(self, st: StageInfo, execution: dict[str, Any]) -> StagePlan:
        """What the tasks of stage ``st`` need, with ``execution`` for their `ExecutionService`."""
        members = {v.name for v in st.vertices}
        edges = [
            (e.source.name, e.source_ordinal, e.target.name, e.destination_ordinal, e.routing.value,
             e.key_fn, e.edge_priority, e.edge_queue_size)
            for e in self.dag.edges
            if id(e) not in self.cut and e.source.name in members
        ]
        inputs = [
            InputSpec(i, e.target.name, e.destination_ordinal, e.routing.value, self.key_fn(e), e.edge_priority,
                      e.edge_queue_size)
            for i, e in enumerate(st.inputs)
        ]
        outputs = [
            OutputSpec(self.channel(e), e.source.name, e.source_ordinal, e.edge_queue_size, self.tagger(e),
                       self.typed.get(self.channel(e)))
            for e in st.outputs
        ]
        extra = [f for out in outputs if out.typed is not None for f in out.typed.fields()]
        reader = None
        if st.mode == "arrow":
            reader = self.arrow_sources[st.inputs[0].source.name].partition_reader(st.partitions)
        vertices = [(v.name, self.replaced.get(v.name, v.supplier), v.local_parallelism) for v in st.vertices]
        return StagePlan(st.index, st.partitions, st.mode, vertices,
                         edges, inputs, outputs, st.collecting, execution, reader, extra)


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


def _pickle_check(obj: Any, what: str) -> None:
    from pyspark import cloudpickle  # pure Python: no JVM

    try:
        cloudpickle.dumps(obj)
    except Exception as exc:
        raise RunnerError(
            f"{what} cannot be shipped to Spark workers: {type(exc).__name__}: {exc}. "
            "Functions must be picklable with pyspark.cloudpickle (lambdas and closures are; "
            "locks, open files, sockets, generators and Spark objects are not)"
        ) from exc


def cut(dag: DAG, threads: int, spark_joins: bool | None = None) -> SparkPlan:
    """Cut ``dag`` into stages with their input modes (partitions are left at 1: see
    `assign_partitions`); ``threads`` is the tasks' cooperative thread count, the default
    vertex parallelism. Raises `RunnerError` for a job Spark cannot run.

    ``spark_joins``: True lowers the hash joins and batch co-groups that can be
    (`jetbench.spark.join_lowering`; their inputs are cut), False notes why each stays in Python,
    None leaves them alone."""
    dag.validate(threads)
    order = dag.topological_order()
    position = {v.name: i for i, v in enumerate(order)}
    df_sources = {v.name: v.supplier for v in order if isinstance(v.supplier, ARROW_SOURCES)}
    spark_sinks = {v.name: v.supplier for v in order if isinstance(v.supplier, SparkSink)}
    collecting = set(spark_sinks)
    for v in order:
        if v.name in spark_sinks and dag.outbound_edges(v):
            raise RunnerError(f"vertex {v.name!r}: a Spark sink cannot have outbound edges")
        if v.name in df_sources or v.name in spark_sinks:
            continue
        if is_unbounded(v.supplier):
            raise RunnerError(
                f"vertex {v.name!r}: SparkRunner runs batch jobs; this source is unbounded "
                "(e.g. a generator without count). Give it a count, or run the job locally"
            )
        if _probe(v):
            collecting.add(v.name)
        _pickle_check(v.supplier, f"vertex {v.name!r}: its processor supplier")
    for e in dag.edges:
        if e.key_fn is not None:
            _pickle_check(e.key_fn, f"edge {e.source.name!r} -> {e.target.name!r}: its key function")

    joins: dict[str, TypedJoin] = {}
    python_joins: dict[str, str] = {}
    if spark_joins is not None:
        for v in order:
            if isinstance(v.supplier, JOIN_KINDS):
                why = why_join_python(dag, v, spark_joins, df_sources)
                if why is None:
                    joins[v.name] = lower_join(dag, v, dag.edges.index)
                else:
                    python_joins[v.name] = why
    forced = {id(e) for name in joins for e in dag.inbound_edges(dag.vertex(name))}

    def local(e: Edge) -> bool:
        """A partitioned/all-to-one edge into a stage-1 accumulator: kept inside the stage."""
        dst = e.target
        if not is_stage1_accumulator(dst.supplier):
            return False
        outs = dag.outbound_edges(dst)
        return bool(outs) and all(o.routing in (Routing.PARTITIONED, Routing.ALL_TO_ONE) for o in outs)

    def is_cut(e: Edge) -> bool:
        if e.source.name in df_sources or e.target.name in spark_sinks or id(e) in forced:
            return True
        return e.routing in CUT_ROUTINGS and not local(e)

    level: dict[str, int] = {}
    for v in order:
        if v.name in df_sources:
            level[v.name] = -1
            continue
        ins = dag.inbound_edges(v)
        level[v.name] = max((level[e.source.name] + (1 if is_cut(e) else 0) for e in ins), default=0)
    cut_edges = {id(e) for e in dag.edges if is_cut(e) or level[e.source.name] != level[e.target.name]}

    # stages: components of regular vertices joined by uncut edges
    parent = {v.name: v.name for v in order if v.name not in df_sources and v.name not in spark_sinks}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for e in dag.edges:
        if id(e) not in cut_edges:
            a, b = find(e.source.name), find(e.target.name)
            if a != b:
                parent[max(a, b, key=position.__getitem__)] = min(a, b, key=position.__getitem__)
    groups: dict[str, list[Vertex]] = {}
    for v in dag.vertices:
        if v.name in parent:
            groups.setdefault(find(v.name), []).append(v)
    ordered = sorted(groups.values(), key=lambda vs: (level[vs[0].name], min(position[v.name] for v in vs)))
    stages = [StageInfo(i, level[vs[0].name], vs) for i, vs in enumerate(ordered)]
    stage_of = {v.name: st for st in stages for v in st.vertices}
    for e in dag.edges:
        if id(e) in cut_edges:
            if e.target.name in stage_of:
                stage_of[e.target.name].inputs.append(e)
            if e.source.name in stage_of:
                stage_of[e.source.name].outputs.append(e)

    for st in stages:
        st.collecting = [v.name for v in st.vertices if v.name in collecting]
        ins = st.inputs
        if not ins:
            st.mode = "none"
        elif len(ins) == 1 and (ins[0].routing in DIRECT_ROUTINGS or local(ins[0])):
            st.mode = "arrow" if ins[0].source.name in df_sources else "items"
        else:
            st.mode = "keyed" if len(ins) == 1 else "multi"
    plan = SparkPlan(dag, stages, stage_of, df_sources, spark_sinks, collecting, cut_edges,
                     joins=joins, python_joins=python_joins)
    for name, join in joins.items():
        for side in join.sides:
            plan.typed[side.channel] = side
        plan.replaced[name] = join.replacement()
    return plan


#: A job whose sources say they hold fewer items than this keeps its batch windows in Python
#: (`lower_aggregations`): a lowered window adds a Spark aggregation, its shuffle and a Python
#: stage, about a CPU-second of fixed cost here, which pickling the events to the Python window
#: costs less than at Nexmark's SMOKE size (100,000 events) and about as much at 1M
#: (benchmarks/README.md, the Nexmark/Spark and spark-windows sections).
WINDOW_MIN_ITEMS = 1_000_000


def known_items(plan: SparkPlan) -> int | None:
    """How many items the job's sources hold, when every source vertex is a Spark source that
    says so (``item_count``, as `jetbench.spark.items_frame` sources do); None otherwise."""
    total = 0
    for v in plan.dag.vertices:
        if plan.dag.inbound_edges(v):
            continue
        count = getattr(plan.arrow_sources.get(v.name), "item_count", None)
        if not isinstance(count, int):
            return None
        total += count
    return total


def lower_aggregations(plan: SparkPlan, enabled: bool = True, window_min_items: int = 0) -> SparkPlan:
    """Mark the cut edges of ``plan`` whose aggregation Spark runs (`jetbench.spark.lowering`),
    in place; returns ``plan``. Such an edge goes from a stage-1 accumulator
    (`is_stage1_accumulator`) to a combining vertex, partitioned by key (keyed) or all-to-one
    (global: ``stage.aggregate(op)``), into a stage fed by a shuffle, and its operation has a typed
    form (`lowering.lower`). Every other combining vertex is noted in ``plan.python_aggregations``
    with the reason. Batch windows are lowered too, unless the job's sources are known to hold
    fewer than ``window_min_items`` items (`known_items`; the runner passes `WINDOW_MIN_ITEMS`)."""
    for v in plan.dag.vertices:
        if not made_by(v.supplier, CombineByKeyP):
            continue
        why = _why_python(plan, v, enabled)
        if why is not None:
            plan.python_aggregations[v.name] = why
            continue
        keyed = not _params(v).get("values_only")
        for e in plan.dag.inbound_edges(v):
            form = lower(_params(e.source)["op"])
            assert not isinstance(form, str)  # _why_python checked it
            plan.typed[plan.channel(e)] = TypedAggregation(plan.channel(e), form, keyed)
    items = known_items(plan) if window_min_items else None
    small = items is not None and items < window_min_items
    for v in plan.dag.vertices:
        if isinstance(v.supplier, WindowAggregate):
            _lower_window(plan, v, enabled, f"its job reads {items:,} items, fewer than {window_min_items:,} "
                                            "(spark_window_min_items): cheaper in Python at that size" if small else None)
    return plan


def _lower_window(plan: SparkPlan, v: Vertex, enabled: bool, small: str | None = None) -> None:
    """Lower window vertex ``v`` (`jetbench.spark.window_lowering`), or note why it stays in Python
    (``small``: the reason a window Spark could make stays in Python, the job being small)."""
    spec = v.supplier
    assert isinstance(spec, WindowAggregate)
    window = spec.window_def
    why = _why_window_python(plan, v, spec, enabled) or small
    if why is not None:
        plan.python_aggregations[v.name] = why
        return
    form = lower(spec.op)
    assert not isinstance(form, str)  # _why_window_python checked it
    (e,) = plan.dag.inbound_edges(v)
    plan.typed[plan.channel(e)] = TypedWindow(plan.channel(e), form, spec.key_fn is not None, spec.op, spec.key_fn,
                                              window.size, window.slide, v.name)
    plan.replaced[v.name] = WindowCombine(spec.op)


def _why_window_python(plan: SparkPlan, v: Vertex, spec: WindowAggregate, enabled: bool) -> str | None:
    """Why window vertex ``v`` keeps the Python path, or None if Spark can window for it."""
    if not enabled:
        return "Spark's aggregation is off (spark_aggregation=False)"
    if spec.window_def.kind != "sliding":
        return f"{spec.window_def!r} windows have no Spark form here"
    form = lower(spec.op)
    if isinstance(form, str):
        return form
    if spec.op.combine is None:
        return "its operation has no combine"
    edges = plan.dag.inbound_edges(v)
    consumer = plan.stage_of.get(v.name)
    if len(edges) != 1 or consumer is None or consumer.mode not in ("keyed", "multi"):
        return "its input is not one shuffled edge"
    (e,) = edges
    routing = Routing.PARTITIONED if spec.key_fn is not None else Routing.ALL_TO_ONE
    if (id(e) not in plan.cut or e.routing is not routing or e.source.name not in plan.stage_of
            or e.destination_ordinal != 0):
        return f"its input from {e.source.name!r} is not a {routing.value} edge from a Python stage"
    return None


def _why_python(plan: SparkPlan, v: Vertex, enabled: bool) -> str | None:
    """Why the combining vertex ``v`` keeps the Python path, or None if Spark can combine for it."""
    if not enabled:
        return "Spark's aggregation is off (spark_aggregation=False)"
    keyed = not _params(v).get("values_only")
    consumer = plan.stage_of.get(v.name)
    if consumer is None or consumer.mode not in ("keyed", "multi"):
        return "its input is not shuffled"
    form = lower(_params(v)["op"])
    if isinstance(form, str):
        return form
    routing = Routing.PARTITIONED if keyed else Routing.ALL_TO_ONE
    kind = "a keyed stage-1 accumulator's partitioned edge" if keyed else "a global stage-1 accumulator's edge"
    for e in plan.dag.inbound_edges(v):
        src = _params(e.source)
        global_source = getattr(src.get("key_fn"), "__name__", "") == "_no_key"
        if (id(e) not in plan.cut or e.routing is not routing or not is_stage1_accumulator(e.source.supplier)
                or global_source is keyed):
            return f"its input from {e.source.name!r} is not {kind}"
        theirs = lower(src["op"])
        if isinstance(theirs, str) or theirs.describe("") != form.describe(""):
            return f"{e.source.name!r} accumulates with another operation"
    return None


def _params(v: Vertex) -> Mapping[str, Any]:
    """The arguments a built-in vertex's supplier was made with (`ProcessorSupplier.params`)."""
    params: Mapping[str, Any] = getattr(v.supplier, "params", {})
    return params


def source_partitions(plan: SparkPlan, default_partitions: int) -> dict[str, int]:
    """The Spark partitions of each DataFrame/parquet source vertex of ``plan`` (a DataFrame's
    own; a parquet source's ``min(row groups, default_partitions)``)."""
    return {name: source.spark_partitions(default_partitions) for name, source in plan.arrow_sources.items()}


def assign_partitions(plan: SparkPlan, default_partitions: int, source_partitions: Mapping[str, int]) -> SparkPlan:
    """Give every stage of ``plan`` its Spark partition count, in place; returns ``plan``.

    ``default_partitions``: stages without input or after a shuffle (a stage fed all-to-one has
    1). ``source_partitions``: the partitions of each DataFrame/parquet source vertex's input,
    which an ``arrow`` stage keeps; an ``items`` stage keeps its producer stage's.
    """
    for st in plan.stages:
        ins = st.inputs
        if st.mode == "none":
            st.partitions = default_partitions
        elif st.mode == "arrow":
            st.partitions = source_partitions[ins[0].source.name]
        elif st.mode == "items":
            st.partitions = plan.stage_of[ins[0].source.name].partitions
        else:
            st.partitions = 1 if any(e.routing is Routing.ALL_TO_ONE for e in ins) else default_partitions
    return plan
