"""The aggregation processors: one or two stages (Jet's accumulate -> partitioned edge ->
combine), keyed by a function or global (one group).

Two-stage needs the operation's ``combine``; single stage accumulates and finishes in one
vertex.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from ..core.dag import Routing
from ..core.errors import JetbenchError
from ..core.inbox import Inbox
from ..core.items import BroadcastKey
from ..core.native import mypyc_attr
from .aggregate_operation import (
    AggregateOperation,
    _identity,
    adds_one,
    is_identity,
    require_operation,
)
from .builder_kind import single_instance
from .emitter import EmittingProcessor
from .kind_params import KindParamError, KindParams, aggregate_op, code
from .planning import Output, Planner, PlanNode, StageSpec, pair_key
from .snapshotting import EntrySaver
from .supplier import set_builder_code

_MISSING = object()


@mypyc_attr(allow_interpreted_subclasses=True)
class _KeyedEmitterP(EmittingProcessor):
    """Holds key -> accumulator and emits ``(key, finish(acc))`` pairs from ``complete()``.

    ``values_only`` emits just the values (a global aggregate, all under one key), and
    ``emit_empty`` then emits ``finish(create())`` when no item arrived at all.

    Snapshots: the state is one ``(key, accumulator)`` entry per group (each restored into the
    instance owning the key; accumulators of one key from two instances are combined); once
    ``complete()`` has begun, only the groups not yet emitted, and a broadcast marker that the
    empty result is no longer due.
    """

    snapshot_support: ClassVar[str] = "supported"

    def __init__(self, op: AggregateOperation, finish: bool, values_only: bool = False, emit_empty: bool = False):
        self.op = op
        self.groups: dict[Hashable, Any] = {}
        self._finish = op.finish_fn if finish else None
        self._values_only = values_only
        self._emit_empty = emit_empty
        self._order: list[Hashable] | None = None  # the keys complete() emits, in order
        self._emitted = 0  # how many of them went out
        self._saver = EntrySaver()

    def complete(self) -> bool:
        groups = self.groups
        if self._order is None:
            if self._emit_empty and not groups:
                groups[None] = self.op.create()
            self._order = list(groups)
        emitter = self._emitter
        room = emitter.free_room()
        if room <= 0:
            return False
        keys = self._order[self._emitted:self._emitted + room]
        self._emitted += len(keys)
        if keys:
            finish = self._finish
            results: list[Any]
            if self._values_only:
                results = [groups[k] for k in keys] if finish is None else [finish(groups[k]) for k in keys]
            else:
                results = [(k, groups[k]) for k in keys] if finish is None else [(k, finish(groups[k])) for k in keys]
            emitter.emit(results)
        if self._emitted >= len(self._order) and not emitter.pending:
            self.groups = {}
            self._order, self._emitted = [], 0
            return True
        return False

    def _state(self) -> Iterator[tuple[Any, Any]]:
        groups = self.groups
        if self._order is None:  # the groups as they are now, copied at C speed (dict.copy: mypyc
            return iter(groups.copy().items())  # compiles list(d.items()) to a loop 2x slower)
        rest = [(k, groups[k]) for k in self._order[self._emitted:]]
        return iter([(BroadcastKey("emitting"), True), *rest] if self._emit_empty else rest)

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():  # results already taken belong before the barrier
            return False
        return self._saver.save(self.outbox, self._state)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        groups = self.groups
        combine = self.op.combine
        entries = inbox.take()
        if not groups:  # the usual restore: one entry per key, no marker; the dict built in C
            fresh = dict(entries)
            if len(fresh) == len(entries) and BroadcastKey not in set(map(type, fresh)):
                self.groups = fresh
                return
        for key, value in entries:
            if isinstance(key, BroadcastKey):
                if key.key == "emitting":
                    self._emit_empty = False  # the empty result went out (or a group will)
                continue
            if key in groups:
                if combine is None:
                    raise JetbenchError(f"vertex {self.context.vertex_name!r}: key {key!r} was restored twice and "
                                        "the operation has no combine")
                groups[key] = combine(groups[key], value)
            else:
                groups[key] = value


@mypyc_attr(allow_interpreted_subclasses=True)
class AccumulateByKeyP(_KeyedEmitterP):
    """Stage 1 (or single stage with ``finish=True``): fold items into per-key accumulators.

    Batch kernels: an operation with ``accumulate_groups`` folds each inbox batch in one call
    (counting: ``Counter.update(groups, map(key_fn, batch))``, the loop in C; an identity key
    function, `is_identity`, is not even called: ``Counter.update(groups, batch)``); a global
    aggregate (no key) whose operation has ``accumulate_all`` folds each batch in one call of
    that; other operations go item by item through ``create`` and ``accumulate``.
    """

    def __init__(self, key_fn: Callable[[Any], Hashable], op: AggregateOperation, finish: bool = False,
                 values_only: bool = False, emit_empty: bool = False):
        super().__init__(op, finish, values_only, emit_empty)
        self.key_fn = key_fn
        self._fold_all = op.accumulate_all if key_fn is _no_key else None
        self._fold_groups = op.accumulate_groups if self._fold_all is None else None
        self._group_key = _identity if is_identity(key_fn) else key_fn  # the kernels skip the identity

    @property
    def batch_kernel(self) -> str | None:
        """Which batch path `process` takes: ``"accumulate_groups"``, ``"accumulate_all"`` or None
        (item by item)."""
        return "accumulate_all" if self._fold_all is not None else \
            "accumulate_groups" if self._fold_groups is not None else None

    def process(self, ordinal: int, inbox: Inbox) -> None:
        fold_groups = self._fold_groups
        if fold_groups is not None:
            fold_groups(self.groups, self._group_key, inbox.take())
            return
        fold_all = self._fold_all
        if fold_all is not None:
            batch = inbox.take()
            if batch:
                acc = self.groups.get(None, _MISSING)
                self.groups[None] = fold_all(self.op.create() if acc is _MISSING else acc, batch)
            return
        groups = self.groups
        key_fn = self.key_fn
        create = self.op.create
        accumulate = self.op.accumulate
        get = groups.get
        for item in inbox.take():
            key = key_fn(item)
            acc = get(key, _MISSING)
            groups[key] = accumulate(create() if acc is _MISSING else acc, item)


@mypyc_attr(allow_interpreted_subclasses=True)
class CombineByKeyP(_KeyedEmitterP):
    """Stage 2: combine ``(key, accumulator)`` pairs from stage 1 and emit finished results."""

    def __init__(self, op: AggregateOperation, values_only: bool = False, emit_empty: bool = False):
        combine = op.combine
        if combine is None:
            raise JetbenchError("combine_by_key needs an AggregateOperation with combine")
        super().__init__(op, True, values_only, emit_empty)
        self._combine = combine

    def process(self, ordinal: int, inbox: Inbox) -> None:
        groups = self.groups
        combine = self._combine
        get = groups.get
        for key, acc in inbox.take():
            current = get(key, _MISSING)
            groups[key] = acc if current is _MISSING else combine(current, acc)


def _no_key(item: Any) -> None:
    return None


set_builder_code(_no_key, "None")


@mypyc_attr(native_class=False)  # the dataclasses below are ProcessorSuppliers, not native classes
class _Aggregation(KindParams):
    """What the six aggregation kinds share: their aggregate operation ``op``, checked (not a
    dataclass: the fields are the subclasses', in the order of their arguments)."""

    op: AggregateOperation
    #: an operation with ``combine`` is needed (the kinds that combine accumulators)
    combines = False

    def check(self) -> None:
        require_operation(self.op, f"{self.function}()", KindParamError)
        if self.combines and self.op.combine is None:
            raise KindParamError(f"{self.function} needs an AggregateOperation with combine")

    def describe(self) -> str:
        return self.function


@mypyc_attr(native_class=False)
@dataclass(frozen=True, eq=False, repr=False)
class _GlobalAggregation(_Aggregation):
    """An aggregation of ``op`` alone."""

    op: AggregateOperation = aggregate_op()


@mypyc_attr(native_class=False)
@dataclass(frozen=True, eq=False, repr=False)
class _KeyedAggregation(_Aggregation):
    """An aggregation by ``key_fn`` of ``op``."""

    key_fn: Callable[[Any], Hashable] = code("x", was=("key",), help="grouping key: an expression in x, or a function body")
    op: AggregateOperation = aggregate_op()


@mypyc_attr(native_class=False)
@dataclass(frozen=True, eq=False, repr=False)
class AccumulateByKey(_KeyedAggregation):
    """Stage-1 supplier (``accumulate_by_key(key_fn, op)``): emits ``(key, accumulator)`` when
    its input completes."""

    processor = AccumulateByKeyP
    function = "accumulate_by_key"


@mypyc_attr(native_class=False)
@dataclass(frozen=True, eq=False, repr=False)
class AggregateByKey(_KeyedAggregation):
    """Single-stage supplier (``aggregate_by_key(key_fn, op)``): emits ``(key, result)`` when its
    input completes.

    >>> from jetbench.processors import aggregate_by_key, counting
    >>> aggregate_by_key(len, counting)
    Traceback (most recent call last):
        ...
    jetbench.processors.kind_params.KindParamError: aggregate_by_key(): aggregate.counting is a factory of aggregate operations: call it, aggregate.counting()
    """

    processor = AccumulateByKeyP
    function = "aggregate_by_key"

    def arguments(self) -> dict[str, Any]:
        return {**super().arguments(), "finish": True}


@mypyc_attr(native_class=False)
@dataclass(frozen=True, eq=False, repr=False)
class CombineByKey(_GlobalAggregation):
    """Stage-2 supplier (``combine_by_key(op)``): combines ``(key, accumulator)`` pairs, emits
    ``(key, result)``."""

    processor = CombineByKeyP
    function = "combine_by_key"
    combines = True


@mypyc_attr(native_class=False)
@dataclass(frozen=True, eq=False, repr=False)
class GlobalAccumulate(_GlobalAggregation):
    """Global stage 1 (``global_accumulate(op)``): emits ``(None, accumulator)`` when its input
    completes."""

    processor = AccumulateByKeyP
    function = "global_accumulate"

    def arguments(self) -> dict[str, Any]:
        return {**super().arguments(), "key_fn": _no_key}


@mypyc_attr(native_class=False)
@dataclass(frozen=True, eq=False, repr=False)
class GlobalCombine(_GlobalAggregation):
    """Global stage 2 (``global_combine(op)``, parallelism 1): combines stage-1 accumulators,
    emits the one result."""

    processor = CombineByKeyP
    function = "global_combine"
    combines = True

    def arguments(self) -> dict[str, Any]:
        return {**super().arguments(), "values_only": True, "emit_empty": True}


@mypyc_attr(native_class=False)
@dataclass(frozen=True, eq=False, repr=False)
class GlobalAggregate(_GlobalAggregation):
    """Global single stage (``global_aggregate(op)``, parallelism 1): emits the one result,
    ``finish(create())`` if empty."""

    processor = AccumulateByKeyP
    function = "global_aggregate"

    def arguments(self) -> dict[str, Any]:
        return {**super().arguments(), "key_fn": _no_key, "finish": True, "values_only": True, "emit_empty": True}


#: the vertex suppliers of the six aggregation kinds (their declarations)
accumulate_by_key = AccumulateByKey
aggregate_by_key = AggregateByKey
combine_by_key = CombineByKey
global_accumulate = GlobalAccumulate
global_combine = GlobalCombine
global_aggregate = GlobalAggregate


# -- in the Pipeline API ------------------------------------------------------------------------


@mypyc_attr(native_class=False)  # a plain dataclass, as StageSpec (interpreted) is
@dataclass(frozen=True)
class AggregateSpec(StageSpec):
    """``stage.aggregate(op)``: one result over all items.

    Planning: with ``op.combine``, two stages (accumulate per instance -> all-to-one -> combine,
    parallelism 1); without, one vertex of parallelism 1 that sees every item.
    """

    op: AggregateOperation
    kind: ClassVar[str] = "aggregate"

    def plan(self, planner: Planner, node: PlanNode) -> None:
        op = self.op
        if op.combine is not None:
            acc = planner.vertex(f"{node.name}-accumulate", global_accumulate(op), node.local_parallelism)
            planner.connect(node.upstream[0], acc, plain=True)
            final = planner.vertex(f"{node.name}-combine", global_combine(op), 1)
            planner.link(acc, final, Routing.ALL_TO_ONE)
        else:
            final = planner.vertex(node.name, global_aggregate(op), 1)
            planner.connect(node.upstream[0], final, routing=Routing.ALL_TO_ONE, plain=True)
        planner.produce(node, Output(final, False))


@mypyc_attr(native_class=False)  # a plain dataclass, as StageSpec (interpreted) is
@dataclass(frozen=True)
class GroupAggregateSpec(StageSpec):
    """``stage.group_by(key_fn).aggregate(op)``: ``(key, result)`` per key.

    Planning: with ``op.combine``, stage 1 takes any item (unicast) and pre-aggregates what it
    sees; the edge to stage 2 is partitioned by key and carries one accumulator per key per
    instance. Without, one stage behind an edge partitioned by ``key_fn``.

    Counting after a fused map/filter/flat_map chain: the chain's vertex computes the keys too
    (``key_fn`` joins it as a last map step, called inside its comprehension instead of once
    per item from C by the kernel) and stage 1 counts the keys themselves, by an identity key:
    counting looks at the key alone, so the groups are the same, in the same order.
    """

    key_fn: Callable[[Any], Hashable]
    op: AggregateOperation
    kind: ClassVar[str] = "group_aggregate"

    def plan(self, planner: Planner, node: PlanNode) -> None:
        op, key_fn, lp = self.op, self.key_fn, node.local_parallelism
        if op.combine is not None:
            if self._keys_join_the_chain(planner, node):
                vertex = planner.output(node.upstream[0]).vertex
                assert vertex.transform is not None  # _keys_join_the_chain checked it
                vertex.transform = vertex.transform.map(key_fn)
                vertex.names.append(f"{node.name}-key")
                key_fn = _identity
            acc = planner.vertex(f"{node.name}-accumulate", accumulate_by_key(key_fn, op), lp)
            planner.connect(node.upstream[0], acc, plain=True)
            final = planner.vertex(f"{node.name}-combine", combine_by_key(op), lp)
            planner.link(acc, final, Routing.PARTITIONED, pair_key)
        else:
            final = planner.vertex(node.name, aggregate_by_key(key_fn, op), lp)
            planner.connect(node.upstream[0], final, routing=Routing.PARTITIONED, key_fn=key_fn, plain=True)
        planner.produce(node, Output(final, False))

    def _keys_join_the_chain(self, planner: Planner, node: PlanNode) -> bool:
        """Whether stage 1 counts keys computed by the fused chain before it: the operation
        counts (`adds_one`) with a batch kernel, the key is not the identity (no call to save),
        and the chain's vertex could take one more step (as `StatelessSpec.plan` fuses one)."""
        if not (planner.fuse and adds_one(self.op) and self.op.accumulate_groups is not None
                and not is_identity(self.key_fn)):
            return False
        (up,) = node.upstream
        source = planner.output(up)
        vertex = source.vertex
        return (vertex.transform is not None and not source.timestamped and not source.rebalance
                and planner.consumers(up) == 1 and vertex.local_parallelism == node.local_parallelism)


# -- in the DAG builder ---------------------------------------------------------------------------


BUILDER_KINDS = (
    AggregateByKey.builder_kind(id="aggregate_by_key", label="aggregate by key", category="aggregate", inputs=True,
                                outputs=True, description="emits (key, result) when the input completes"),
    AccumulateByKey.builder_kind(id="accumulate_by_key", label="accumulate by key", category="aggregate",
                                 inputs=True, outputs=True, description="stage 1 of two: emits (key, accumulator)"),
    CombineByKey.builder_kind(id="combine_by_key", label="combine by key", category="aggregate", inputs=True,
                              outputs=True, description="stage 2 of two: combines (key, accumulator) pairs"),
    GlobalAggregate.builder_kind(id="global_aggregate", label="aggregate (global)", category="aggregate",
                                 inputs=True, outputs=True, description="one result over all items, when the input completes",
                                 parallelism=1, check=single_instance("a global aggregate")),
    GlobalAccumulate.builder_kind(id="global_accumulate", label="accumulate (global)", category="aggregate",
                                  inputs=True, outputs=True,
                                  description="stage 1 of two: emits (None, accumulator) per instance"),
    GlobalCombine.builder_kind(id="global_combine", label="combine (global)", category="aggregate", inputs=True,
                               outputs=True, description="stage 2 of two: combines the accumulators into the one result",
                               parallelism=1, check=single_instance("a global combine")),
)
