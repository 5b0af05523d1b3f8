"""The Pipeline API's error."""

from __future__ import annotations

from ..core.errors import JetbenchError


class PipelineError(JetbenchError, ValueError):
    """A pipeline is built wrongly; the message names the stage at fault."""
