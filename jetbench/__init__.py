"""jetbench: dataflow DAGs on an in-process cooperative executor modelled on Hazelcast Jet.

>>> import jetbench
>>> from jetbench.processors import items_source, map_processor, collect_sink
>>> dag = jetbench.DAG()
>>> src = dag.new_vertex("src", items_source(range(4)))
>>> inc = dag.new_vertex("inc", map_processor(lambda x: x + 1))
>>> out = dag.new_vertex("out", collect_sink())
>>> _ = dag.edge(jetbench.Edge.between(src, inc)).edge(jetbench.Edge.between(inc, out))
>>> jetbench.run(dag)
[1, 2, 3, 4]
"""

from typing import Any

from .core import (
    DAG,
    DONE,
    DagError,
    Edge,
    ExecutionService,
    Inbox,
    JetbenchError,
    Job,
    JobCancelled,
    JobError,
    JobMetrics,
    JobStatus,
    JobTimeout,
    Outbox,
    PipelineError,
    Processor,
    ProcessorContext,
    Routing,
    RunnerError,
    Vertex,
    Watermark,
)
from .core.job import register_view
from .pipeline import Pipeline
from .processors.window_definition import WindowResult

__version__ = "0.1.0"


def _lazy_view(module: str, attribute: str) -> Any:
    """A view factory that imports its (heavier) module only when first used."""

    def factory(job: Job, **kwargs: Any) -> Any:
        import importlib

        return getattr(importlib.import_module(module), attribute)(job, **kwargs)

    return factory


register_view("dashboard", _lazy_view("jetbench.notebook", "Dashboard"))
register_view("plot_metrics", _lazy_view("jetbench.notebook.plots", "plot_metrics"))
register_view("metrics_frame", _lazy_view("jetbench.frames", "job_metrics_frame"))


def run(job: Any, timeout: float | None = None, fuse: bool | None = None, runner: Any = "local",
        **execution_config: Any) -> Any:
    """Run a DAG or Pipeline to completion on a new `ExecutionService`; return the value of its
    collecting sink (a list for ``sinks.collect()``), or None if it has none.

    ``fuse`` overrides a Pipeline's fusion setting; ``execution_config`` goes to
    `ExecutionService` (e.g. ``cooperative_threads=2, min_idle_us=1000``).
    ``runner="spark"`` runs the job on Spark instead (`jetbench.spark.SparkRunner`, which takes
    ``session=`` and ``partitions=`` from ``execution_config``); a runner object with a
    ``run(job, timeout=, fuse=)`` method is used as it is.
    """
    if runner == "spark":
        from .spark import SparkRunner

        runner = SparkRunner(**execution_config)
    if runner != "local":
        if not hasattr(runner, "run"):
            raise JetbenchError(f"run(): runner must be 'local', 'spark' or a runner object, got {runner!r}")
        return runner.run(job, timeout=timeout, fuse=fuse)
    if isinstance(job, Pipeline):
        job = job.to_dag(fuse=fuse)
    return ExecutionService(**execution_config).run(job, timeout=timeout)


__all__ = [
    "DAG",
    "DONE",
    "DagError",
    "Edge",
    "ExecutionService",
    "Inbox",
    "JetbenchError",
    "Job",
    "JobCancelled",
    "JobError",
    "JobMetrics",
    "JobStatus",
    "JobTimeout",
    "Outbox",
    "Pipeline",
    "PipelineError",
    "Processor",
    "ProcessorContext",
    "Routing",
    "RunnerError",
    "Vertex",
    "Watermark",
    "WindowResult",
    "run",
]
