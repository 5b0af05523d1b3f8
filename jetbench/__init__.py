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
    Processor,
    ProcessorContext,
    Routing,
    Vertex,
    Watermark,
)

__version__ = "0.1.0"


def run(job: Any, timeout: float | None = None, **execution_config: Any) -> Any:
    """Run a DAG (or Pipeline) to completion on a new `ExecutionService` and return its result.

    ``execution_config`` goes to `ExecutionService` (e.g. ``cooperative_threads=2``).
    """
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
    "Processor",
    "ProcessorContext",
    "Routing",
    "Vertex",
    "Watermark",
    "run",
]
