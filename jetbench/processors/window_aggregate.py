"""Event-time window aggregation, the kind: its declaration (`WindowAggregate`, the supplier
``window_aggregate`` and the pipeline stage) over its two processors, Jet's ``SlidingWindowP``
(tumbling and sliding, `jetbench.processors.sliding_window`) and ``SessionWindowP``
(`jetbench.processors.session_window`), single stage.

Input items are ``(ts, item)`` pairs (event time in ms); watermarks arrive through
``try_process_watermark``. Output items are ``(end, WindowResult(start, end, key, value))`` with
``value = op.finish_fn(acc)`` and ``key = key_fn(item)`` (None without ``key_fn``).

Lateness. A window ``[end - size, end)`` is emitted by the first watermark ``>= end``. An event
is added to the windows that contain it and have not been emitted yet; if all of them have
been emitted, it is dropped and counted in ``late_events_dropped``. A session event at ``ts``
is dropped when ``ts + gap <= `` the last watermark.

>>> from jetbench.core.inbox import Inbox
>>> from jetbench.processors.sliding_window import SlidingWindowP
>>> from jetbench.core.items import Watermark
>>> from jetbench.core.outbox import Outbox
>>> from jetbench.core.processor import ProcessorContext
>>> from jetbench.processors.aggregate_operation import counting
>>> from jetbench.processors.window_definition import tumbling
>>> p = SlidingWindowP(key_fn=None, op=counting(), window_def=tumbling(10))
>>> box = Outbox(ordinal_count=1)
>>> p.init(box, ProcessorContext("window", 0, 0, 1, 1))
>>> p.process(0, Inbox([(1, "a"), (12, "b"), (5, "c")]))
>>> p.try_process_watermark(Watermark(10)), box.take_bucket(0)
(False, [(10, WindowResult(start=0, end=10, key=None, value=2))])
>>> p.try_process_watermark(Watermark(10)), box.pending_watermark
(True, Watermark(10))
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

from ..core.processor import Processor
from .aggregate_operation import AggregateOperation, require_operation
from .early_results import check_early_results
from .kind_params import KindParamError, KindParams, aggregate_op, code, window_definition
from .planning import Planner, PlanNode, StageSpec, plan_by_key
from .session_window import SessionWindowP, check_session
from .sliding_window import SlidingWindowP, check_sliding
from .window_definition import WindowDefinition


def window_processor(key_fn: Callable[[Any], Hashable] | None, op: AggregateOperation,
                     window_def: WindowDefinition) -> Processor:
    """`SessionWindowP` or `SlidingWindowP`, by ``window_def.kind``."""
    if window_def.kind == "session":
        return SessionWindowP(key_fn, op, window_def.gap, window_def.early_results_ms)
    return SlidingWindowP(key_fn, op, window_def)


@dataclass(frozen=True, eq=False, repr=False)
class WindowAggregate(KindParams, StageSpec):
    """The parameters of a window aggregation, its vertex supplier (``window_aggregate``:
    ``(ts, item)`` pairs aggregated into windows; emits ``(end, WindowResult(start, end, key,
    value))`` as watermarks pass window ends) and its pipeline stage
    (``stage.window(w).aggregate(op)``, or grouped first: `WindowResult` items per window).

    Planning: keyed, one vertex behind an edge partitioned by the item's key; global, one
    vertex of parallelism 1 behind an all-to-one edge. Watermarks are throttled to the window's
    frame (`frame_size`).

    >>> from jetbench import Pipeline, aggregate, run, sinks, sources, window
    >>> p = Pipeline()
    >>> clicks = p.read_from(sources.items([(1, "a"), (3, "b"), (12, "a")])).add_timestamps(lambda e: e[0])
    >>> _ = clicks.group_by(lambda e: e[1]).window(window.tumbling(10)).aggregate(aggregate.counting()) \\
    ...     .write_to(sinks.collect())
    >>> for result in run(p):
    ...     print(result)
    WindowResult(start=0, end=10, key='a', value=1)
    WindowResult(start=0, end=10, key='b', value=1)
    WindowResult(start=10, end=20, key='a', value=1)
    """

    key_fn: Callable[[Any], Hashable] | None = code("", optional=True, required=True, was=("key",),
                                                    help="grouping key (empty: one global window)")
    op: AggregateOperation = aggregate_op()
    window_def: WindowDefinition = window_definition()
    processor = staticmethod(window_processor)
    function = "window_aggregate"
    kind: ClassVar[str] = "window_aggregate"
    uses_watermarks: ClassVar[bool] = True

    def check(self) -> None:
        require_operation(self.op, "window_aggregate()", KindParamError)
        kind = getattr(self.window_def, "kind", None)
        if kind == "sliding":
            check_sliding(self.op, self.window_def)
        elif kind == "session":
            check_session(self.op, self.window_def.gap)
            check_early_results(self.op, self.window_def)
        else:
            raise KindParamError(f"window_aggregate: unknown window definition {self.window_def!r}")

    def describe(self) -> str:
        return f"window_aggregate({self.window_def!r}{'' if self.key_fn is None else ', keyed'})"

    @property
    def frame_size(self) -> int | None:
        return self.window_def.frame_size

    def output_timestamped(self, inputs: bool) -> bool:
        return True

    def plan(self, planner: Planner, node: PlanNode) -> None:
        plan_by_key(planner, node, self.key_fn, lambda ts: self)  # its input is timestamped (a window's)


#: the window aggregation's vertex supplier (its declaration, `WindowAggregate`)
window_aggregate = WindowAggregate
#: the same as a pipeline stage
WindowAggregateSpec = WindowAggregate


BUILDER_KINDS = (
    WindowAggregate.builder_kind(id="window", label="window aggregate", category="window", inputs=True, outputs=True,
                                 description="aggregates (ts, item) pairs per window"),
)
