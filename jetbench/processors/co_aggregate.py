"""Co-aggregation: several batch inputs, each folded by its own aggregate operation, grouped
together (by key, or all in one group) when every input completes: Jet's ``aggregate2``,
``aggregate3`` and ``aggregateBuilder`` (``AggregateOperations.aggregateOperation2/3``).

`CoAggregateP` is the one co-grouping loop: `jetbench.processors.co_group.CoGroupP` is the same
processor with `to_list` on both inputs. With a window, the Pipeline API tags each input's items
``(side, key, item)`` (`Tag`), merges them and window-aggregates them by key with
`co_aggregate_operation`, which folds a tagged item into its side's accumulator.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any, ClassVar

from ..core.dag import Routing
from ..core.errors import JetbenchError
from ..core.inbox import Inbox
from .aggregate_operation import AggregateOperation, require_operation, to_list
from .builder_kind import Unreadable, single_instance
from .emitter import EmittingProcessor
from .kind_params import KindParamError, KindParams, aggregate_op, code, planned
from .planning import Output, Planner, PlanNode, StageSpec
from .snapshotting import EntrySaver
from .supplier import set_builder_code

Key = Callable[[Any], Hashable]


def no_key(item: Any) -> None:
    """The key of every item of a global (not grouped) co-aggregation: one group."""
    return None


set_builder_code(no_key, "None")

#: the snapshot entry of a global co-aggregation that began emitting (its result is not due again)
_EMITTED = ("co_aggregate", "emitted")


class CoAggregateP(EmittingProcessor):
    """Co-aggregation of inputs 0..N-1: an item of input ``i`` goes into the accumulator of
    ``ops[i]`` in the group of ``key_fns[i](item)``. When every input is exhausted it emits, per
    group in the order keys were first seen, ``(key, (result 0, ..., result N-1))``; ``keyed=False``
    emits the results alone, and ``(finish(create()), ...)`` when no item came at all.

    Snapshots: one ``(key, (accumulators))`` entry per group (restored into the instance owning
    the key; two instances' accumulators of one key are combined); once ``complete()`` has begun,
    only the groups not yet emitted.
    """

    snapshot_support: ClassVar[str] = "supported"

    def __init__(self, key_fns: tuple[Key, ...], ops: tuple[AggregateOperation, ...], keyed: bool = True):
        self.key_fns = key_fns
        self.ops = ops
        self.keyed = keyed
        self.groups: dict[Hashable, list[Any]] = {}
        self._results: Iterator[Any] | None = None
        self._emitted = 0  # groups complete() has handed to the emitter
        self._empty_due = not keyed  # a global result is due even without items
        self._saver = EntrySaver()

    def _new_group(self) -> list[Any]:
        return [op.create() for op in self.ops]

    def process(self, ordinal: int, inbox: Inbox) -> None:
        groups, key, op = self.groups, self.key_fns[ordinal], self.ops[ordinal]
        new_group, accumulate = self._new_group, op.accumulate
        lists = op is to_list()  # co_group's sides: to_list's accumulate without the call
        for item in inbox.take():
            k = key(item)
            accs = groups.get(k)
            if accs is None:
                accs = groups[k] = new_group()
            if lists:
                accs[ordinal].append(item)
            else:
                accs[ordinal] = accumulate(accs[ordinal], item)

    def result(self, key: Hashable, accs: list[Any]) -> Any:
        """What a group emits."""
        values = tuple(op.finish_fn(acc) for op, acc in zip(self.ops, accs, strict=True))
        return (key, values) if self.keyed else values

    def complete(self) -> bool:
        if self._results is None:
            if self._empty_due and not self.groups:
                self.groups[None] = self._new_group()
            self._empty_due = False
            self._results = self._groups_from(0)
        if self._emitter.emit_from(self._results):
            self.groups = {}
            return True
        return False

    def _groups_from(self, start: int) -> Iterator[Any]:
        result = self.result
        for k, accs in islice(self.groups.items(), start, None):
            self._emitted += 1
            yield result(k, accs)

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():  # groups taken before the barrier go first
            return False
        began = self._results is not None
        skip = self._emitted if began else 0

        def entries() -> Iterator[tuple[Hashable, Any]]:
            if began and not self.keyed:
                yield _EMITTED, None
            for k, accs in islice(self.groups.items(), skip, None):
                yield k, tuple(accs)

        return self._saver.save(self.outbox, entries)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        groups = self.groups
        for key, accs in inbox.take():
            if key == _EMITTED and not self.keyed:
                self._empty_due = False
                continue
            group = groups.get(key)
            if group is None:
                groups[key] = list(accs)
                continue
            for i, (op, acc) in enumerate(zip(self.ops, accs, strict=True)):
                if op.combine is None:
                    raise JetbenchError(f"co-aggregation: two snapshots hold key {key!r} and the operation of "
                                        f"input {i} has no combine to join them")
                group[i] = op.combine(group[i], acc)


def co_aggregate_operation(*ops: AggregateOperation) -> AggregateOperation:
    """One aggregate operation over tagged items ``(side, key, item)`` (`Tag`): ``ops[side]``
    folds the items of its side; the result is the tuple of the sides' results (Jet's
    ``AggregateOperations.aggregateOperation2/3`` and ``aggregateOperationBuilder``). It combines
    (and deducts) when every operation does.

    >>> from jetbench.processors.aggregate_operation import counting, to_list
    >>> op = co_aggregate_operation(counting(), to_list())
    >>> acc = op.create()
    >>> for tagged in [(0, "k", "a"), (1, "k", "b"), (0, "k", "c")]:
    ...     acc = op.accumulate(acc, tagged)
    >>> op.finish(acc)
    (2, ['b'])
    """
    if not ops:
        raise JetbenchError("co_aggregate_operation() needs at least one AggregateOperation")
    ops = tuple(require_operation(op, f"co_aggregate_operation() argument {i + 1}") for i, op in enumerate(ops))
    accumulates = tuple(op.accumulate for op in ops)
    creates = tuple(op.create for op in ops)
    finishes = tuple(op.finish_fn for op in ops)
    lists = all(op is to_list() for op in ops)  # co_group's: the per-group calls cut to C where they can be

    def create() -> list[Any]:
        return [c() for c in creates]

    def accumulate(acc: list[Any], tagged: tuple[int, Hashable, Any]) -> list[Any]:
        side = tagged[0]
        acc[side] = accumulates[side](acc[side], tagged[2])
        return acc

    def append(acc: list[Any], tagged: tuple[int, Hashable, Any]) -> list[Any]:
        acc[tagged[0]].append(tagged[2])  # to_list's accumulate, without the call
        return acc

    def finish(acc: list[Any]) -> tuple[Any, ...]:
        return tuple([f(a) for f, a in zip(finishes, acc, strict=True)])

    def sides(fns: tuple[Callable[[Any, Any], Any] | None, ...]) -> Callable[[list[Any], list[Any]], list[Any]] | None:
        if any(fn is None for fn in fns):
            return None

        def each(a: list[Any], b: list[Any]) -> list[Any]:
            return [fn(x, y) for fn, x, y in zip(fns, a, b, strict=True)]  # type: ignore[misc]

        return each

    return AggregateOperation(
        create=create,
        accumulate=append if lists else accumulate,
        combine=sides(tuple(op.combine for op in ops)),
        finish=tuple if all(op.finish is None for op in ops) else finish,
        deduct=sides(tuple(op.deduct for op in ops)),
    )


class Tag:
    """Marks an item with its side of a windowed co-aggregation (or co_group) and its key:
    ``(side, key, item)`` (``side`` and ``key_fn`` are public for tools)."""

    def __init__(self, side: int, key_fn: Key):
        self.side, self.key_fn = side, key_fn
        self.__name__ = f"tag-{side}"

    def __call__(self, item: Any) -> tuple[int, Hashable, Any]:
        return self.side, self.key_fn(item), item


def tag_key(tagged: tuple[int, Hashable, Any]) -> Hashable:
    """The key of a tagged item."""
    return tagged[1]


set_builder_code(tag_key, "x[1]")


@dataclass(frozen=True, eq=False, repr=False)
class CoAggregate(KindParams, StageSpec):
    """The co-aggregation's parameters, its vertex supplier (``co_aggregate``) and its pipeline
    stage (``stage.aggregate2(op0, other, op1)``, ``aggregate3``, ``aggregate_builder``, keyed
    after ``group_by``): input 0 folded by ``op0`` (grouped by ``key0``), input 1 by ``op1``
    (grouped by ``key1``), inputs 2, 3, ... as ``more`` says (``(key, op)`` pairs). Without keys
    (``key0 = key1 = None``) every item is in one group and the vertex emits one tuple.

    Planning: keyed, each input partitioned by its own key, so a key's items of every input meet
    in one instance; global, one instance takes every input.

    >>> from jetbench.processors.aggregate_operation import counting, summing
    >>> co_aggregate(len, counting(), abs, summing())
    co_aggregate(2 inputs)
    >>> co_aggregate(len, counting(), None, summing())
    Traceback (most recent call last):
        ...
    jetbench.processors.kind_params.KindParamError: co_aggregate: key0 and key1 must both be functions (keyed) or both be None (global), got len, None
    """

    key0: Key | None = code("x", help="key of an item of input 0 (empty: all items in one group)", optional=True,
                            required=True)
    op0: AggregateOperation = aggregate_op()
    key1: Key | None = code("x", help="key of an item of input 1 (empty when key0 is)", optional=True,
                            required=True)
    op1: AggregateOperation = aggregate_op()
    more: tuple[tuple[Key | None, AggregateOperation], ...] = planned(())
    processor = CoAggregateP
    function = "co_aggregate"
    kind: ClassVar[str] = "co_aggregate"

    @property
    def keyed(self) -> bool:
        return self.key0 is not None

    def check(self) -> None:
        require_operation(self.op0, "co_aggregate: op0", KindParamError)
        require_operation(self.op1, "co_aggregate: op1", KindParamError)
        keys = [self.key0, self.key1, *(k for k, _ in self._more())]
        if any(k is None for k in keys) != all(k is None for k in keys):
            shown = ", ".join(getattr(k, "__name__", None) or repr(k) for k in keys)
            names = ", ".join(f"key{i}" for i in range(len(keys) - 1)) + f" and key{len(keys) - 1}"
            each = "both" if len(keys) == 2 else "all"
            raise KindParamError(f"co_aggregate: {names} must {each} be functions (keyed) or {each} be None "
                                 f"(global), got {shown}")
        for i, (k, op) in enumerate(self._more(), start=2):
            if k is not None and not callable(k):
                raise KindParamError(f"co_aggregate: the key of input {i} must be callable or None, got {k!r}")
            require_operation(op, f"co_aggregate: the operation of input {i}", KindParamError)

    def _more(self) -> tuple[tuple[Key | None, AggregateOperation], ...]:
        if not isinstance(self.more, tuple) or not all(isinstance(m, tuple) and len(m) == 2 for m in self.more):
            raise KindParamError(f"co_aggregate: more must be a tuple of (key function, operation) pairs, "
                                 f"got {self.more!r}")
        return self.more

    def arguments(self) -> dict[str, Any]:
        keys = (self.key0, self.key1, *(k for k, _ in self.more))
        return {"key_fns": tuple(k or no_key for k in keys), "ops": (self.op0, self.op1, *(op for _, op in self.more)),
                "keyed": self.keyed}

    def describe(self) -> str:
        return f"co_aggregate({2 + len(self.more)} inputs)"

    def plan(self, planner: Planner, node: PlanNode) -> None:
        arguments = self.arguments()
        if self.keyed:
            vertex = planner.vertex(node.name, self, node.local_parallelism)
            for i, (up, key) in enumerate(zip(node.upstream, arguments["key_fns"], strict=True)):
                planner.connect(up, vertex, ordinal=i, routing=Routing.PARTITIONED, key_fn=key, plain=True)
        else:
            vertex = planner.vertex(node.name, self, 1)
            for i, up in enumerate(node.upstream):
                planner.connect(up, vertex, ordinal=i, routing=Routing.ALL_TO_ONE, plain=True)
        planner.produce(node, Output(vertex, False))

    @classmethod
    def read(cls, supplier: Any, reader: Any) -> dict[str, Any] | None:
        if isinstance(supplier, cls) and supplier.more:
            raise Unreadable(f"a co-aggregation of {2 + len(supplier.more)} inputs (the palette's has two)")
        return super().read(supplier, reader)


#: the co-aggregation's vertex supplier (its declaration, see `CoAggregate`)
co_aggregate = CoAggregate


# -- in the DAG builder ---------------------------------------------------------------------------


def partitioned_inputs(v: dict[str, Any], inbound: list[dict[str, Any]], outbound: list[dict[str, Any]]
                       ) -> list[tuple[str, str]]:
    """The builder's check of a vertex grouping its inputs by key: each input partitioned."""
    if v["parallelism"] == 1:
        return []
    return [(f"input {e['target_ordinal']} should be partitioned by its key: equal keys must meet in one instance",
             "warning") for e in inbound if e["routing"] != "partitioned"]


_one_instance = single_instance("a global co-aggregation")


def _check(v: dict[str, Any], inbound: list[dict[str, Any]], outbound: list[dict[str, Any]]) -> list[tuple[str, str]]:
    if v["params"].get("key0"):
        return partitioned_inputs(v, inbound, outbound)
    return _one_instance(v, inbound, outbound)


def _edge_defaults(p: dict[str, Any], ordinal: int) -> dict[str, Any]:
    key = p.get(f"key{ordinal}")
    return {"routing": "partitioned", "key": key} if ordinal in (0, 1) and key else {}


BUILDER_KINDS = (
    CoAggregate.builder_kind(id="co_aggregate", label="co-aggregate", category="join", inputs=True, outputs=True,
                             description="emits (key, (result 0, result 1)) per key, each input folded by its own "
                                         "operation, when both inputs complete (no keys: one (result 0, result 1))",
                             in_ports=("input 0", "input 1"), edge_defaults=_edge_defaults, check=_check),
)

__all__ = ["CoAggregate", "CoAggregateP", "Tag", "co_aggregate", "co_aggregate_operation", "no_key", "tag_key"]
