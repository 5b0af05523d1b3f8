"""The jetbench engine: DAG, Processor API, queues, tasklets and the cooperative execution service.

Standard library only.
"""

from .dag import DAG, DEFAULT_QUEUE_SIZE, Edge, Routing, Vertex
from .errors import (
    DagError,
    JetbenchError,
    JobCancelled,
    JobError,
    JobTimeout,
    PipelineError,
    RunnerError,
)
from .execution import ExecutionService
from .idle import BackoffIdler, IdleConfig
from .inbox import Inbox
from .items import DONE, IDLE_MESSAGE, Watermark
from .job import Job, JobStatus
from .metrics import (
    JobMetrics,
    MetricsSampler,
    QueueStatistics,
    TaskletStatistics,
    WorkerStatistics,
)
from .outbox import Outbox
from .processor import Processor, ProcessorContext

__all__ = [
    "DAG",
    "DEFAULT_QUEUE_SIZE",
    "DONE",
    "IDLE_MESSAGE",
    "BackoffIdler",
    "DagError",
    "Edge",
    "ExecutionService",
    "IdleConfig",
    "Inbox",
    "JetbenchError",
    "Job",
    "JobCancelled",
    "JobError",
    "JobMetrics",
    "JobStatus",
    "JobTimeout",
    "MetricsSampler",
    "Outbox",
    "PipelineError",
    "Processor",
    "ProcessorContext",
    "QueueStatistics",
    "Routing",
    "RunnerError",
    "TaskletStatistics",
    "Vertex",
    "Watermark",
    "WorkerStatistics",
]
