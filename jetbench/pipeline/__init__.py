"""The Pipeline API and its planner."""

from ..processors.hash_join import JoinClause
from .connectors import Sink, Source
from .errors import PipelineError
from .stages import (
           AggregateBuilder,
           GroupedStage,
           HashJoinBuilder,
           Pipeline,
           SinkStage,
           Stage,
           WindowedStage,
)

__all__ = ["AggregateBuilder", "GroupedStage", "HashJoinBuilder", "JoinClause", "Pipeline", "PipelineError", "Sink",
           "SinkStage", "Source", "Stage", "WindowedStage"]
