"""The rolling aggregate: Jet's ``rollingAggregate``, the running result of an aggregate
operation after every item, per key or over all items, on batches and streams alike.

>>> from jetbench import Pipeline, aggregate, run, sinks, sources
>>> p = Pipeline()
>>> sales = p.read_from(sources.items([("tea", 3), ("pen", 2), ("tea", 4)]))
>>> _ = sales.group_by(lambda s: s[0]).rolling_aggregate(aggregate.summing(lambda s: s[1])).write_to(sinks.collect())
>>> run(p)
[('tea', 3), ('pen', 2), ('tea', 7)]
>>> p = Pipeline()
>>> _ = p.read_from(sources.items([5, 1, 7, 3])).rolling_aggregate(aggregate.max_by(lambda x: x)) \\
...     .write_to(sinks.collect())
>>> run(p)
[5, 5, 7, 7]
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from ..core.errors import JetbenchError
from ..core.inbox import Inbox
from .aggregate_operation import AggregateOperation, require_operation
from .builder_kind import single_instance
from .emitter import EmittingProcessor
from .kind_params import KindParamError, KindParams, aggregate_op, code, flag
from .planning import Planner, PlanNode, StageSpec, plan_by_key
from .snapshotting import EntrySaver

_MISSING = object()
#: accumulator types that cannot change after they were emitted (no copy needed)
_IMMUTABLE = frozenset({int, float, bool, str, bytes, complex, frozenset, tuple, type(None)})


class RollingAggregateP(EmittingProcessor):
    """After every item, the running result of ``op`` over the items so far of its key
    (``key_fn(item)``; None: over all items): ``(key, result)`` keyed, ``result`` global;
    ``(ts, ...)`` for ``(ts, item)`` pairs when ``timestamped``. A result is ``op.finish(acc)``,
    or without ``finish`` a copy of a mutable accumulator, so later items never change an
    emitted result.

    Snapshots: the results of the items taken before the barrier go out first; then one
    ``(key, acc)`` entry per key (restored into the instance owning the key; accumulators of one
    key from two instances are combined, which needs ``op.combine``).
    """

    snapshot_support: ClassVar[str] = "supported"

    def __init__(self, key_fn: Callable[[Any], Hashable] | None, op: AggregateOperation, timestamped: bool = False):
        self.key_fn = key_fn
        self.op = op
        self.timestamped = timestamped
        self.accs: dict[Hashable, Any] = {}
        self._saver = EntrySaver()

    def _result(self, acc: Any) -> Any:
        finish = self.op.finish
        if finish is not None:
            return finish(acc)
        return acc if type(acc) in _IMMUTABLE else copy.copy(acc)

    def process(self, ordinal: int, inbox: Inbox) -> None:
        emitter = self._emitter
        room = emitter.free_room()
        if room <= 0:
            return
        accs, key_fn, result = self.accs, self.key_fn, self._result
        create, accumulate = self.op.create, self.op.accumulate
        out: list[Any] = []
        for entry in inbox.take(room):
            item = entry[1] if self.timestamped else entry
            key = None if key_fn is None else key_fn(item)
            acc = accs.get(key, _MISSING)
            accs[key] = acc = accumulate(create() if acc is _MISSING else acc, item)
            value = result(acc) if key_fn is None else (key, result(acc))
            out.append((entry[0], value) if self.timestamped else value)
        if out:
            emitter.emit(out)

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():
            return False
        return self._saver.save(self.outbox, lambda: list(self.accs.items()))

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        accs = self.accs
        for key, acc in inbox.take():
            current = accs.get(key, _MISSING)
            if current is _MISSING:
                accs[key] = acc
                continue
            combine = self.op.combine
            if combine is None:
                raise JetbenchError(f"vertex {self.context.vertex_name!r}: key {key!r} was restored twice and its "
                                    "aggregate operation has no combine to merge them")
            accs[key] = combine(current, acc)


@dataclass(frozen=True, eq=False, repr=False)
class RollingAggregate(KindParams, StageSpec):
    """The rolling aggregate's parameters, its vertex supplier (``rolling_aggregate``) and its
    pipeline stage (``stage.rolling_aggregate(op)``, ``stage.group_by(key_fn).rolling_aggregate(op)``).

    Planning: keyed, one vertex behind an edge partitioned by the item's key; global, one vertex
    of parallelism 1 behind an all-to-one edge (the running result is over all items); items
    keep their timestamps (the plan sets ``timestamped``).
    """

    key_fn: Callable[[Any], Hashable] | None = code("", optional=True, required=True,
                                                    help="grouping key (empty: one running result over all items)")
    op: AggregateOperation = aggregate_op()
    timestamped: bool = flag(help="items are (ts, item) pairs: the results keep ts")
    processor = RollingAggregateP
    function = "rolling_aggregate"
    kind: ClassVar[str] = "rolling_aggregate"

    def check(self) -> None:
        require_operation(self.op, "rolling_aggregate()", KindParamError)

    def describe(self) -> str:
        return f"rolling_aggregate({'keyed' if self.key_fn is not None else 'global'})"

    def plan(self, planner: Planner, node: PlanNode) -> None:
        plan_by_key(planner, node, self.key_fn, lambda ts: replace(self, timestamped=ts))


#: the rolling aggregate's vertex supplier (its declaration, `RollingAggregate`)
rolling_aggregate = RollingAggregate


def _check(v: dict[str, Any], inbound: list[dict[str, Any]], outbound: list[dict[str, Any]]) -> list[tuple[str, str]]:
    if v["params"].get("key_fn"):
        return []
    return single_instance("a global rolling aggregate")(v, inbound, outbound)


BUILDER_KINDS = (
    RollingAggregate.builder_kind(id="rolling_aggregate", label="rolling aggregate", category="aggregate",
                                  inputs=True, outputs=True, check=_check,
                                  description="after every item, the running result (per key, or over all items)"),
)
