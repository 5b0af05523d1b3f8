"""SparkRunner: a jetbench DAG or Pipeline run as Spark stages (Jet's "the DAG on every member").

How a job becomes Spark work:

1. **Cuts.** Partitioned, all-to-one and broadcast edges are *cut*: they cross Spark partitions;
   **stages** are the groups of vertices joined by uncut edges. The cut is pure graph work,
   in `jetbench.spark.stage_cut`; this module, the driver, adds the two numbers only Spark
   knows (default parallelism, a DataFrame's partitions) and wires the stages into DataFrames.
2. **Tasks.** Each stage runs as ``mapInArrow`` over its input DataFrame: in every Spark
   partition a copy of the stage's sub-DAG runs to completion on a local `ExecutionService`
   (cooperative, one thread by default). Processor contexts carry global indices (partition
   ``p`` of ``P`` holds instances ``p * lp .. p * lp + lp - 1`` of ``P * lp``), so sources
   split their data over the whole cluster as they would over a Jet cluster; the partition
   number travels as a column (`with_partition`), because a task inside a union sees the
   union's. The stage's input comes in through a feeder vertex; what crosses a cut is captured
   by a capture vertex. That code runs in the Spark workers: `jetbench.spark.stage_task`.
3. **Arrow between stages, Spark's shuffles.** A stage's output is a DataFrame of Arrow
   record batches, rows ``(part, input, channel, data)`` with ``data`` a pickled list of items
   (`stage_task.Outlet`). A cut edge into a stage becomes ``repartition(n, "part")``: the
   producer computes the target partition from the edge's key function with `stable_hash` in
   Python and writes the value of ``part`` that Spark's own hash partitioning sends there
   (`jetbench.spark._hash.spark_partition_keys`), so the JVM's shuffle moves the bytes
   (all-to-one: partition 0 of a one-partition stage; broadcast: a copy per partition;
   unicast: round-robin). A stage with a single unicast input is fed without a shuffle: its
   producer's rows of that edge, a DataFrame source's own Arrow batches, or a parquet source's
   row groups (read with pyarrow in the task). Two-stage aggregation falls out of the DAG:
   stage 1 accumulates per partition before the shuffle, stage 2 combines after it.
   **Spark's own aggregation**: when the operation is a built-in one with a typed form
   (`jetbench.spark.lowering`: counting, summing, averaging, min_by/max_by, to_list, to_set,
   all_of of these), keyed or global, the accumulators cross as typed columns and Spark combines
   them (``groupBy(key).agg(...)``, its own shuffle); a batch tumbling or sliding window of such
   an operation folds frames in the producer's tasks and Spark makes the windows
   (``groupBy(window(ts, size, slide), key).agg(...)``, `jetbench.spark.window_lowering`); the
   pairs whose types Spark cannot hold exactly go pickled to the same combining vertex, so the
   result is the Python path's (``spark_aggregation=False`` turns it off; a job whose sources are
   known to hold fewer than ``spark_window_min_items`` items, 1M by default, keeps its windows in
   Python: measured cheaper there at Nexmark's SMOKE size). **Spark's own joins**
   (``spark_joins=True``; off by default: slower than the Python join here, see
   benchmarks/README.md): a ``hash_join`` or batch ``co_group`` becomes a Spark join / ``groupBy``
   over typed key columns with the items pickled beside them, and rows whose keys Spark cannot
   hold are joined in Python by the join vertex (`jetbench.spark.join_lowering`).
4. **Results.** Collecting sinks return their ``result_part()`` from every task as rows of
   their own; the driver collects them with ``toArrow()`` and merges them with the sink's
   ``merge_results`` exactly as the local executor does, in partition order.
   `jetbench.spark.dataframe_sinks` build their DataFrame inside Spark instead.

`SparkRunner.explain` says where each stage runs and why, how each cut edge moves, and Spark's
physical plan.

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

The keywords a `SparkRunner` takes (also through ``jetbench.run(job, runner="spark", **options)``)
are those of `SparkConfig`: ``session``, ``partitions`` and the `ExecutionService` settings
of the tasks; any other raises `jetbench.RunnerOptionError`, naming it and listing the accepted ones.
"""

