"""The Pipeline API and its planner."""

from .connectors import Sink, Source
from .stages import GroupedStage, Pipeline, SinkStage, Stage, WindowedStage

__all__ = ["GroupedStage", "Pipeline", "Sink", "SinkStage", "Source", "Stage", "WindowedStage"]
