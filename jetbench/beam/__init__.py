"""A Beam runner: Apache Beam Python pipelines on jetbench's cooperative executor.

``beam.Pipeline(runner=jetbench.beam.JetbenchRunner())`` or ``--runner=jetbench.beam.JetbenchRunner``.
Needs the ``beam`` extra (``pip install jetbench[beam]``, which pins the Beam version the runner
was written against); ``import jetbench`` never imports Beam.
"""

from __future__ import annotations

from .errors import (
    INSTALL_HINT,
    BeamNotInstalled,
    BeamRunnerError,
    BeamStageError,
    UnsupportedBeamFeature,
)

try:
    import apache_beam as _beam  # noqa: F401
except ImportError as _exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise BeamNotInstalled(f"jetbench.beam needs Apache Beam, which is not installed: {INSTALL_HINT}") from _exc

from .options import JetbenchOptions  # noqa: E402
from .result import JetbenchPipelineResult  # noqa: E402
from .runner import JetbenchRunner  # noqa: E402

__all__ = [
    "BeamNotInstalled",
    "BeamRunnerError",
    "BeamStageError",
    "JetbenchOptions",
    "JetbenchPipelineResult",
    "JetbenchRunner",
    "UnsupportedBeamFeature",
]
