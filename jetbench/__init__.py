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

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import aggregate, sinks, sources, window
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
    JobConfig,
    JobError,
    JobMetrics,
    JobStatus,
    JobTimeout,
    MockClock,
    Outbox,
    ProcessingGuarantee,
    Processor,
    ProcessorContext,
    Routing,
    TraceError,
    Vertex,
    Watermark,
)
from .core.errors import register_location_label
from .core.job_handle import register_waiter
from .core.views import register_view
from .pipeline import Pipeline, PipelineError
from .processors.builder_kind import BuilderError
from .processors.kind_params import KindParamError
from .processors.window_definition import WindowResult
from .runner_errors import RunnerError, RunnerOptionError
from .runners import run

if TYPE_CHECKING:
    from .core.snapshot_store import (
        CodeChangedError,
        SnapshotFormatError,
        SnapshotStore,
        SnapshotWarning,
    )

__version__ = "0.1.0"

#: names given on first use: the snapshot store imports sqlite3, which a job without a
#: processing guarantee never needs
_LAZY = {name: "jetbench.core.snapshot_store"
         for name in ("SnapshotStore", "SnapshotFormatError", "SnapshotWarning", "CodeChangedError")}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _lazy_view(module: str, attribute: str) -> Any:
    """A view factory that imports its (heavier) module only when first used."""

    def factory(job: Job, **kwargs: Any) -> Any:
        import importlib

        return getattr(importlib.import_module(module), attribute)(job, **kwargs)

    return factory


register_view("dashboard", _lazy_view("jetbench.notebook", "Dashboard"))
register_view("timeline", _lazy_view("jetbench.notebook.timeline", "timeline"))
register_view("plot_metrics", _lazy_view("jetbench.notebook.plots", "plot_metrics"))
register_view("metrics_frame", _lazy_view("jetbench.frames", "job_metrics_frame"))
register_view("spark_dashboard", _lazy_view("jetbench.notebook.spark_dashboard", "SparkDashboard"))


def _wait(job: Job, wait: Callable[[float | None], bool], timeout: float | None, progress: bool | None) -> bool:
    """How `Job.join` waits: in a notebook, letting the dashboard's messages through and with a
    progress line; in a terminal, with a tqdm bar (`jetbench.notebook.kernel_wait`, imported
    when a job is first waited for)."""
    from .notebook.kernel_wait import wait_for_job

    return wait_for_job(job, wait, timeout, progress)


register_waiter(_wait)


def _cell_label(filename: str) -> str | None:
    """How error reports name a notebook cell's code (``Cell In[5]``): `jetbench.notebook.cell_names`."""
    from .notebook.cell_names import cell_label

    return cell_label(filename)


def _in_colour() -> bool:
    from .notebook.cell_names import in_colour

    return in_colour()


register_location_label(_cell_label, _in_colour)


__all__ = [
    "DAG",
    "DONE",
    "BuilderError",
    "CodeChangedError",
    "DagError",
    "Edge",
    "ExecutionService",
    "Inbox",
    "JetbenchError",
    "Job",
    "JobCancelled",
    "JobConfig",
    "JobError",
    "JobMetrics",
    "JobStatus",
    "JobTimeout",
    "KindParamError",
    "MockClock",
    "Outbox",
    "Pipeline",
    "PipelineError",
    "ProcessingGuarantee",
    "Processor",
    "ProcessorContext",
    "Routing",
    "RunnerError",
    "RunnerOptionError",
    "SnapshotFormatError",
    "SnapshotStore",
    "SnapshotWarning",
    "TraceError",
    "Vertex",
    "Watermark",
    "WindowResult",
    "aggregate",
    "run",
    "sinks",
    "sources",
    "window",
]
