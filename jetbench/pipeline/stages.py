"""The Pipeline API: stages chained fluently; the planner turns them into a DAG.

>>> from jetbench import Pipeline, run, sources, sinks, aggregate
>>> p = Pipeline()
>>> words = p.read_from(sources.items(["a b", "b"])).flat_map(str.split)
>>> _ = words.group_by(lambda w: w).aggregate(aggregate.counting()).write_to(sinks.collect())
>>> sorted(run(p))
[('a', 1), ('b', 2)]
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.render import dot_string, dot_to_svg, drawing_bundle
from ..processors.aggregate_operation import AggregateOperation, require_operation
from ..processors.aggregation import AggregateSpec, GroupAggregateSpec
from ..processors.co_group import CO_GROUP, CoGroupSpec, Tag, tag_key
from ..processors.hash_join import HashJoinSpec
from ..processors.insert_watermarks import TimestampsSpec
from ..processors.map_using_service import MapUsingServiceSpec
from ..processors.map_using_service_async import MapUsingServiceAsyncSpec
from ..processors.planning import Output, Planner, PlanNode, StageSpec
from ..processors.transform import FilterSpec, FlatMapSpec, MapSpec, MergeSpec, PeekSpec
from ..processors.window_aggregate import WindowAggregateSpec
from ..processors.window_definition import WindowDefinition
from .connectors import Sink, SinkSpec, Source, SourceSpec
from .errors import PipelineError
from .graph import Node
from .planner import explain, plan_dag

if TYPE_CHECKING:
    from ..core.dag import DAG


@dataclass(frozen=True)
class RebalanceSpec(StageSpec):
    """``stage.rebalance(key_fn)``: no vertex of its own; the next edge spreads items over the
    next stage's instances (round-robin, or partitioned by ``key_fn``) and fusion stops here."""

    key_fn: Callable[[Any], Hashable] | None = None
    kind: ClassVar[str] = "rebalance"

    def plan(self, planner: Planner, node: PlanNode) -> None:
        source = planner.output(node.upstream[0])
        planner.produce(node, Output(source.vertex, source.timestamped, True, self.key_fn))


