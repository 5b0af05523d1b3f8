"""The Pipeline API and its planner."""

from .connectors import Sink, Source
from .errors import PipelineError
from .stages import GroupedStage, Pipeline, SinkStage, Stage, WindowedStage

__all__ = ["GroupedStage", "Pipeline", "PipelineError", "Sink", "SinkStage", "Source", "Stage", "WindowedStage"]
