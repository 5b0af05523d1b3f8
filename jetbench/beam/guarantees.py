"""The processing guarantee of a Beam pipeline on jetbench: the runner's settings made into the
engine's `JobConfig`, and what a guarantee cannot cover refused before anything runs.

With ``processing_guarantee`` ``"at_least_once"`` or ``"exactly_once"`` the job takes snapshots
every ``snapshot_interval_ms`` (jetbench's barriers; every vertex of the runner saves its state,
see `jetbench.beam.stage`, `jetbench.beam.grouping`, `jetbench.beam.impulse`) into the SQLite
store ``snapshot_store`` and restarts from the last one after a failure, up to ``max_restarts``
times; ``resume`` makes a new process go on from the snapshots a killed one left under the same
``job_name``.

What is guaranteed is what flows between the vertices and the state they keep: the PCollections,
groups, side inputs, user state and timers, and so what a pipeline computes (exactly-once: equal
to a failure-free run; at-least-once: elements after the last snapshot may be counted again).
What a DoFn does outside Beam's model is not: a DoFn run in a bundle after the last snapshot runs
again after the restore, so its side effects (a file it appends to, a request it sends) happen
again. Beam's metrics keep both: attempted values count the bundles of every attempt, committed
values (each stage instance's metrics are saved with its state and restored with it) those of the
run that counts: with exactly-once, a failure-free run's.
Beam's own file sinks (``WriteToText``) write each bundle to a new temporary file and keep only the
files listed in the pipeline's data, so their output is exactly-once.

>>> job_config({"processing_guarantee": "exactly-once", "snapshot_interval_ms": 100, "max_restarts": 1,
...             "snapshot_store": None, "resume": False}, None)
JobConfig(processing_guarantee='exactly_once', snapshot_interval_ms=100, max_restarts=1, snapshot_store=None, initial_snapshot=None, resume=False, on_code_change='warn')
>>> job_config({"processing_guarantee": "none", "snapshot_interval_ms": 10000, "max_restarts": 3,
...             "snapshot_store": None, "resume": False}, None) is None
True
"""

from __future__ import annotations

from typing import Any

from ..core.errors import JetbenchError
from ..core.job_config import GUARANTEES, NONE, JobConfig
from .errors import BeamRunnerError

__all__ = ["job_config"]


def job_config(settings: dict[str, Any], job_name: str | None) -> JobConfig | None:
    """The `JobConfig` the settings ask for (None: no guarantee, a plain job); a
    `BeamRunnerError` naming the setting for a bad value or a combination that cannot work."""
    raw = settings["processing_guarantee"]
    guarantee = raw.strip().lower().replace("-", "_") if isinstance(raw, str) else raw
    if guarantee not in GUARANTEES:
        raise BeamRunnerError(f"JetbenchRunner: processing_guarantee must be one of "
                              f"{', '.join(map(repr, GUARANTEES))}, got {raw!r}")
    if guarantee == NONE:
        if settings["resume"]:
            raise BeamRunnerError("JetbenchRunner: resume=True goes on from a killed run's snapshots, which only a "
                                  "job with processing_guarantee 'at_least_once' or 'exactly_once' takes")
        return None
    if settings["resume"] and not job_name:
        raise BeamRunnerError("JetbenchRunner: resume=True finds the killed run's snapshots by the job's name: set "
                              "the pipeline option --job_name")
    try:
        return JobConfig(guarantee, snapshot_interval_ms=settings["snapshot_interval_ms"],
                         max_restarts=settings["max_restarts"], snapshot_store=settings["snapshot_store"],
                         resume=bool(settings["resume"]))
    except JetbenchError as exc:
        raise BeamRunnerError(f"JetbenchRunner: {exc}") from None