class Pipeline:
    """A job written as a chain of stages, as in Jet's DAG documentation (``p.read_from(...).map(...)...``)."""

    def __init__(self, fuse: bool = True) -> None:
        """``fuse=False`` keeps every map/filter/flat_map in its own vertex (`jetbench.experiments.idle_job`)."""
        self.fuse = fuse
        self.nodes: list[Node] = []
        self._names: set[str] = set()
        self._counter = itertools.count(1)

    def read_from(self, source: Source) -> Stage:
        """Start a stage from a `Source` (see `jetbench.sources`)."""
        if not isinstance(source, Source):
            raise PipelineError(f"read_from() takes a jetbench.sources Source, got {source!r}")
        node = self._add(SourceSpec(source), source.name, [], source.local_parallelism,
                         timestamped=source.timestamped, streaming=source.streaming)
        return Stage(self, node)

    def to_dag(self, fuse: bool | None = None) -> DAG:
        """Plan the pipeline into a `DAG`, fusing map/filter/flat_map chains unless ``fuse`` is
        False (default: the pipeline's own ``fuse`` setting)."""
        return plan_dag(self.nodes, fuse=self.fuse if fuse is None else fuse)

    def explain(self, fuse: bool | None = None) -> str:
        """The planned DAG as text: vertices with parallelism and what they run, edges with routing."""
        return explain(self.to_dag(fuse=fuse))

    def _repr_svg_(self) -> str | None:
        """Notebooks show the planned DAG as an SVG; a pipeline that cannot be planned yet (a
        stage not written to a sink) as its stages so far, each open end marked (`draft_dot`).
        Never raises: a display method that raised would show a traceback instead of the pipeline."""
        try:
            return self.to_dag()._repr_svg_()
        except Exception:
            pass
        try:
            return dot_to_svg(self.draft_dot())
        except Exception:
            return None

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str] | None:
        """The drawing of `_repr_svg_` as SVG and as HTML fitted to the cell's width, full size on
        click (`drawing_bundle`)."""
        return drawing_bundle(self._repr_svg_())

    def draft_dot(self) -> str:
        """The pipeline's stages as written (not planned) in DOT: one box per stage, and a
        dashed "open end" after every stage that leads nowhere yet."""
        lines = [
            "digraph Pipeline {",
            "  rankdir=LR;",
            '  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", fontname="Helvetica", fontsize=11];',
        ]
        if not self.nodes:
            lines.append('  empty [label="empty pipeline: start it with read_from(source)", style=dashed];')
        consumers = {id(u) for n in self.nodes for u in n.upstream}
        for k, node in enumerate(self.nodes):
            lines.append(f"  {dot_string(node.name)} [label={dot_string(f'{node.name}  ({node.kind})')}];")
            for u in node.upstream:
                lines.append(f"  {dot_string(u.name)} -> {dot_string(node.name)};")
            if node.kind != "sink" and id(node) not in consumers:
                end = dot_string(f"open end {k}")
                lines.append(f'  {end} [label="open end:\\nwrite_to(sink)", shape=box, style="dashed", '
                             'color="#b35900", fontcolor="#b35900"];')
                lines.append(f'  {dot_string(node.name)} -> {end} [style=dashed, color="#b35900"];')
        lines.append("}")
        return "\n".join(lines)

    def _add(self, spec: StageSpec, name: str | None, upstream: list[Node],
             local_parallelism: int | None = None, **flags: bool | None) -> Node:
        base = name or spec.kind
        unique = base
        while unique in self._names:
            unique = f"{base}-{next(self._counter)}"
        self._names.add(unique)
        if flags.get("timestamped") is None:
            flags["timestamped"] = any(u.timestamped for u in upstream)
        if flags.get("streaming") is None:
            flags["streaming"] = any(u.streaming for u in upstream)
        node = Node(spec, unique, upstream, local_parallelism, bool(flags["timestamped"]), bool(flags["streaming"]))
        self.nodes.append(node)
        return node

    def __repr__(self) -> str:
        return f"Pipeline({len(self.nodes)} stages)"


