"""Source and Sink descriptors: what `Pipeline.read_from` and `Stage.write_to` take.

A descriptor names a processor supplier plus what the planner must know about it: whether
the source emits timestamped ``(ts, item)`` tuples and whether it is unbounded, and whether a
sink wants the timestamps of a timestamped stage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.processor import Processor


@dataclass(frozen=True)
class Source:
    """A pipeline source.

    ``timestamped``: the processor emits ``(ts, item)`` tuples (event time in ms) and the
    planner adds watermarks after it. ``streaming``: unbounded; batch-only stages refuse it.
    """

    name: str
    supplier: Callable[[], Processor]
    local_parallelism: int | None = None
    timestamped: bool = False
    streaming: bool = False
    allowed_lag: float = 0

    def __repr__(self) -> str:
        return f"Source({self.name!r})"


@dataclass(frozen=True)
class Sink:
    """A pipeline sink. ``accepts_timestamped``: it receives ``(ts, item)`` tuples from a
    timestamped stage (e.g. the latency sink); otherwise the planner drops the timestamps.
    ``requires_timestamped``: building refuses to attach it to a stage without timestamps."""

    name: str
    supplier: Callable[[], Any]
    local_parallelism: int | None = None
    accepts_timestamped: bool = False
    requires_timestamped: bool = False

    def __repr__(self) -> str:
        return f"Sink({self.name!r})"
