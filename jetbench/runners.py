"""Running a job to completion: `run` and the runners it hands a job to.

A runner takes its own, explicit set of options: the local cooperative executor takes the
settings of `ExecutionService` (``cooperative_threads``, ``min_idle_us``, ...), the Spark runner
those of `jetbench.spark.SparkConfig` (``session``, ``partitions`` and the settings of the
executor each Spark task runs). A keyword the chosen runner does not take is an error that
names it and lists what the runner takes, before anything runs.

>>> from jetbench import Pipeline, sources, sinks
>>> p = Pipeline()
>>> _ = p.read_from(sources.items([1, 2, 3])).map(lambda x: x * 10).write_to(sinks.collect())
>>> run(p, cooperative_threads=1)
[10, 20, 30]
>>> try:
...     run(p, partitions=2)
... except RunnerOptionError as exc:
...     print(exc)  # doctest: +ELLIPSIS
the local runner takes no option 'partitions'; it takes cooperative_threads, min_idle_us, ...
"""

from __future__ import annotations

import inspect
from typing import Any

from .core.dag import DAG
from .core.errors import JetbenchError
from .core.execution import ExecutionService
from .core.job_config import JobConfig
from .pipeline import Pipeline
from .runner_errors import RunnerOptionError


def local_options() -> tuple[str, ...]:
    """The options of the local runner: the parameters of `ExecutionService`."""
    return tuple(inspect.signature(ExecutionService).parameters)


def run(job: DAG | Pipeline, timeout: float | None = None, fuse: bool | None = None, runner: Any = "local",
        progress: bool | None = None, config: JobConfig | None = None, **options: Any) -> Any:
    """Run a DAG or Pipeline to completion and return the value of its collecting sink (a list
    for ``sinks.collect()``), or None if it has none.

    ``runner`` is ``"local"`` (a new `ExecutionService`, which ``options`` configure, e.g.
    ``cooperative_threads=2, min_idle_us=1000``), ``"spark"`` (`jetbench.spark.SparkRunner`,
    options of `jetbench.spark.SparkConfig`: ``session=``, ``partitions=``, the executor's
    settings) or a runner object with a ``run(job, timeout=, fuse=)`` method, used as it is
    (then ``options`` must be empty). ``fuse`` overrides a Pipeline's fusion setting.
    ``config`` (a `JobConfig`: processing guarantee, snapshots, restarts) is for the local runner.

    While the local runner waits, a notebook shows a live progress line and a terminal a tqdm
    bar (`jetbench.notebook.progress`): ``progress=False`` (or ``JETBENCH_PROGRESS=0``) turns
    it off, ``True`` shows it even where stderr is not a terminal. The Spark runner shows
    Spark's stages and tasks the same way (`jetbench.notebook.spark_progress`).
    """
    if isinstance(runner, str):
        if runner == "local":
            accepted = local_options()
            for name in options:
                if name not in accepted:
                    raise RunnerOptionError("local", name, accepted)
            if isinstance(job, Pipeline):
                job = job.to_dag(fuse=fuse)
            return ExecutionService(**options).run(job, timeout=timeout, progress=progress, config=config)
        if config is not None and config.processing_guarantee != "none":
            raise JetbenchError(f"run(): processing guarantees are for the local runner, not {runner!r}")
        if runner == "spark":
            from .spark import SparkRunner

            return SparkRunner.from_options(**options).run(job, timeout=timeout, fuse=fuse, progress=progress)
        raise JetbenchError(f"run(): runner must be 'local', 'spark' or a runner object, got {runner!r}")
    if not hasattr(runner, "run"):
        raise JetbenchError(f"run(): runner must be 'local', 'spark' or a runner object, got {runner!r}")
    if options:
        raise JetbenchError(f"run(): options ({', '.join(options)}) go to the runner object's own constructor, "
                            "not to run()")
    return runner.run(job, timeout=timeout, fuse=fuse)
