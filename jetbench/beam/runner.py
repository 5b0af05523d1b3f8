"""`JetbenchRunner`: Beam Python pipelines run on jetbench's cooperative executor.

>>> import apache_beam as beam
>>> from apache_beam.testing.util import assert_that, equal_to
>>> from jetbench.beam import JetbenchRunner
>>> p = beam.Pipeline(runner=JetbenchRunner(cooperative_threads=1))
>>> counts = p | beam.Create(["a b", "b"]) | beam.FlatMap(str.split) | beam.combiners.Count.PerElement()
>>> _ = assert_that(counts, equal_to([("a", 1), ("b", 2)]))
>>> result = p.run()
>>> result.wait_until_finish()
'DONE'
>>> result.job.status.value
'completed'

``--runner=jetbench.beam.JetbenchRunner`` names it from the command line (Beam imports dotted
names). The pipeline is checked (`check_requirements` and the runner's own refusals), optimized
by Beam's phases and translated to a DAG (`jetbench.beam.translation`), which is submitted to an
`ExecutionService`; `run` returns at once with a `JetbenchPipelineResult`.
"""

from __future__ import annotations

import threading
from typing import Any

from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability import common_urns
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.runners.portability.fn_api_runner import translations as beam_translations
from apache_beam.runners.runner import PipelineRunner
from apache_beam.transforms import environments
from apache_beam.utils import proto_utils

from ..core.execution import ExecutionService
from .errors import BeamRunnerError, UnsupportedBeamFeature
from .guarantees import job_config
from .heap import FROZEN_HEAP
from .options import SETTINGS, JetbenchOptions
from .result import JetbenchPipelineResult
from .translation import BeamPlan, optimize, translate
from .workers import ProcessWorkers

__all__ = ["JetbenchRunner", "SUPPORTED_REQUIREMENTS"]

#: Beam's requirement URNs the runner declares it meets
SUPPORTED_REQUIREMENTS = (
    common_urns.requirements.REQUIRES_STATEFUL_PROCESSING.urn,
    common_urns.requirements.REQUIRES_BUNDLE_FINALIZATION.urn,
    common_urns.requirements.REQUIRES_SPLITTABLE_DOFN.urn,
)

_lock = threading.Lock()


