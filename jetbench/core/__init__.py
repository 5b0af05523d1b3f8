"""The jetbench engine: DAG, Processor API, queues, tasklets and the cooperative execution service.

Standard library only. Its hot modules may run compiled with mypyc: see `jetbench.core.compiled`.
"""

# first: chooses the build (compiled or pure) before any compiled module is imported
from . import compiled as compiled
from .clock import SYSTEM_CLOCK, Clock, MockClock, SystemClock
from .dag import DAG, Edge, Vertex
from .errors import (
    DagError,
    JetbenchError,
    JobCancelled,
    JobError,
    JobTimeout,
)
from .execution import ExecutionService
from .idle import BackoffIdler, IdleConfig, Idler, TimerIdler
from .inbox import Inbox
from .items import DONE, IDLE_MESSAGE, Watermark
from .job import Job
from .job_config import JobConfig, ProcessingGuarantee
from .job_handle import JobStatus
from .metrics import JobMetrics, QueueStatistics, TaskletStatistics, WorkerStatistics
from .outbox import Outbox
from .processor import Processor, ProcessorContext
from .queues import DEFAULT_QUEUE_SIZE
from .routing import Routing
from .sampler import MetricsSampler
from .trace import Trace, TraceError, TraceEvent

__all__ = [
    "DAG",
    "DEFAULT_QUEUE_SIZE",
    "DONE",
    "IDLE_MESSAGE",
    "SYSTEM_CLOCK",
    "BackoffIdler",
    "Clock",
    "DagError",
    "Edge",
    "ExecutionService",
    "IdleConfig",
    "Idler",
    "Inbox",
    "JetbenchError",
    "Job",
    "JobCancelled",
    "JobConfig",
    "ProcessingGuarantee",
    "JobError",
    "JobMetrics",
    "JobStatus",
    "JobTimeout",
    "MetricsSampler",
    "MockClock",
    "Outbox",
    "Processor",
    "ProcessorContext",
    "QueueStatistics",
    "Routing",
    "SystemClock",
    "TaskletStatistics",
    "TimerIdler",
    "Trace",
    "TraceError",
    "TraceEvent",
    "Vertex",
    "Watermark",
    "WorkerStatistics",
]