from __future__ import annotations

import contextlib
import inspect
import pickle
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..core.dag import DAG, Edge
from ..core.errors import JetbenchError, JobTimeout
from ..core.execution import ExecutionService
from ..core.plan import merge_parts
from ..runner_errors import RunnerError, RunnerOptionError
from ._hash import spark_partition_keys
from .dataframe_sinks import rdd_to_dataframe
from .join_lowering import JoinSide
from .lowering import ddl
from .spark_job import SparkJob
from .stage_cut import (
    WINDOW_MIN_ITEMS,
    SparkPlan,
    assign_partitions,
    cut,
    job_to_dag,
    lower_aggregations,
    source_partitions,
)
from .stage_task import (
    EMPTY,
    OUTPUT_COLUMNS,
    OUTPUT_SCHEMA,
    PARTITION_COLUMN,
    RESULT,
    AccumulatorRows,
    SourceFunction,
    StageFunction,
    Tagger,
    items_of,
)

__all__ = ["DEFAULT_EXECUTION", "SparkConfig", "SparkRunner", "action_name"]

#: In-task execution defaults (one cooperative thread: a Spark task owns one core).
DEFAULT_EXECUTION: Mapping[str, Any] = MappingProxyType({"cooperative_threads": 1, "noncooperative_max_idle_us": 1000})


def _execution_keywords() -> tuple[str, ...]:
    """The settings of the `ExecutionService` that runs each task, read from its signature."""
    return tuple(name for name in inspect.signature(ExecutionService).parameters)


@dataclass(frozen=True)
class SparkConfig:
    """What a `SparkRunner` is configured with.

    ``session``: a SparkSession (None: `jetbench.spark.session()` when first needed).
    ``partitions``: Spark partitions of stages after a shuffle or without input (None: the
    session's default parallelism). ``execution``: settings of the `ExecutionService` inside
    each task, over `DEFAULT_EXECUTION` (``cooperative_threads=1``, ...); a bad setting fails
    here, not in a task. ``spark_aggregation``: let Spark combine the built-in aggregations and
    make the batch windows it can (`jetbench.spark.lowering`, `jetbench.spark.window_lowering`);
    False keeps every aggregation and window in Python. ``spark_joins``: let Spark run the hash
    joins and batch co-groups it can (`jetbench.spark.join_lowering`); off by default (measured
    slower than the Python join on this machine: benchmarks/README.md, ``jetbench bench spark-joins``).
    ``spark_window_min_items``: a job whose sources are known to hold fewer items (events cached
    with `jetbench.spark.items_frame`) keeps its batch windows in Python, measured cheaper there
    at Nexmark's SMOKE size (`stage_cut.WINDOW_MIN_ITEMS`); 0 lowers them whatever the size.
    """

    session: Any = None
    partitions: int | None = None
    execution: Mapping[str, Any] = field(default_factory=dict)
    spark_aggregation: bool = True
    spark_joins: bool = False
    spark_window_min_items: int = WINDOW_MIN_ITEMS

    def __post_init__(self) -> None:
        partitions = self.partitions
        if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1):
            raise JetbenchError(f"SparkRunner: partitions must be an int >= 1, got {partitions!r}")
        accepted = _execution_keywords()
        for name in self.execution:
            if name not in accepted:
                raise RunnerOptionError("spark", f"execution[{name!r}]", accepted)
        execution = {**DEFAULT_EXECUTION, **self.execution}
        ExecutionService(**execution)  # fail here on a bad setting
        object.__setattr__(self, "execution", MappingProxyType(execution))
        if not isinstance(self.spark_aggregation, bool):
            raise JetbenchError(f"SparkRunner: spark_aggregation must be True or False, got {self.spark_aggregation!r}")
        if not isinstance(self.spark_joins, bool):
            raise JetbenchError(f"SparkRunner: spark_joins must be True or False, got {self.spark_joins!r}")
        n = self.spark_window_min_items
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise JetbenchError(f"SparkRunner: spark_window_min_items must be an int >= 0, got {n!r}")

    @staticmethod
    def keywords() -> tuple[str, ...]:
        """Every keyword `from_options` (and `SparkRunner`) takes."""
        return ("session", "partitions", *_execution_keywords(), "spark_aggregation", "spark_joins",
                "spark_window_min_items")

    @classmethod
    def from_options(cls, **options: Any) -> SparkConfig:
        """A config from flat keywords (``session=``, ``partitions=``, the execution settings);
        an unknown keyword raises `jetbench.RunnerOptionError`."""
        accepted = cls.keywords()
        for name in options:
            if name not in accepted:
                raise RunnerOptionError("spark", name, accepted)
        session = options.pop("session", None)
        partitions = options.pop("partitions", None)
        spark_aggregation = options.pop("spark_aggregation", True)
        spark_joins = options.pop("spark_joins", False)
        window_min_items = options.pop("spark_window_min_items", WINDOW_MIN_ITEMS)
        return cls(session, partitions, options, spark_aggregation, spark_joins, window_min_items)


