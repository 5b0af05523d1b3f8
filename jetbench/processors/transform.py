"""The transform processor: map, filter and flat_map steps, fused into one vertex (a
`Transform` chain, see `transform_chain`), in the engine, the Pipeline API and the builder.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from ..core.errors import BATCH, ITEM, JetbenchError, is_generated_code, note_failing_item
from ..core.inbox import Inbox
from ..core.items import unzip_pairs
from ..core.native import mypyc_attr
from .builder_kind import Kind, Param, Read, Reader, parse_steps, steps_text
from .emitter import EmittingProcessor
from .planning import Output, Planner, PlanNode, StageSpec
from .supplier import ProcessorSupplier, made_by
from .transform_chain import FILTER, FLAT_MAP, MAP, Transform


def _note_failing_item(exc: Exception, batch: list[Any]) -> None:
    """On a failure of the compiled chain: note on ``exc`` the input item its comprehension
    was at (``x0``, read from the generated code's frame), else the whole batch."""
    for frame, _ in reversed(list(traceback.walk_tb(exc.__traceback__))):
        if is_generated_code(frame.f_code) and "x0" in frame.f_locals:
            note_failing_item(exc, frame.f_locals["x0"], ITEM)
            return
    note_failing_item(exc, batch, BATCH)


#: the timestamps column of a batch taken as plain items: never read, never changed
_NO_TIMESTAMPS: list[Any] = []


@mypyc_attr(allow_interpreted_subclasses=True)
class TransformP(EmittingProcessor):
    """Applies a `Transform` to each inbox batch and emits the result to every outbound ordinal.

    For chains with flat_map it sizes its input batches by the observed expansion, so what the
    outbox refuses (kept until the next call) stays about one batch.

    A timestamped chain reads its input as columns (``accepts_stamped``, `Inbox.take_stamped`)
    and builds no ``(ts, item)`` tuple: a chain of maps runs on the items column and hands the
    timestamps column on as it came (the very list); any other runs `Transform.columns_fn`. It
    emits columns too, or the items alone when it drops the timestamps.
    """

    def __init__(self, transform: Transform):
        self._transform = transform
        #: the compiled chain itself (over (ts, item) pairs when timestamped), one call fewer per batch
        self._apply = transform._fn
        self.accepts_stamped = transform.timestamped
        self._apply_columns: Callable[[list[Any], list[Any]], tuple[list[Any] | None, list[Any]]] | None = (
            transform.columns_fn() if transform.timestamped else None)
        #: a chain of maps only over columns: the plain chain on the items, the timestamps as they came
        self._items_only = transform.keeps_timestamps_as_they_are
        self._apply_items = transform.items_fn() if self._items_only else self._apply
        self._expands = transform.expands
        self._ratio = 1.0

    def process(self, ordinal: int, inbox: Inbox) -> None:
        emitter = self._emitter
        if emitter.pending and not emitter.flush():
            return
        room = emitter.room()
        if room <= 0:
            return
        take = max(1, int(room / self._ratio)) if self._expands else room
        # a try costs nothing until it raises: the failing item is found on the failure path only
        ts = _NO_TIMESTAMPS  # read only on the columns path, which takes its own
        apply_columns = self._apply_columns
        if apply_columns is not None and inbox.stamped:
            ts, batch = inbox.take_stamped(take)
        else:  # plain items, or (ts, item) pairs from a producer that emits pairs: kept as pairs
            batch = inbox.take(take)
            apply_columns = None
        out_ts: list[Any] | None = None
        try:
            if apply_columns is None:
                out = self._apply(batch)
            elif self._items_only:
                out, out_ts = self._apply_items(batch), ts
            else:
                out_ts, out = apply_columns(ts, batch)
        except Exception as exc:
            if self._apply_columns is not None and apply_columns is None:
                unzip_pairs(batch)  # a timestamped chain fed other than pairs: names the entry
            _note_failing_item(exc, batch)
            raise
        if self._expands and batch:
            self._ratio = max(1.0, 0.5 * self._ratio + 0.5 * len(out) / len(batch))
        if out:
            if out_ts is None:
                emitter.emit(out)
            else:
                emitter.emit_stamped(out_ts, out)


def transform_processor(transform: Transform) -> ProcessorSupplier:
    """A vertex supplier running a (possibly fused) `Transform`."""
    if not isinstance(transform, Transform):
        raise JetbenchError(f"transform_processor() takes a Transform, got {transform!r}")
    return ProcessorSupplier(TransformP, transform, label=repr(transform))


def map_processor(fn: Callable[[Any], Any]) -> ProcessorSupplier:
    """A vertex supplier applying ``fn`` to every item."""
    return transform_processor(Transform().map(fn))


def filter_processor(fn: Callable[[Any], Any]) -> ProcessorSupplier:
    """A vertex supplier keeping the items for which ``fn`` is truthy."""
    return transform_processor(Transform().filter(fn))


def flat_map_processor(fn: Callable[[Any], Iterable[Any]]) -> ProcessorSupplier:
    """A vertex supplier emitting every item of ``fn(item)``."""
    return transform_processor(Transform().flat_map(fn))


@mypyc_attr(native_class=False)  # a plain class (pickled with a pipeline's functions)
class Peek:
    """A ``peek`` stage as a map step: calls ``fn(item)`` and returns the item."""

    __slots__ = ("fn", "__name__")

    def __init__(self, fn: Callable[[Any], Any]):
        self.fn = fn
        self.__name__ = "peek"

    def __call__(self, item: Any) -> Any:
        self.fn(item)
        return item

    def __getstate__(self) -> Any:
        return self.fn

    def __setstate__(self, state: Any) -> None:
        self.fn, self.__name__ = state, "peek"


# -- in the Pipeline API ------------------------------------------------------------------------


@mypyc_attr(native_class=False)  # a plain dataclass, as StageSpec (interpreted) is
@dataclass(frozen=True)
class StatelessSpec(StageSpec):
    """A map, filter, flat_map or peek stage: one step of a `Transform`.

    Planning: the step joins the transform vertex before it (fusion) when that vertex has no
    other consumer, no rebalance follows it, the parallelism is the same and the pipeline
    fuses; otherwise it gets a transform vertex of its own.
    """

    fn: Callable[[Any], Any]
    #: the `Transform` method this stage adds a step with
    step: ClassVar[str] = MAP

    def step_fn(self) -> Callable[[Any], Any]:
        return self.fn

    def plan(self, planner: Planner, node: PlanNode) -> None:
        (up,) = node.upstream
        source = planner.output(up)
        vertex = source.vertex
        if (
            planner.fuse
            and vertex.transform is not None
            and not source.rebalance
            and planner.consumers(up) == 1
            and vertex.local_parallelism == node.local_parallelism
        ):
            vertex.transform = getattr(vertex.transform, self.step)(self.step_fn())
            vertex.names.append(node.name)
            planner.produce(node, Output(vertex, source.timestamped))
            return
        transform = getattr(Transform(timestamped=source.timestamped), self.step)(self.step_fn())
        target = planner.vertex(node.name, None, node.local_parallelism, transform)
        planner.connect(up, target)
        planner.produce(node, Output(target, source.timestamped))


@mypyc_attr(native_class=False)  # a plain dataclass, as StageSpec (interpreted) is
@dataclass(frozen=True)
class MapSpec(StatelessSpec):
    kind: ClassVar[str] = MAP
    step: ClassVar[str] = MAP


@mypyc_attr(native_class=False)  # a plain dataclass, as StageSpec (interpreted) is
@dataclass(frozen=True)
class FilterSpec(StatelessSpec):
    kind: ClassVar[str] = FILTER
    step: ClassVar[str] = FILTER


@mypyc_attr(native_class=False)  # a plain dataclass, as StageSpec (interpreted) is
@dataclass(frozen=True)
class FlatMapSpec(StatelessSpec):
    kind: ClassVar[str] = FLAT_MAP
    step: ClassVar[str] = FLAT_MAP


@mypyc_attr(native_class=False)  # a plain dataclass, as StageSpec (interpreted) is
@dataclass(frozen=True)
class PeekSpec(StatelessSpec):
    kind: ClassVar[str] = "peek"
    step: ClassVar[str] = MAP

    def step_fn(self) -> Callable[[Any], Any]:
        return Peek(self.fn)


@mypyc_attr(native_class=False)  # a plain dataclass, as StageSpec (interpreted) is
@dataclass(frozen=True)
class MergeSpec(StageSpec):
    """All items of several stages: a transform vertex with no step and one input per stage."""

    kind: ClassVar[str] = "merge"

    def plan(self, planner: Planner, node: PlanNode) -> None:
        timestamped = planner.output(node.upstream[0]).timestamped
        vertex = planner.vertex(node.name, None, node.local_parallelism, Transform(timestamped=timestamped))
        for ordinal, up in enumerate(node.upstream):
            planner.connect(up, vertex, ordinal=ordinal)
        planner.produce(node, Output(vertex, timestamped))


# -- in the DAG builder ---------------------------------------------------------------------------


def _read_step(step: str) -> Read:
    """The read-back of the one-step kind ``step``: a transform of that single step on plain items."""

    def read(supplier: Any, reader: Reader) -> dict[str, Any] | None:
        if not made_by(supplier, TransformP):
            return None
        t: Transform = supplier.transform
        if len(t.steps) != 1 or t.steps[0][0] != step or t.timestamped:
            return None
        return {"fn": reader.code(t.steps[0][1], f"step 1 ({step})")}

    return read


def _read_chain(supplier: Any, reader: Reader) -> dict[str, Any] | None:
    if not made_by(supplier, TransformP):
        return None
    t: Transform = supplier.transform
    steps = [(step, reader.code(fn, f"step {i + 1} ({step})")) for i, (step, fn) in enumerate(t.steps)]
    return {"steps": steps_text(steps), "timestamped": t.timestamped, "keep_timestamps": t.keep_timestamps}


def _chain(p: dict[str, Any], f: dict[str, Any]) -> Transform:
    steps = parse_steps(p["steps"] or "")
    return Transform(tuple((kind, fn) for (kind, _), fn in zip(steps, f["steps"], strict=True)), p["timestamped"],
                     p["keep_timestamps"])


def _chain_code(p: dict[str, Any], f: dict[str, Any]) -> tuple[str, set[str]]:
    steps = parse_steps(p["steps"] or "")
    flags = []
    if p["timestamped"]:
        flags.append("timestamped=True")
    if not p["keep_timestamps"]:
        flags.append("keep_timestamps=False")
    chain = "".join(f".{kind}({fn})" for (kind, _), fn in zip(steps, f["steps"], strict=True))
    return (f"transform_processor(Transform({', '.join(flags)}){chain})",
            {"from jetbench.processors import Transform, transform_processor"})


_IMPORT = "from jetbench.processors import "

BUILDER_KINDS = (
    Kind(id="map", label="map", category="transform", inputs=True, outputs=True,
         params=(Param("fn", "code", "x", help="the new item: an expression in x, or a function body"),),
         build=lambda p, f, ns: map_processor(f["fn"]),
         code=lambda p, f: (f"map_processor({f['fn']})", {_IMPORT + "map_processor"}), description="one item out per item in",
         read=_read_step(MAP)),
    Kind(id="filter", label="filter", category="transform", inputs=True, outputs=True,
         params=(Param("fn", "code", "True", help="keep the item when true: an expression in x, or a function body"),),
         build=lambda p, f, ns: filter_processor(f["fn"]),
         code=lambda p, f: (f"filter_processor({f['fn']})", {_IMPORT + "filter_processor"}), description="keeps matching items",
         read=_read_step(FILTER)),
    Kind(id="flat_map", label="flat_map", category="transform", inputs=True, outputs=True,
         params=(Param("fn", "code", "[x]", help="an iterable of items: an expression in x, or a function body"),),
         build=lambda p, f, ns: flat_map_processor(f["fn"]),
         code=lambda p, f: (f"flat_map_processor({f['fn']})", {_IMPORT + "flat_map_processor"}),
         description="any number of items out per item in", read=_read_step(FLAT_MAP)),
    Kind(id="transform", label="fused transform", category="transform", inputs=True, outputs=True,
         params=(Param("steps", "steps", "map: x", help="one step a line: 'map: x + 1', 'filter: x > 0', "
                                                 "'flat_map: x.split()' (a body indented below 'map:')"),
          Param("timestamped", "bool", False, help="input items are (ts, item) pairs: steps see the item"),
          Param("keep_timestamps", "bool", True, help="timestamped input: emit (ts, item) pairs (else items)")),
         build=lambda p, f, ns: transform_processor(_chain(p, f)), code=_chain_code,
         description="a chain of map/filter/flat_map run as one vertex (what the planner fuses); no steps: merge inputs",
         read=_read_chain),
)
