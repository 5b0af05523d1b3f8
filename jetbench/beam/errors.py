"""The Beam runner's errors, all `JetbenchError`s; this module needs no Beam.

>>> from jetbench.beam.errors import UnsupportedBeamFeature
>>> issubclass(UnsupportedBeamFeature, BeamRunnerError)
True
"""

from __future__ import annotations

from ..core.errors import JetbenchError

#: what to install for the Beam runner (the extra pins the Beam version it was written for)
INSTALL_HINT = "pip install jetbench[beam]"


class BeamRunnerError(JetbenchError):
    """Anything the Beam runner refuses or reports."""


class BeamNotInstalled(BeamRunnerError, ImportError):
    """``jetbench.beam`` was imported without apache-beam installed."""


class UnsupportedBeamFeature(BeamRunnerError):
    """The pipeline uses a Beam feature this runner does not run (refused before anything runs)."""


class BeamStageError(BeamRunnerError):
    """A Beam step failed inside a jetbench vertex: the message names both, then Beam's report."""

    def __init__(self, message: str, step: str | None = None, vertex: str | None = None):
        super().__init__(message)
        self.step = step
        self.vertex = vertex


__all__ = ["INSTALL_HINT", "BeamNotInstalled", "BeamRunnerError", "BeamStageError", "UnsupportedBeamFeature"]