class SparkRunner:
    """Runs DAGs and Pipelines on Spark (see the module doc for how).

    ``SparkRunner(session=None, *, partitions=None, spark_aggregation=True, spark_joins=False,
    spark_window_min_items=WINDOW_MIN_ITEMS, **execution)`` takes the keywords of
    `SparkConfig` (an unknown one raises `jetbench.RunnerOptionError`); `from_config` takes a config,
    `from_options` the keywords alone.
    """

    def __init__(self, session: Any = None, *, partitions: int | None = None, spark_aggregation: bool = True,
                 spark_joins: bool = False, spark_window_min_items: int = WINDOW_MIN_ITEMS, **execution: Any):
        self._init(SparkConfig.from_options(session=session, partitions=partitions,
                                            spark_aggregation=spark_aggregation, spark_joins=spark_joins,
                                            spark_window_min_items=spark_window_min_items, **execution))

    def _init(self, config: SparkConfig) -> None:
        self.config = config
        self._session = config.session

    @classmethod
    def from_config(cls, config: SparkConfig) -> SparkRunner:
        runner = cls.__new__(cls)
        runner._init(config)
        return runner

    @classmethod
    def from_options(cls, **options: Any) -> SparkRunner:
        """A runner from the keywords of `SparkConfig.from_options` (what ``jetbench.run(job,
        runner="spark", **options)`` passes); an unknown keyword raises `jetbench.RunnerOptionError`."""
        return cls.from_config(SparkConfig.from_options(**options))

    @property
    def partitions(self) -> int | None:
        return self.config.partitions

    @property
    def execution(self) -> dict[str, Any]:
        """The tasks' `ExecutionService` settings (a copy)."""
        return dict(self.config.execution)

    @property
    def session(self) -> Any:
        if self._session is None:
            from ._session import session

            self._session = session()
        return self._session

    def __repr__(self) -> str:
        aggregation = "" if self.config.spark_aggregation else ", spark_aggregation=False"
        aggregation += ", spark_joins=True" if self.config.spark_joins else ""
        if self.config.spark_window_min_items != WINDOW_MIN_ITEMS:
            aggregation += f", spark_window_min_items={self.config.spark_window_min_items}"
        return f"SparkRunner(partitions={self.partitions}{aggregation}, execution={self.execution})"

    # -- planning ----------------------------------------------------------------------------------

    def plan(self, job: Any, fuse: bool | None = None) -> SparkPlan:
        """Cut the job into stages (nothing runs); `SparkPlan.explain` lists them."""
        return self._plan(job, fuse)

    def _plan(self, job: Any, fuse: bool | None) -> SparkPlan:
        plan = cut(job_to_dag(job, fuse), self.config.execution["cooperative_threads"], self.config.spark_joins)
        default_partitions = self.partitions or self.session.sparkContext.defaultParallelism
        plan = assign_partitions(plan, default_partitions, source_partitions(plan, default_partitions))
        return lower_aggregations(plan, self.config.spark_aggregation, self.config.spark_window_min_items)

    def explain(self, job: Any, fuse: bool | None = None, physical: bool = True) -> str:
        """Which stages run in Python (and why), which in Spark, how Spark moves the data
        between them, and (``physical``) Spark's physical plan of the job's DataFrames. Nothing runs."""
        plan = self.plan(job, fuse)
        text = plan.explain()
        if not physical:
            return text
        _, sink_inputs, collected, persisted = self.frames(plan)
        try:
            if collected is not None:
                text += "\n== Spark physical plan (results) ==\n" + _physical_plan(collected)
            for name in sink_inputs:
                text += f"\n== Spark sink {name} ==\nits input rows come from the stages above, as an RDD of items"
        finally:
            for frame in persisted:
                frame.unpersist()
        return text

    # -- running -----------------------------------------------------------------------------------

    def frames(self, plan: SparkPlan) -> tuple[dict[int, Any], dict[str, Any], Any, list[Any]]:
        """The job as DataFrames, nothing run yet: each stage's output (`OUTPUT_SCHEMA` rows),
        each Spark sink's input items (an RDD), the rows of the collecting sinks' parts (None if
        no stage collects), and the stage outputs persisted because more than one consumer reads
        them (unpersist them when done)."""
        from pyspark import cloudpickle
        from pyspark.sql import functions as F
        from pyspark.storagelevel import StorageLevel

        spark = self.session
        execution = self.execution
        frames: dict[int, Any] = {}
        uses: Counter[int] = Counter()
        joined: dict[str, dict[int, Any]] = {}

        def join_rows(e: Edge, side: JoinSide) -> Any:
            """Rows of a lowered join's input ``e`` into its stage (`TypedJoin.spark_rows`: both
            inputs are made at once, from their producers' rows, each read once)."""
            join = side.join
            assert join is not None
            if join.vertex not in joined:
                consumer = plan.stage_of[e.target.name]
                edges = sorted(plan.dag.inbound_edges(e.target), key=lambda edge: edge.destination_ordinal)
                rows = []
                for edge in edges:
                    producer = plan.stage_of[edge.source.name]
                    uses[producer.index] += 1
                    rows.append(frames[producer.index].where(F.col("channel") == plan.channel(edge)))
                inputs = (consumer.inputs.index(edges[0]), consumer.inputs.index(edges[1]))
                joined[join.vertex] = join.spark_rows(rows[0], rows[1], inputs, consumer.partitions)
            return joined[join.vertex][plan.channel(e)]

        def producer_frame(e: Edge, tagger: Tagger | None) -> Any:
            """Rows of cut edge ``e`` (tagged for the consumer's shuffle if ``tagger``)."""
            source = plan.arrow_sources.get(e.source.name)
            if source is not None:
                partitions = source.spark_partitions(self._default_partitions())
                frame = source.spark_frame(spark, partitions)
                read = SourceFunction(source.partition_reader(partitions), plan.channel(e), tagger, partitions)
                return with_partition(frame).mapInArrow(read, OUTPUT_SCHEMA)
            typed = plan.typed.get(plan.channel(e))
            if isinstance(typed, JoinSide):
                return join_rows(e, typed)
            producer = plan.stage_of[e.source.name]
            uses[producer.index] += 1
            rows = frames[producer.index].where(F.col("channel") == plan.channel(e))
            if typed is None:
                return rows.select(*OUTPUT_COLUMNS)
            # Spark combines the typed rows; their accumulators go on tagged for the consumer's shuffle
            consumer_tagger = plan.tagger(e)
            assert consumer_tagger is not None  # lowered edges feed shuffled stages
            return typed.aggregate(rows).mapInArrow(AccumulatorRows(typed, consumer_tagger), OUTPUT_SCHEMA)

        for st in plan.stages:
            stage_plan = plan.task_plan(st, execution)
            try:
                plan_bytes = cloudpickle.dumps(stage_plan)
            except Exception as exc:  # the per-vertex checks passed: name the stage
                raise RunnerError(f"stage {st.index} ({', '.join(st.names)}) cannot be pickled: {exc}") from exc
            if st.mode == "none":
                base = spark.range(0, st.partitions, 1, st.partitions)
            elif st.mode == "arrow":
                base = plan.arrow_sources[st.inputs[0].source.name].spark_frame(spark, st.partitions)
            elif st.mode == "items":
                base = producer_frame(st.inputs[0], None)
            else:
                parts = [producer_frame(e, plan.tagger(e) if e.source.name in plan.arrow_sources else None)
                         for e in st.inputs]
                # one row without items for every partition: Spark runs a task only where rows are
                union = empty_rows(spark, st.partitions)
                for part in parts:
                    union = union.unionAll(part)
                base = union.repartition(st.partitions, "part")  # the JVM moves the rows
            frames[st.index] = with_partition(base).mapInArrow(StageFunction(plan_bytes),
                                                               OUTPUT_SCHEMA + ddl(stage_plan.extra))

        sink_inputs: dict[str, Any] = {}
        for name, sink in plan.spark_sinks.items():
            edges = plan.dag.inbound_edges(plan.dag.vertex(name))
            rows = [producer_frame(e, None) for e in edges]
            if sink.schema is None:  # schema inference reads the first rows in a job of its own
                for e in edges:
                    if e.source.name in plan.stage_of:
                        uses[plan.stage_of[e.source.name].index] += 1
            union = rows[0]
            for other in rows[1:]:
                union = union.unionAll(other)
            sink_inputs[name] = union.select("data").rdd.mapPartitions(items_of)
        finals = []
        for st in plan.stages:
            if st.collecting or not st.outputs:  # a stage without output runs for its side effects
                finals.append(frames[st.index].where(F.col("channel") == RESULT).select("data"))
                uses[st.index] += 1
        persisted = []
        for i, n in uses.items():
            if n > 1:
                persisted.append(frames[i].persist(StorageLevel.MEMORY_AND_DISK))
        collected = None
        if finals:
            collected = finals[0]
            for other in finals[1:]:
                collected = collected.unionAll(other)
        return frames, sink_inputs, collected, persisted

    def _default_partitions(self) -> int:
        return self.partitions or self.session.sparkContext.defaultParallelism

    def submit(self, job: Any, name: str | None = None, fuse: bool | None = None) -> SparkJob:
        """Start ``job`` on Spark and return its handle at once (`jetbench.spark.spark_job.SparkJob`):
        ``join()`` returns what `run` returns, ``cancel()`` cancels its Spark jobs, ``metrics()``
        gives Spark's stages and tasks, ``dashboard()`` shows them live in a notebook. ``name``
        names the job (in its errors, the progress line, Spark's names of its stages); by default
        the DAG's or Pipeline's kind.

        Raises `RunnerError` (before anything runs) for shapes Spark cannot run. The Spark actions
        run on the handle's thread, each named after the job and the stages of its own it runs
        (`action_name`): the progress line, the dashboard and the Spark UI show that name instead
        of the call site in this module."""
        plan = self._plan(job, fuse)
        spark = self.session
        _, sink_inputs, collected, persisted = self.frames(plan)
        name = name or getattr(job, "name", None) or type(job).__name__
        details = plan.explain()

        def work(handle: SparkJob) -> Any:
            results: dict[str, Any] = {}
            for sink_name, sink in plan.spark_sinks.items():
                with handle.action(action_name(name, f"sink {sink_name}", plan, sink_name), details):
                    df = rdd_to_dataframe(spark, sink_inputs[sink_name], sink.schema)
                    if sink.kind == "dataframe":
                        df = df.localCheckpoint(eager=True)
                    results[sink_name] = sink.finish(df)
            records = []
            if collected is not None:
                with handle.action(action_name(name, "results", plan), details):
                    records = [pickle.loads(blob) for blob in collected.toArrow().column(0).to_pylist()]
            return _result(plan.dag, records, results)

        def unpersist() -> None:
            for frame in persisted:
                with contextlib.suppress(Exception):
                    frame.unpersist()

        return SparkJob(name, spark.sparkContext, work, unpersist)

    def run(self, job: Any, timeout: float | None = None, fuse: bool | None = None,
            progress: bool | None = None) -> Any:
        """Run ``job`` on Spark; return its collecting sink's value as the local executor would:
        ``submit(job).join()``.

        Raises `RunnerError` (before anything runs) for shapes Spark cannot run, `JobError` if a
        processor fails in a task (naming the vertex), `JobTimeout` after ``timeout`` seconds (the
        Spark jobs are cancelled and their thread waited for).

        While it waits, a notebook or a terminal shows Spark's stages and tasks as they run, with
        a link to the Spark UI when it runs (`jetbench.notebook.spark_progress`; ``progress`` as
        for the local runner: None shows it unless it is turned off, False never, True always).
        An interrupted wait (KeyboardInterrupt) cancels the run's Spark jobs and waits for its thread.
        """
        handle = self.submit(job, fuse=fuse)
        try:
            return handle.join(timeout, progress)
        except JobTimeout:
            handle.stop()
            raise JobTimeout(f"SparkRunner: the job did not finish within {timeout} s; its Spark jobs were "
                             "cancelled") from None


