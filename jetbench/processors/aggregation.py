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
from .builder_kind import (
    AGGREGATE_IMPORT,
    KEY,
    OP,
    VALUE,
    Kind,
    Reader,
    operation,
    operation_code,
    read_operation,
    single_instance,
    value_fn,
)
from .emitter import EmittingProcessor
from .planning import Output, Planner, PlanNode, StageSpec, pair_key
from .snapshotting import EntrySaver
from .supplier import ProcessorSupplier, made_by, set_builder_code

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


def accumulate_by_key(key_fn: Callable[[Any], Hashable], op: AggregateOperation) -> ProcessorSupplier:
    """Stage-1 supplier: emits ``(key, accumulator)`` when its input completes."""
    op = require_operation(op, "accumulate_by_key()")
    return ProcessorSupplier(AccumulateByKeyP, key_fn, op, label="accumulate_by_key")


def combine_by_key(op: AggregateOperation) -> ProcessorSupplier:
    """Stage-2 supplier: combines ``(key, accumulator)`` pairs, emits ``(key, result)``."""
    op = require_operation(op, "combine_by_key()")
    if op.combine is None:
        raise JetbenchError("combine_by_key needs an AggregateOperation with combine")
    return ProcessorSupplier(CombineByKeyP, op, label="combine_by_key")


def aggregate_by_key(key_fn: Callable[[Any], Hashable], op: AggregateOperation) -> ProcessorSupplier:
    """Single-stage supplier: emits ``(key, result)`` when its input completes."""
    op = require_operation(op, "aggregate_by_key()")
    return ProcessorSupplier(AccumulateByKeyP, key_fn, op, finish=True, label="aggregate_by_key")


def _no_key(item: Any) -> None:
    return None


set_builder_code(_no_key, "None")


def global_accumulate(op: AggregateOperation) -> ProcessorSupplier:
    """Global stage 1: emits ``(None, accumulator)`` when its input completes."""
    op = require_operation(op, "global_accumulate()")
    return ProcessorSupplier(AccumulateByKeyP, _no_key, op, label="global_accumulate")


def global_combine(op: AggregateOperation) -> ProcessorSupplier:
    """Global stage 2 (parallelism 1): combines stage-1 accumulators, emits the one result."""
    op = require_operation(op, "global_combine()")
    if op.combine is None:
        raise JetbenchError("global_combine needs an AggregateOperation with combine")
    return ProcessorSupplier(CombineByKeyP, op, values_only=True, emit_empty=True, label="global_combine")


def global_aggregate(op: AggregateOperation) -> ProcessorSupplier:
    """Global single stage (parallelism 1): emits the one result, ``finish(create())`` if empty."""
    op = require_operation(op, "global_aggregate()")
    return ProcessorSupplier(AccumulateByKeyP, _no_key, op, finish=True, values_only=True, emit_empty=True,
                             label="global_aggregate")


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


def _kind_of(supplier: Any) -> str | None:
    """Which of the six aggregation kinds made ``supplier`` (None: another processor)."""
    if made_by(supplier, AccumulateByKeyP):
        keyed = supplier.key_fn is not _no_key
        if supplier.finish:
            return "aggregate_by_key" if keyed and not supplier.values_only else \
                "global_aggregate" if not keyed and supplier.values_only else None
        return "accumulate_by_key" if keyed else "global_accumulate"
    if made_by(supplier, CombineByKeyP):
        return "global_combine" if supplier.values_only else "combine_by_key"
    return None


def _aggregation_kind(name: str, label: str, keyed: bool, description: str, **extra: Any) -> Kind:
    """The kind of the aggregation supplier ``name([key,] op)``; its code is the same call."""
    make = globals()[name]

    def build(p: dict[str, Any], f: dict[str, Any], ns: dict[str, Any]) -> Any:
        op = operation(p["op"], value_fn(p, f))
        return make(f["key"], op) if keyed else make(op)

    def code(p: dict[str, Any], f: dict[str, Any]) -> tuple[str, set[str]]:
        op = operation_code(p["op"], value_fn(p, f))
        return (f"{name}({f['key']}, {op})" if keyed else f"{name}({op})"), \
            {f"from jetbench.processors import {name}", AGGREGATE_IMPORT}

    def read(supplier: Any, reader: Reader) -> dict[str, Any] | None:
        if _kind_of(supplier) != name:
            return None
        params = read_operation(supplier.op, reader)
        if keyed:
            params["key"] = reader.code(supplier.key_fn, "key")
        return params

    return Kind(name, label, "aggregate", True, True, (KEY, OP, VALUE) if keyed else (OP, VALUE), build, code,
                description, read=read, **extra)


BUILDER_KINDS = (
    _aggregation_kind("aggregate_by_key", "aggregate by key", True, "emits (key, result) when the input completes"),
    _aggregation_kind("accumulate_by_key", "accumulate by key", True, "stage 1 of two: emits (key, accumulator)"),
    _aggregation_kind("combine_by_key", "combine by key", False, "stage 2 of two: combines (key, accumulator) pairs"),
    _aggregation_kind("global_aggregate", "aggregate (global)", False,
                      "one result over all items, when the input completes", parallelism=1,
                      check=single_instance("a global aggregate")),
    _aggregation_kind("global_accumulate", "accumulate (global)", False,
                      "stage 1 of two: emits (None, accumulator) per instance"),
    _aggregation_kind("global_combine", "combine (global)", False,
                      "stage 2 of two: combines the accumulators into the one result", parallelism=1,
                      check=single_instance("a global combine")),
)
