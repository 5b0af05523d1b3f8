"""SparkRunner: a jetbench DAG or Pipeline run as Spark stages (Jet's "the DAG on every member").

How a job becomes Spark work:

1. **Cuts.** Partitioned, all-to-one and broadcast edges are *cut*: they cross Spark partitions;
   **stages** are the groups of vertices joined by uncut edges. The cut is pure graph work,
   in `jetbench.spark.stage_cut`; this module, the driver, adds the two numbers only Spark
   knows (default parallelism, a DataFrame's partitions) and wires the stages into RDDs.
2. **Tasks.** Each stage runs as ``mapPartitionsWithIndex`` over its input: in every Spark
   partition a copy of the stage's sub-DAG runs to completion on a local `ExecutionService`
   (cooperative, one thread by default). Processor contexts carry global indices (partition
   ``p`` of ``P`` holds instances ``p * lp .. p * lp + lp - 1`` of ``P * lp``), so sources
   split their data over the whole cluster as they would over a Jet cluster. The stage's input
   comes in through a feeder vertex; what crosses a cut is captured by a capture vertex. That
   code runs in the Spark workers: `jetbench.spark.stage_task`.
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
   partition order. `jetbench.spark.dataframe_sinks` build their DataFrame inside Spark instead.

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
import re
import threading
import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..core.dag import DAG, Edge
from ..core.errors import JetbenchError, JobError, JobTimeout
from ..core.execution import ExecutionService
from ..core.plan import merge_parts
from ..runner_errors import RunnerError, RunnerOptionError
from .dataframe_sinks import rdd_to_dataframe
from .stage_cut import SparkPlan, assign_partitions, cut, job_to_dag
from .stage_task import (
    RESULT,
    ReadArrow,
    Select,
    StageFunction,
    Tagger,
    no_records,
    target_partition,
)

__all__ = ["DEFAULT_EXECUTION", "SparkConfig", "SparkRunner"]

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
    here, not in a task.
    """

    session: Any = None
    partitions: int | None = None
    execution: Mapping[str, Any] = field(default_factory=dict)

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

    @staticmethod
    def keywords() -> tuple[str, ...]:
        """Every keyword `from_options` (and `SparkRunner`) takes."""
        return ("session", "partitions", *_execution_keywords())

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
        return cls(session, partitions, options)


class SparkRunner:
    """Runs DAGs and Pipelines on Spark (see the module doc for how).

    ``SparkRunner(session=None, *, partitions=None, **execution)`` takes the keywords of
    `SparkConfig` (an unknown one raises `jetbench.RunnerOptionError`); `from_config` takes a config,
    `from_options` the keywords alone.
    """

    def __init__(self, session: Any = None, *, partitions: int | None = None, **execution: Any):
        self._init(SparkConfig.from_options(session=session, partitions=partitions, **execution))

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
        return f"SparkRunner(partitions={self.partitions}, execution={self.execution})"

    # -- planning ----------------------------------------------------------------------------------

    def plan(self, job: Any, fuse: bool | None = None) -> SparkPlan:
        """Cut the job into stages (nothing runs); `SparkPlan.explain` lists them."""
        return self._plan(job, fuse)[0]

    def _plan(self, job: Any, fuse: bool | None) -> tuple[SparkPlan, dict[str, Any]]:
        """The plan and, for each DataFrame/parquet source vertex, the RDD its reader reads."""
        plan = cut(job_to_dag(job, fuse), self.config.execution["cooperative_threads"])
        sc = self.session.sparkContext
        default_partitions = self.partitions or sc.defaultParallelism
        arrow_inputs = {name: source.spark_input(sc, default_partitions) for name, source in plan.arrow_sources.items()}
        assign_partitions(plan, default_partitions, {name: rdd.getNumPartitions() for name, rdd in arrow_inputs.items()})
        return plan, arrow_inputs

    def explain(self, job: Any, fuse: bool | None = None) -> str:
        return self.plan(job, fuse).explain()

    # -- running -----------------------------------------------------------------------------------

    def run(self, job: Any, timeout: float | None = None, fuse: bool | None = None) -> Any:
        """Run ``job`` on Spark; return its collecting sink's value as the local executor would.

        Raises `RunnerError` (before anything runs) for shapes Spark cannot run, `JobError` if a
        processor fails in a task, `JobTimeout` after ``timeout`` seconds (the Spark jobs are cancelled).
        """
        from pyspark import cloudpickle
        from pyspark.storagelevel import StorageLevel

        plan, arrow_inputs = self._plan(job, fuse)
        execution = self.execution
        spark = self.session
        sc = spark.sparkContext
        rdds: dict[int, Any] = {}
        uses: Counter[int] = Counter()
        channel = {id(e): i for i, e in enumerate(plan.dag.edges)}

        def producer_rdd(e: Edge, tagger: Tagger | None) -> Any:
            """Items (tagged if ``tagger``) of cut edge ``e`` as an RDD."""
            source = plan.arrow_sources.get(e.source.name)
            if source is not None:
                return arrow_inputs[e.source.name].mapPartitions(ReadArrow(source.reader, tagger))
            producer = plan.stage_of[e.source.name]
            uses[producer.index] += 1
            return rdds[producer.index].mapPartitions(Select(channel[id(e)]))

        for st in plan.stages:
            stage_plan = plan.task_plan(st, execution)
            try:
                plan_bytes = cloudpickle.dumps(stage_plan)
            except Exception as exc:  # the per-vertex checks passed: name the stage
                raise RunnerError(f"stage {st.index} ({', '.join(st.names)}) cannot be pickled: {exc}") from exc
            if st.mode == "none":
                base = sc.parallelize(range(st.partitions), st.partitions)
            elif st.mode == "arrow":
                base = arrow_inputs[st.inputs[0].source.name]
            elif st.mode == "items":
                base = producer_rdd(st.inputs[0], None)
            else:
                parts = [producer_rdd(e, plan.tagger(e) if e.source.name in plan.arrow_sources else None)
                         for e in st.inputs]
                union = parts[0] if len(parts) == 1 else sc.union(parts)
                base = union.partitionBy(st.partitions, target_partition)
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
                finals.append(rdds[st.index].mapPartitions(no_records))
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
        except BaseException as exc:
            # whatever ended the wait (a failure, the timeout, KeyboardInterrupt), no Spark job of
            # this run goes on (PySpark cancels on SIGINT only if its context began in the main thread)
            with contextlib.suppress(Exception):
                sc.cancelJobsWithTag(tag)
            if not isinstance(exc, Exception):
                raise
            if timed_out.is_set():
                raise JobTimeout(f"SparkRunner: the job did not finish within {timeout} s; its Spark jobs were cancelled") from exc
            raise _job_error(exc) from exc
        finally:
            if timer is not None:
                timer.cancel()
                if timer.is_alive():
                    timer.join()  # no thread of ours outlives the wait
            sc.removeJobTag(tag)
            for rdd in persisted:
                rdd.unpersist()
        return _result(plan.dag, records, results)


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