def action_name(job: str, what: str, plan: SparkPlan, sink: str | None = None) -> str:
    """The name of a Spark action of ``job`` (Spark gives it to the action's jobs and stages):
    what it computes, then the jetbench stages it runs with their vertices.

    >>> from jetbench import Pipeline, sinks, sources
    >>> from jetbench.spark.stage_cut import cut, job_to_dag
    >>> p = Pipeline()
    >>> _ = p.read_from(sources.items([1, 2])).map(abs).write_to(sinks.collect())
    >>> action_name("abs", "results", cut(job_to_dag(p, None), 1, False))
    'jetbench abs: results · stage 0: items, map-abs, collect'
    """
    stages = plan.stages
    if sink is not None:  # the stages that feed the sink
        feeding = {plan.stage_of[e.source.name].index for e in plan.dag.inbound_edges(plan.dag.vertex(sink))
                   if e.source.name in plan.stage_of}
        stages = [st for st in stages if st.index in _upstream(plan, feeding)]
    listed = " | ".join(f"stage {st.index}: {', '.join(st.names)}" for st in stages)
    return f"jetbench {job}: {what}" + (f" · {listed}" if listed else "")


def _upstream(plan: SparkPlan, indices: set[int]) -> set[int]:
    """``indices`` and every stage they read from, transitively."""
    by_index = {st.index: st for st in plan.stages}
    seen: set[int] = set()
    todo = list(indices)
    while todo:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        for e in by_index[i].inputs:
            producer = plan.stage_of.get(e.source.name)
            if producer is not None:
                todo.append(producer.index)
    return seen