class JetbenchRunner(PipelineRunner):
    """Runs Beam pipelines as jetbench jobs. Keyword arguments override the pipeline's
    `JetbenchOptions` (``cooperative_threads``, ``parallelism``, ``min_idle_us``,
    ``max_idle_us``, ``idle_strategy``, ``queue_size``, ``outbox_capacity``, ``processing_guarantee``, ``snapshot_interval_ms``,
    ``max_restarts``, ``snapshot_store``, ``resume``, ``merge_in_harness``, ``drain``, ``sdk_workers``, ``gc_freeze``)."""

    def __init__(self, **settings: Any):
        unknown = sorted(set(settings) - set(SETTINGS))
        if unknown:
            raise BeamRunnerError(f"JetbenchRunner: unknown setting(s) {unknown}; known: {sorted(SETTINGS)}")
        super().__init__()
        self.settings = settings

    def default_environment(self, options: PipelineOptions) -> environments.Environment:
        """The SDK harness runs in this process (no Docker, no subprocess)."""
        return environments.EmbeddedPythonEnvironment.default()

    def run_portable_pipeline(self, pipeline: beam_runner_api_pb2.Pipeline,
                              options: PipelineOptions) -> JetbenchPipelineResult:
        settings = self._resolve(options)
        name = options.get_all_options().get("job_name") or None
        config = job_config(settings, name)
        plan = self._plan(pipeline, settings)
        service = ExecutionService(cooperative_threads=settings["cooperative_threads"],
                                   min_idle_us=settings["min_idle_us"], max_idle_us=settings["max_idle_us"],
                                   idle=settings["idle_strategy"], outbox_capacity=settings["outbox_capacity"])
        freeze = bool(settings["gc_freeze"])
        if freeze:
            FROZEN_HEAP.acquire()
        try:
            job = service.submit(plan.dag, name=name, config=config)
        except BaseException:
            _job_ended(plan, freeze)
            raise
        job.add_done_listener(lambda _: _job_ended(plan, freeze))
        return JetbenchPipelineResult(job, plan)

    @classmethod
    def explain(cls, pipeline: Any, **settings: Any) -> BeamPlan:
        """The DAG ``pipeline`` (a ``beam.Pipeline``) would become, without running it: print it
        for the vertices and their Beam steps, or show it in a notebook to draw it."""
        runner = cls(**settings)
        options = pipeline._options
        proto = pipeline.to_runner_api(default_environment=runner.default_environment(options))
        return runner._plan(proto, runner._resolve(options))

    # -- internals -----------------------------------------------------------------------------

    def _resolve(self, options: PipelineOptions) -> dict[str, Any]:
        view = options.view_as(JetbenchOptions)
        resolved = {name: self.settings.get(name, getattr(view, f"jetbench_{name}")) for name in SETTINGS}
        threads = resolved["cooperative_threads"]
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise BeamRunnerError(f"JetbenchRunner: cooperative_threads must be an int >= 1, got {threads!r}")
        lp = resolved["parallelism"]
        if lp is not None and (isinstance(lp, bool) or not isinstance(lp, int) or lp < 1):
            raise BeamRunnerError(f"JetbenchRunner: parallelism must be an int >= 1 or None, got {lp!r}")
        workers = resolved["sdk_workers"]
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
            raise BeamRunnerError(f"JetbenchRunner: sdk_workers must be an int >= 0, got {workers!r}")
        guarantee = job_config(resolved, "-")  # a bad guarantee setting is refused before the pipeline is looked at
        if workers and guarantee is not None:
            raise BeamRunnerError("JetbenchRunner: sdk_workers (bundles in worker processes) cannot be combined with a "
                                  "processing guarantee: a stage's snapshot needs its harness in this process")
        return resolved

    def _plan(self, pipeline: beam_runner_api_pb2.Pipeline, settings: dict[str, Any]) -> BeamPlan:
        try:
            self.check_requirements(pipeline, SUPPORTED_REQUIREMENTS)
        except ValueError as exc:  # an undeclared requirement
            raise UnsupportedBeamFeature(f"JetbenchRunner cannot run this pipeline: {exc}") from None
        except NotImplementedError as exc:  # a transform (TestStream) or a timer domain
            raise UnsupportedBeamFeature(f"JetbenchRunner cannot run this pipeline: it uses {exc}, which the "
                                         "runner does not support") from None
        _refuse_unsupported(pipeline)
        with _lock:  # Beam's optimizer keeps module-level counters
            optimized = optimize(pipeline, bool(settings["drain"]))
        workers = ProcessWorkers(settings["sdk_workers"]) if settings["sdk_workers"] else None
        parallelism = settings["parallelism"]
        if workers is not None and parallelism is None:
            parallelism = workers.count
        return translate(optimized, parallelism, settings["queue_size"],
                         stable_keys=job_config(settings, "-") is not None,
                         merge_combiners=not settings["merge_in_harness"], workers=workers)


def _job_ended(plan: BeamPlan, frozen: bool) -> None:
    """What a job holds beyond its threads, let go once it has ended: its SDK worker processes
    (shut down and waited for), the heap freeze."""
    try:
        if plan.workers is not None:
            plan.workers.close()
    finally:
        if frozen:
            FROZEN_HEAP.release()


def _refuse_unsupported(pipeline: beam_runner_api_pb2.Pipeline) -> None:
    """Refuse up front what would otherwise run wrong (check_requirements misses these)."""
    for transform in pipeline.components.transforms.values():
        if transform.spec.urn in beam_translations.PAR_DO_URNS:
            payload = proto_utils.parse_Bytes(transform.spec.payload, beam_runner_api_pb2.ParDoPayload)
            if payload.requires_time_sorted_input:
                raise UnsupportedBeamFeature(f"Beam step {transform.unique_name!r}: time-sorted input is not supported")
