"""Early results of windows (Jet's ``WindowDefinition.setEarlyResultsPeriod``): the timer the
window processors share. Every period of processing time (the processor context's clock, a
`MockClock` in tests) each window not closed yet emits its current result; the final result
still comes when the watermark passes the window's end.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..core.clock import Clock
from ..core.errors import JetbenchError
from ..core.processor import Processor
from .aggregate_operation import AggregateOperation
from .emitter import Emitter
from .window_definition import WindowDefinition


class EarlyResults:
    """When a window processor emits its early results: every ``period_ms`` (0: never) of its
    context's clock from `start`.

    >>> from jetbench.core.clock import MockClock
    >>> from jetbench.core.outbox import Outbox
    >>> clock, box = MockClock(), Outbox(1)
    >>> early = EarlyResults(100)
    >>> early.start(clock)
    >>> emitter = Emitter(box)
    >>> early.try_emit(emitter, clock, lambda: [("early", 1)]), box.take_bucket(0)
    (True, [])
    >>> clock.advance(0.1)
    >>> early.try_emit(emitter, clock, lambda: [("early", 1)]), box.take_bucket(0)
    (True, [('early', 1)])
    """

    __slots__ = ("next_at", "period_ns")

    def __init__(self, period_ms: int):
        self.period_ns = period_ms * 1_000_000  # whole nanoseconds: a period is never missed by rounding
        self.next_at: float = math.inf

    def start(self, clock: Clock) -> None:
        """The first early results one period from now (none when the period is 0)."""
        self.next_at = clock.monotonic_ns() + self.period_ns if self.period_ns else math.inf

    def try_emit(self, emitter: Emitter, clock: Clock, results: Callable[[], list[Any]]) -> bool:
        """A processor's ``try_process``: when a period has passed, emit ``results()`` (the
        current results, made without changing the state); True once nothing is pending."""
        if not emitter.flush():
            return False
        if self.next_at == math.inf:
            return True
        now = clock.monotonic_ns()
        if now < self.next_at:
            return True
        self.next_at = now + self.period_ns
        out = results()
        return emitter.emit(out) if out else True

    def wake_time(self, emitter: Emitter) -> float | None:
        """A processor's ``next_wake_time`` (for a timer-aware idle strategy): when the next early
        results are due, in ``clock.monotonic()`` seconds; +inf without early results (the
        processor is input-driven then); None (cannot tell) while results wait for room."""
        if emitter.pending:
            return None
        return self.next_at / 1e9


class EarlyResultsProcessor(Processor):
    """What a window processor with early results adds to `Processor`: ``try_process`` emits
    them when due (`EarlyResults.try_emit` of ``_early_results()``), ``next_wake_time`` says when
    (`EarlyResults.wake_time`: +inf without early results, so the window stays input-driven for
    a timer-aware idle strategy). The subclass sets ``_early`` and ``_emitter``."""

    _early: EarlyResults
    _emitter: Emitter

    def _early_results(self) -> list[Any]:
        raise NotImplementedError

    def try_process(self) -> bool:
        return self._early.try_emit(self._emitter, self.context.clock, self._early_results)

    def next_wake_time(self) -> float | None:
        return self._early.wake_time(self._emitter)


def check_early_results(op: AggregateOperation, window_def: WindowDefinition) -> None:
    """Early results copy the accumulators through ``combine``: the operation must have it."""
    if window_def.early_results_ms and op.combine is None:
        raise JetbenchError(
            f"{window_def!r}: early results need an AggregateOperation with combine (each is made from a copy "
            "of the window's accumulators, combined into a new one)"
        )