def _physical_plan(frame: Any) -> str:
    """What ``frame.explain()`` prints, as a string."""
    jvm = frame.sparkSession.sparkContext._jvm
    return str(jvm.PythonSQLUtils.explainString(frame._jdf.queryExecution(), "simple")).rstrip()


def empty_rows(spark: Any, partitions: int) -> Any:
    """One row without items for each of ``partitions`` (`OUTPUT_SCHEMA`), made in the JVM."""
    from pyspark.sql import functions as F

    keys = F.array(*[F.lit(k) for k in spark_partition_keys(partitions)])
    return spark.range(0, partitions, 1, 1).select(
        F.element_at(keys, F.col("id").cast("int") + 1).cast("int").alias("part"), F.lit(0).alias("input"),
        F.lit(-2).alias("channel"), F.lit(bytearray(EMPTY)).alias("data"))


def with_partition(frame: Any) -> Any:
    """``frame`` with the number of the Spark partition of each row as its last column
    (`stage_task.partition_of` reads it in the task)."""
    from pyspark.sql import functions as F

    return frame.withColumn(PARTITION_COLUMN, F.spark_partition_id())


def _result(dag: DAG, records: list[tuple[str, Any]], results: dict[str, Any]) -> Any:
    """The job's value: that of its first collecting sink, as the local executor gives it."""
    parts: dict[str, list[Any]] = {}
    for vertex, part in records:
        parts.setdefault(vertex, []).append(part)
    for v in dag.vertices:
        if v.name in results:
            return results[v.name]
        if v.name in parts:
            merge = getattr(v.supplier, "merge_results", None)
            return merge(parts[v.name]) if merge is not None else merge_parts(parts[v.name])
    return None
