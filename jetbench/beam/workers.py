"""SDK harness worker processes: a job's fused stages run their bundles in other Python processes.

In the default (embedded) mode every stage instance runs its bundles in an SDK harness inside
this process, under its one GIL: a second instance adds no parallelism. With
``JetbenchRunner(sdk_workers=N)`` the job starts N of Beam's own subprocess SDK workers
(``python -m apache_beam.runners.worker.sdk_worker_main``, connected over gRPC through Beam's
`WorkerHandlerManager`, as the FnApiRunner's ``direct_running_mode='multi_processing'`` does)
and the stateless stages (no user state, no timers, no side inputs) send their bundles to them:
stage instance *i* to worker *i mod N*. The stage's jetbench thread waits for the bundle's
output on gRPC without the GIL, so the instances' bundles run in parallel on as many cores.
The parallelism defaults to N, and the edge into a stage that reads a splittable DoFn's
restrictions (``ReadFromText``'s ranges of a file, say) carries one restriction per item, so
that the instances share them out.

What it costs: each worker is a new Python process that imports Beam (about a second of CPU)
before its first bundle, and every element crosses gRPC encoded: it pays off only when a job's
bundles take longer than that. The workers live as long as the job: they are shut down (their
processes waited for) when it ends, whether it completed, failed or was cancelled.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from apache_beam.portability.api import beam_fn_api_pb2, beam_provision_api_pb2
from apache_beam.runners import pipeline_context
from apache_beam.runners.portability.fn_api_runner import worker_handlers
from apache_beam.runners.portability.fn_api_runner.fn_runner import ExtendedProvisionInfo
from apache_beam.transforms import environments

__all__ = ["ProcessWorkers"]

_ENVIRONMENT_ID = "jetbench_sdk_worker_process"


class ProcessWorkers:
    """One job's pool of ``count`` subprocess SDK workers, started at the first stage instance
    that asks for one, shut down by `close`."""

    def __init__(self, count: int):
        self.count = count
        self._lock = threading.Lock()
        self._manager: Any = None
        self._handlers: list[Any] = []
        self._closed = False
        #: worker processes started (for tests and reports)
        self.started = 0

    def worker_for(self, index: int, descriptor: beam_fn_api_pb2.ProcessBundleDescriptor) -> Any:
        """The worker handler that runs stage instance ``index``'s bundles of ``descriptor``
        (registered with the pool's gRPC server, which the workers fetch descriptors from)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the job's SDK worker processes are already shut down")
            if self._manager is None:
                command = f"{sys.executable} -m apache_beam.runners.worker.sdk_worker_main"
                environment = environments.SubprocessSDKEnvironment.from_command_string(command_string=command)
                proto = environment.to_runner_api(pipeline_context.PipelineContext())
                provision = ExtendedProvisionInfo(beam_provision_api_pb2.ProvisionInfo(
                    retrieval_token="unused-retrieval-token"))
                self._manager = worker_handlers.WorkerHandlerManager({_ENVIRONMENT_ID: proto}, provision)
                self._handlers = self._manager.get_worker_handlers(_ENVIRONMENT_ID, self.count)
                self.started = len(self._handlers)
            self._manager.register_process_bundle_descriptor(descriptor)
            return self._handlers[index % self.count]

    def close(self) -> None:
        """Shut the workers down and wait for their processes (idempotent)."""
        with self._lock:
            self._closed = True
            manager, self._manager, self._handlers = self._manager, None, []
        if manager is not None:
            manager.close_all()