class Stage:
    """A stage of items; its methods add the next stage and return it."""

    def __init__(self, pipeline: Pipeline, node: Node):
        self.pipeline = pipeline
        self.node = node

    @property
    def name(self) -> str:
        return self.node.name

    def __repr__(self) -> str:
        return f"Stage({self.node.name!r}, {self.node.kind})"

    def _next(self, spec: StageSpec, name: str | None, upstream: list[Node] | None = None,
              **flags: Any) -> Stage:
        node = self.pipeline._add(spec, name, upstream or [self.node], **flags)
        return Stage(self.pipeline, node)

    def apply(self, spec: StageSpec, *others: Stage, name: str | None = None) -> Stage:
        """The next stage made by ``spec``, a kind's typed stage (`jetbench.processors.planning`),
        reading this stage (its input 0) and ``others`` (inputs 1, 2, ...): how a kind without a
        method of its own joins a pipeline. Its items are timestamped as
        ``spec.output_timestamped(...)`` says (by default: as its inputs' are).

        >>> from jetbench import Pipeline, run, sources, sinks
        >>> from jetbench.processors.transform import MapSpec
        >>> p = Pipeline()
        >>> _ = p.read_from(sources.items([1, 2])).apply(MapSpec(lambda x: -x)).write_to(sinks.collect())
        >>> run(p)
        [-1, -2]
        """
        if not isinstance(spec, StageSpec):
            raise PipelineError(f"stage {self.name!r}: apply() takes a StageSpec, got {spec!r}")
        for other in others:
            _check_same_pipeline(self, other)
        upstream = [self.node, *(o.node for o in others)]
        timestamped = spec.output_timestamped(any(n.timestamped for n in upstream))
        return self._next(spec, name, upstream=upstream, timestamped=timestamped)

    # -- stateless ------------------------------------------------------------------------------

    def map(self, fn: Callable[[Any], Any], name: str | None = None) -> Stage:
        """Each item becomes ``fn(item)``."""
        return self._next(MapSpec(_callable(fn, "map", self)), name or _fn_name("map", fn))

    def filter(self, fn: Callable[[Any], Any], name: str | None = None) -> Stage:
        """Keep the items for which ``fn(item)`` is truthy."""
        return self._next(FilterSpec(_callable(fn, "filter", self)), name or _fn_name("filter", fn))

    def flat_map(self, fn: Callable[[Any], Iterable[Any]], name: str | None = None) -> Stage:
        """Each item becomes every item of ``fn(item)``."""
        return self._next(FlatMapSpec(_callable(fn, "flat_map", self)), name or _fn_name("flat_map", fn))

    def peek(self, fn: Callable[[Any], Any] | None = None, name: str | None = None) -> Stage:
        """Call ``fn(item)`` (default: log it) for every item passing through; items are unchanged."""
        if fn is None:
            import logging

            log = logging.getLogger("jetbench.peek")
            fn = log.info
        return self._next(PeekSpec(_callable(fn, "peek", self)), name or "peek")

    def map_using_service(self, service_factory: Callable[[], Any], fn: Callable[[Any, Any], Any],
                          name: str | None = None) -> Stage:
        """``fn(service, item)`` where blocking is allowed: runs on a dedicated (non-cooperative)
        thread per instance; ``service = service_factory()`` is made once per instance."""
        spec = MapUsingServiceSpec(_callable(service_factory, "service_factory", self),
                                   _callable(fn, "map_using_service", self))
        return self._next(spec, name or _fn_name("map_using_service", fn))

    def map_using_service_async(self, service_factory: Callable[[], Any], async_fn: Callable[[Any, Any], Any],
                                max_concurrent: int = 16, name: str | None = None) -> Stage:
        """``await async_fn(service, item)`` with up to ``max_concurrent`` calls in flight per
        instance; results keep the input order. The tasklet stays cooperative."""
        if max_concurrent < 1:
            raise PipelineError(f"stage {self.name!r}: max_concurrent must be >= 1, got {max_concurrent}")
        spec = MapUsingServiceAsyncSpec(_callable(service_factory, "service_factory", self),
                                        _callable(async_fn, "map_using_service_async", self), max_concurrent)
        return self._next(spec, name or _fn_name("map_async", async_fn))

    # -- time --------------------------------------------------------------------------------------

    def add_timestamps(self, ts_fn: Callable[[Any], float], allowed_lag: float = 0, name: str | None = None,
                       idle_timeout_ms: float = 60_000) -> Stage:
        """Give items event time ``ts_fn(item)`` (ms) and insert watermarks lagging the highest
        timestamp seen by ``allowed_lag`` ms; later events more than that behind are late."""
        if self.node.timestamped:
            raise PipelineError(f"stage {self.name!r} already has timestamps")
        if allowed_lag < 0:
            raise PipelineError(f"stage {self.name!r}: allowed_lag must be >= 0, got {allowed_lag}")
        spec = TimestampsSpec(_callable(ts_fn, "add_timestamps", self), allowed_lag, idle_timeout_ms)
        return self._next(spec, name or "add-timestamps", timestamped=True)

    def window(self, window_def: WindowDefinition) -> WindowedStage:
        """Aggregate per event-time window: ``stage.window(tumbling(1000)).aggregate(counting())``."""
        _check_window(self, window_def)
        return WindowedStage(self, None, window_def)

    # -- aggregation -------------------------------------------------------------------------------

    def group_by(self, key_fn: Callable[[Any], Hashable]) -> GroupedStage:
        """Group items by ``key_fn(item)``; follow with `aggregate` or `window`."""
        return GroupedStage(self, _callable(key_fn, "group_by", self))

    def aggregate(self, op: AggregateOperation, name: str | None = None) -> Stage:
        """One result over all items, emitted when the input completes (batch stages only)."""
        _check_op(self, op)
        _check_bounded(self, "aggregate")
        return self._next(AggregateSpec(op), name or "aggregate", timestamped=False)

    # -- combining stages ----------------------------------------------------------------------

    def merge(self, other: Stage, name: str | None = None) -> Stage:
        """All items of this stage and of ``other``."""
        _check_same_pipeline(self, other)
        if self.node.timestamped != other.node.timestamped:
            raise PipelineError(f"merge of {self.name!r} and {other.name!r}: both or neither must have timestamps")
        return self._next(MergeSpec(), name or "merge", upstream=[self.node, other.node])

    def hash_join(self, other: Stage, key_fn: Callable[[Any], Hashable], other_key_fn: Callable[[Any], Hashable],
                  how: str = "inner", name: str | None = None) -> Stage:
        """Pair each item with every item of ``other`` (a batch stage, loaded first) whose key
        matches: emits ``(item, other_item)``; ``how="left"`` also emits ``(item, None)``."""
        _check_same_pipeline(self, other)
        if how not in ("inner", "left"):
            raise PipelineError(f"stage {self.name!r}: hash_join how must be 'inner' or 'left', got {how!r}")
        _check_bounded(other, "the build side of hash_join")
        spec = HashJoinSpec(_callable(key_fn, "hash_join", self), _callable(other_key_fn, "hash_join", self), how)
        return self._next(spec, name or "hash-join", upstream=[self.node, other.node],
                          timestamped=self.node.timestamped)

    def co_group(self, other: Stage, key_fn: Callable[[Any], Hashable], other_key_fn: Callable[[Any], Hashable],
                 window: WindowDefinition | None = None, name: str | None = None) -> Stage:
        """Group both stages by key.

        Batch stages: emits ``(key, [items], [other items])`` once both inputs complete. With a
        ``window`` (both stages timestamped, e.g. streams): emits, per window and key,
        ``WindowResult(start, end, key, ([items], [other items]))``.
        """
        _check_same_pipeline(self, other)
        _callable(key_fn, "co_group", self)
        _callable(other_key_fn, "co_group", self)
        if window is not None:
            _check_window(self, window)
            _check_window(other, window)
            tagged = self.map(Tag(0, key_fn), name=f"{name or 'co-group'}-left") \
                .merge(other.map(Tag(1, other_key_fn), name=f"{name or 'co-group'}-right"))
            return tagged.group_by(tag_key).window(window).aggregate(CO_GROUP, name=name or "co-group")
        _check_bounded(self, "co_group (without a window)")
        _check_bounded(other, "co_group (without a window)")
        return self._next(CoGroupSpec(key_fn, other_key_fn), name or "co-group", upstream=[self.node, other.node],
                          timestamped=False)

    def rebalance(self, key_fn: Callable[[Any], Hashable] | None = None) -> Stage:
        """Spread items over the next stage's instances (round-robin, or by ``key_fn``); stops fusion."""
        return self._next(RebalanceSpec(key_fn), "rebalance")

    def set_local_parallelism(self, n: int) -> Stage:
        """Run this stage with ``n`` parallel instances."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise PipelineError(f"stage {self.name!r}: local parallelism must be an int >= 1, got {n!r}")
        if isinstance(self.node.spec, RebalanceSpec):
            raise PipelineError("set the parallelism on the stage after rebalance()")
        self.node.local_parallelism = n
        return self

    def set_name(self, name: str) -> Stage:
        self.pipeline._names.discard(self.node.name)
        if name in self.pipeline._names:
            raise PipelineError(f"a stage named {name!r} already exists")
        self.pipeline._names.add(name)
        self.node.name = name
        return self

    # -- sinks -------------------------------------------------------------------------------------

    def write_to(self, sink: Sink) -> SinkStage:
        """Send the items to a `Sink` (see `jetbench.sinks`)."""
        if not isinstance(sink, Sink):
            raise PipelineError(f"stage {self.name!r}: write_to() takes a jetbench.sinks Sink, got {sink!r}")
        if sink.requires_timestamped and not self.node.timestamped:
            raise PipelineError(
                f"stage {self.name!r}: sink {sink.name!r} needs timestamped items; "
                "use a timestamped source or add_timestamps() first"
            )
        node = self.pipeline._add(SinkSpec(sink), sink.name, [self.node], sink.local_parallelism, timestamped=False)
        return SinkStage(self.pipeline, node)


class SinkStage(Stage):
    """The end of a branch; nothing follows a sink (only its parallelism and name can be set)."""

    def _refuse(self, what: str) -> Any:
        raise PipelineError(f"stage {self.node.name!r} is a sink: nothing can follow it (tried .{what}())")

    def _next(self, spec: StageSpec, *args: Any, **kwargs: Any) -> Stage:
        return self._refuse(spec.kind)

    def group_by(self, *args: Any, **kwargs: Any) -> GroupedStage:
        return self._refuse("group_by")

    def window(self, *args: Any, **kwargs: Any) -> WindowedStage:
        return self._refuse("window")

    def write_to(self, *args: Any, **kwargs: Any) -> SinkStage:
        return self._refuse("write_to")

    def add_timestamps(self, *args: Any, **kwargs: Any) -> Stage:
        return self._refuse("add_timestamps")


class GroupedStage:
    """A stage grouped by key; ``aggregate`` emits ``(key, value)`` pairs."""

    def __init__(self, stage: Stage, key_fn: Callable[[Any], Hashable]):
        self.stage = stage
        self.key_fn = key_fn

    def aggregate(self, op: AggregateOperation, name: str | None = None) -> Stage:
        _check_op(self.stage, op)
        _check_bounded(self.stage, "group_by(...).aggregate")
        return self.stage._next(GroupAggregateSpec(self.key_fn, op), name or "group-aggregate", timestamped=False)

    def window(self, window_def: WindowDefinition) -> WindowedStage:
        _check_window(self.stage, window_def)
        return WindowedStage(self.stage, self.key_fn, window_def)


class WindowedStage:
    """A stage with a window definition (and maybe a key); ``aggregate`` emits `WindowResult` items."""

    def __init__(self, stage: Stage, key_fn: Callable[[Any], Hashable] | None, window_def: WindowDefinition):
        self.stage = stage
        self.key_fn = key_fn
        self.window_def = window_def

    def aggregate(self, op: AggregateOperation, name: str | None = None) -> Stage:
        _check_op(self.stage, op)
        if self.window_def.kind == "session" and op.combine is None:
            raise PipelineError(f"stage {self.stage.name!r}: session windows need an aggregate op with combine")
        if self.window_def.kind == "sliding" and not self.window_def.is_tumbling and op.combine is None:
            raise PipelineError(f"stage {self.stage.name!r}: sliding windows need an aggregate op with combine")
        spec = WindowAggregateSpec(self.key_fn, op, self.window_def)
        return self.stage._next(spec, name or f"window-{self.window_def!r}", timestamped=True)


def _fn_name(kind: str, fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__name__", "")
    return kind if not name or name == "<lambda>" else f"{kind}-{name}"


def _callable(fn: Any, what: str, stage: Stage) -> Any:
    if not callable(fn):
        raise PipelineError(f"stage {stage.name!r}: {what} needs a callable, got {fn!r}")
    return fn


def _check_op(stage: Stage, op: Any) -> None:
    require_operation(op, f"stage {stage.name!r}: aggregate()", PipelineError)


def _check_bounded(stage: Stage, what: str) -> None:
    if stage.node.streaming:
        raise PipelineError(
            f"stage {stage.name!r}: {what} needs a bounded (batch) input; this stage reads an unbounded "
            "source: use window(...) first"
        )


def _check_window(stage: Stage, window_def: Any) -> None:
    if not isinstance(window_def, WindowDefinition):
        raise PipelineError(f"stage {stage.name!r}: window() takes jetbench.window.tumbling/sliding/session, got {window_def!r}")
    if not stage.node.timestamped:
        raise PipelineError(
            f"stage {stage.name!r} has no timestamps: windows need event time; "
            "use a timestamped source or call add_timestamps() first"
        )


def _check_same_pipeline(stage: Stage, other: Any) -> None:
    if not isinstance(other, Stage) or isinstance(other, SinkStage):
        raise PipelineError(f"stage {stage.name!r}: expected another (non-sink) stage, got {other!r}")
    if other.pipeline is not stage.pipeline:
        raise PipelineError(f"stages {stage.name!r} and {other.name!r} belong to different pipelines")
