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
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from ..core.render import dot_string, dot_to_svg, drawing_bundle
from ..processors.aggregate_operation import AggregateOperation, require_operation, to_list
from ..processors.aggregation import AggregateSpec, GroupAggregateSpec
from ..processors.co_aggregate import CoAggregate, Tag, co_aggregate_operation, no_key, tag_key
from ..processors.co_group import CoGroup
from ..processors.custom_transform import CustomTransform
from ..processors.distinct import PICK_FIRST, Distinct, itself
from ..processors.hash_join import HashJoin, JoinClause, MultiHashJoin
from ..processors.insert_watermarks import InsertWatermarks
from ..processors.kind_params import KindParamError
from ..processors.map_stateful import MapStateful
from ..processors.map_using_service import MapUsingService
from ..processors.map_using_service_async import MapUsingServiceAsync
from ..processors.planning import Output, Planner, PlanNode, StageSpec
from ..processors.rolling_aggregate import RollingAggregate
from ..processors.sort import Sort
from ..processors.transform import FilterSpec, FlatMapSpec, MapSpec, MergeSpec, PeekSpec
from ..processors.window_aggregate import WindowAggregate
from ..processors.window_definition import WindowDefinition, WindowResult
from .connectors import Sink, SinkSpec, Source, SourceSpec
from .errors import PipelineError
from .graph import Node
from .planner import explain, plan_dag

if TYPE_CHECKING:
    from ..core.dag import DAG

SpecT = TypeVar("SpecT", bound=StageSpec)


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

    def _declare(self, make: Callable[[], SpecT]) -> SpecT:
        """``make()``, a kind's declaration from the user's arguments; the error of an argument it
        refuses names this stage."""
        try:
            return make()
        except KindParamError as exc:
            raise PipelineError(f"stage {self.name!r}: {exc}") from None

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
        """Each item becomes ``fn(item)``.

        >>> from jetbench import Pipeline, run, sinks, sources
        >>> p = Pipeline()
        >>> _ = p.read_from(sources.items([1, 2, 3])).map(lambda x: x * 10).write_to(sinks.collect())
        >>> run(p)
        [10, 20, 30]
        """
        return self._next(MapSpec(_callable(fn, "map", self)), name or _fn_name("map", fn))

    def filter(self, fn: Callable[[Any], Any], name: str | None = None) -> Stage:
        """Keep the items for which ``fn(item)`` is truthy.

        >>> from jetbench import Pipeline, run, sinks, sources
        >>> p = Pipeline()
        >>> _ = p.read_from(sources.items(range(6))).filter(lambda x: x % 2).write_to(sinks.collect())
        >>> run(p)
        [1, 3, 5]
        """
        return self._next(FilterSpec(_callable(fn, "filter", self)), name or _fn_name("filter", fn))

    def flat_map(self, fn: Callable[[Any], Iterable[Any]], name: str | None = None) -> Stage:
        """Each item becomes every item of ``fn(item)``.

        >>> from jetbench import Pipeline, run, sinks, sources
        >>> p = Pipeline()
        >>> _ = p.read_from(sources.items(["to be", "or"])).flat_map(str.split).write_to(sinks.collect())
        >>> run(p)
        ['to', 'be', 'or']
        """
        return self._next(FlatMapSpec(_callable(fn, "flat_map", self)), name or _fn_name("flat_map", fn))

    def peek(self, fn: Callable[[Any], Any] | None = None, name: str | None = None) -> Stage:
        """Call ``fn(item)`` (default: log it) for every item passing through; items are unchanged.

        >>> from jetbench import Pipeline, run, sinks, sources
        >>> p = Pipeline()
        >>> _ = p.read_from(sources.items([1, 2])).peek(print).map(lambda x: -x).write_to(sinks.collect())
        >>> run(p)
        1
        2
        [-1, -2]
        """
        if fn is None:
            import logging

            log = logging.getLogger("jetbench.peek")
            fn = log.info
        return self._next(PeekSpec(_callable(fn, "peek", self)), name or "peek")

    def map_using_service(self, service_factory: Callable[[], Any], fn: Callable[[Any, Any], Any],
                          name: str | None = None) -> Stage:
        """``fn(service, item)`` where blocking is allowed: runs on a dedicated (non-cooperative)
        thread per instance; ``service = service_factory()`` is made once per instance.

        >>> from jetbench import Pipeline, run, sources, sinks
        >>> p = Pipeline()
        >>> prices = lambda: {"tea": 3, "pen": 2}
        >>> _ = p.read_from(sources.items(["tea", "pen"])).map_using_service(prices, lambda s, x: (x, s[x])) \\
        ...     .write_to(sinks.collect())
        >>> run(p)
        [('tea', 3), ('pen', 2)]
        """
        spec = self._declare(lambda: MapUsingService(service_factory, fn))
        return self._next(spec, name or _fn_name("map_using_service", fn))

    def filter_using_service(self, service_factory: Callable[[], Any], fn: Callable[[Any, Any], Any],
                             name: str | None = None) -> Stage:
        """Keep the items for which ``fn(service, item)`` is true (blocking allowed, as
        `map_using_service`).

        >>> from jetbench import Pipeline, run, sinks, sources
        >>> p = Pipeline()
        >>> stock = lambda: {"tea": 3, "pen": 0}
        >>> _ = p.read_from(sources.items(["tea", "pen"])).filter_using_service(stock, lambda s, x: s[x] > 0) \\
        ...     .write_to(sinks.collect())
        >>> run(p)
        ['tea']
        """
        spec = self._declare(lambda: MapUsingService(service_factory, fn, mode="filter"))
        return self._next(spec, name or _fn_name("filter_using_service", fn))

    def flat_map_using_service(self, service_factory: Callable[[], Any], fn: Callable[[Any, Any], Iterable[Any]],
                               name: str | None = None) -> Stage:
        """Every item of ``fn(service, item)`` (blocking allowed, as `map_using_service`).

        >>> from jetbench import Pipeline, run, sinks, sources
        >>> p = Pipeline()
        >>> sizes = lambda: {"tea": ["S", "L"], "pen": []}
        >>> _ = p.read_from(sources.items(["tea", "pen"])) \\
        ...     .flat_map_using_service(sizes, lambda s, x: [(x, size) for size in s[x]]).write_to(sinks.collect())
        >>> run(p)
        [('tea', 'S'), ('tea', 'L')]
        """
        spec = self._declare(lambda: MapUsingService(service_factory, fn, mode="flat_map"))
        return self._next(spec, name or _fn_name("flat_map_using_service", fn))

    def map_using_service_async(self, service_factory: Callable[[], Any], async_fn: Callable[[Any, Any], Any],
                                max_concurrent: int = 16, name: str | None = None) -> Stage:
        """``await async_fn(service, item)`` with up to ``max_concurrent`` calls in flight per
        instance; results keep the input order. The tasklet stays cooperative.

        >>> import asyncio
        >>> from jetbench import Pipeline, run, sources, sinks
        >>> async def price(service, x):
        ...     await asyncio.sleep(0)
        ...     return x, service[x]
        >>> p = Pipeline()
        >>> _ = p.read_from(sources.items(["tea", "pen"])) \\
        ...     .map_using_service_async(lambda: {"tea": 3, "pen": 2}, price, max_concurrent=2) \\
        ...     .write_to(sinks.collect())
        >>> run(p)
        [('tea', 3), ('pen', 2)]
        """
        spec = self._declare(lambda: MapUsingServiceAsync(service_factory, async_fn, max_concurrent))
        return self._next(spec, name or _fn_name("map_async", async_fn))

    def custom_transform(self, name: str, supplier: Callable[[], Any]) -> Stage:
        """A stage named ``name`` whose vertex runs ``supplier``'s processors (the Core API in a
        pipeline: any `Processor` subclass or vertex supplier); see
        `jetbench.processors.custom_transform`."""
        if not isinstance(name, str) or not name:
            raise PipelineError(f"stage {self.name!r}: custom_transform needs a stage name, got {name!r}")
        return self._next(CustomTransform(_callable(supplier, "custom_transform", self)), name)

    # -- time --------------------------------------------------------------------------------------

    def add_timestamps(self, ts_fn: Callable[[Any], float], allowed_lag: float = 0, name: str | None = None,
                       idle_timeout_ms: float = 60_000) -> Stage:
        """Give items event time ``ts_fn(item)`` (ms) and insert watermarks lagging the highest
        timestamp seen by ``allowed_lag`` ms; later events more than that behind are late."""
        if self.node.timestamped:
            raise PipelineError(f"stage {self.name!r} already has timestamps")
        ts_fn = _callable(ts_fn, "add_timestamps", self)
        spec = self._declare(lambda: InsertWatermarks(ts_fn, allowed_lag, idle_timeout_ms=idle_timeout_ms))
        return self._next(spec, name or "add-timestamps", timestamped=True)

    def window(self, window_def: WindowDefinition) -> WindowedStage:
        """Aggregate per event-time window: ``stage.window(tumbling(1000)).aggregate(counting())``."""
        _check_window(self, window_def)
        return WindowedStage(self, None, window_def)

    # -- aggregation -------------------------------------------------------------------------------

    def group_by(self, key_fn: Callable[[Any], Hashable]) -> GroupedStage:
        """Group items by ``key_fn(item)``; follow with `aggregate` or `window`.

        >>> from jetbench import Pipeline, aggregate, run, sinks, sources
        >>> p = Pipeline()
        >>> words = p.read_from(sources.items(["apple", "avocado", "banana"]))
        >>> _ = words.group_by(lambda w: w[0]).aggregate(aggregate.to_list()).write_to(sinks.collect())
        >>> sorted(run(p))
        [('a', ['apple', 'avocado']), ('b', ['banana'])]
        """
        return GroupedStage(self, _callable(key_fn, "group_by", self))

    def aggregate(self, op: AggregateOperation, name: str | None = None) -> Stage:
        """One result over all items, emitted when the input completes (batch stages only).

        >>> from jetbench import Pipeline, aggregate, run, sinks, sources
        >>> p = Pipeline()
        >>> _ = p.read_from(sources.items([3, 1, 2])).aggregate(aggregate.summing(lambda x: x)).write_to(sinks.collect())
        >>> run(p)
        [6]
        """
        _check_op(self, op)
        _check_bounded(self, "aggregate")
        return self._next(AggregateSpec(op), name or "aggregate", timestamped=False)

    def rolling_aggregate(self, op: AggregateOperation, name: str | None = None) -> Stage:
        """After every item, the running result of ``op`` over all items so far (one instance;
        batch or stream, items keep their timestamps); see `jetbench.processors.rolling_aggregate`."""
        _check_op(self, op)
        return self._next(self._declare(lambda: RollingAggregate(None, op)), name or "rolling-aggregate")

    def map_stateful(self, create_fn: Callable[[], Any], fn: Callable[[Any, Any], Any],
                     ttl: float | None = None, on_evict: Callable[[Any, Any], Any] | None = None,
                     name: str | None = None) -> Stage:
        """``fn(state, item)`` with one state over all items (``create_fn()``, one instance): the
        new item (None: none); see `jetbench.processors.map_stateful` (``ttl``, ``on_evict``)."""
        return self._stateful("map", None, create_fn, fn, ttl, on_evict, name)

    def filter_stateful(self, create_fn: Callable[[], Any], fn: Callable[[Any, Any], Any],
                        ttl: float | None = None, name: str | None = None) -> Stage:
        """Keep the items for which ``fn(state, item)`` is true, one state over all items; see
        `jetbench.processors.map_stateful`."""
        return self._stateful("filter", None, create_fn, fn, ttl, None, name)

    def flat_map_stateful(self, create_fn: Callable[[], Any], fn: Callable[[Any, Any], Any],
                          ttl: float | None = None, on_evict: Callable[[Any, Any], Any] | None = None,
                          name: str | None = None) -> Stage:
        """Every item of ``fn(state, item)``, one state over all items; see
        `jetbench.processors.map_stateful`."""
        return self._stateful("flat_map", None, create_fn, fn, ttl, on_evict, name)

    def _stateful(self, mode: str, key_fn: Callable[[Any], Hashable] | None, create_fn: Callable[[], Any],
                  fn: Callable[..., Any], ttl: float | None, on_evict: Callable[..., Any] | None,
                  name: str | None) -> Stage:
        timestamped = self.node.timestamped
        spec = self._declare(lambda: MapStateful(key_fn, create_fn, fn, mode, ttl, on_evict, timestamped))
        return self._next(spec, name or f"{mode}-stateful")

    def distinct(self, name: str | None = None) -> Stage:
        """Each distinct item once, the first time it comes (batch stages only); see
        `jetbench.processors.distinct`."""
        _check_bounded(self, "distinct")
        return self._next(Distinct(), name or "distinct")

    def sort(self, key: Callable[[Any], Any] | None = None, reverse: bool = False, name: str | None = None) -> Stage:
        """All items in order of ``key(item)`` (the items themselves by default), when the input
        completes (batch stages only; one instance sorts them all); see `jetbench.processors.sort`."""
        _check_bounded(self, "sort")
        return self._next(self._declare(lambda: Sort(key, reverse)), name or "sort", timestamped=False)

    # -- combining stages ----------------------------------------------------------------------

    def merge(self, other: Stage, name: str | None = None) -> Stage:
        """All items of this stage and of ``other``.

        >>> from jetbench import Pipeline, run, sinks, sources
        >>> p = Pipeline()
        >>> a, b = p.read_from(sources.items([1, 2])), p.read_from(sources.items([3]))
        >>> _ = a.merge(b).write_to(sinks.collect())
        >>> sorted(run(p))
        [1, 2, 3]
        """
        _check_same_pipeline(self, other)
        if self.node.timestamped != other.node.timestamped:
            raise PipelineError(f"merge of {self.name!r} and {other.name!r}: both or neither must have timestamps")
        return self._next(MergeSpec(), name or "merge", upstream=[self.node, other.node])

    def hash_join(self, other: Stage, left_key: Callable[[Any], Hashable], right_key: Callable[[Any], Hashable],
                  how: str = "inner", name: str | None = None) -> Stage:
        """Pair each item with every item of ``other`` (a batch stage, loaded first) whose key
        matches, ``left_key(item) == right_key(other_item)``: emits ``(item, other_item)``;
        ``how="left"`` also emits ``(item, None)``.

        >>> from jetbench import Pipeline, run, sources, sinks
        >>> p = Pipeline()
        >>> people = p.read_from(sources.items([(1, "ann"), (2, "bob")]))
        >>> orders = p.read_from(sources.items([("tea", 1), ("pen", 3)]))
        >>> _ = orders.hash_join(people, lambda o: o[1], lambda person: person[0], how="left").write_to(sinks.collect())
        >>> run(p)
        [(('tea', 1), (1, 'ann')), (('pen', 3), None)]
        """
        _check_same_pipeline(self, other)
        _check_bounded(other, "the build side of hash_join")
        spec = self._declare(lambda: HashJoin(left_key, right_key, how))
        return self._next(spec, name or "hash-join", upstream=[self.node, other.node],
                          timestamped=self.node.timestamped)

    def hash_join2(self, stage1: Stage, clause1: JoinClause, stage2: Stage, clause2: JoinClause,
                   map_to_output: Callable[..., Any] | None = None, name: str | None = None) -> Stage:
        """Jet's ``hashJoin2``: each item joined with the matches of two batch stages (loaded
        first), each met by its `JoinClause`: emits ``(item, match 1, match 2)`` per combination
        of matches, None for a stage without match (left outer), or ``map_to_output(item, match 1,
        match 2)`` (None: dropped); see `jetbench.processors.hash_join.MultiHashJoin`.

        >>> from jetbench import Pipeline, run, sinks, sources
        >>> from jetbench.pipeline import JoinClause
        >>> p = Pipeline()
        >>> orders = p.read_from(sources.items([("tea", 1), ("pen", 3)]))
        >>> people = p.read_from(sources.items([(1, "ann"), (3, "bob")]))
        >>> prices = p.read_from(sources.items([("tea", 4)]))
        >>> _ = orders.hash_join2(people, JoinClause.on_keys(lambda o: o[1], lambda c: c[0]).projecting(lambda c: c[1]),
        ...                       prices, JoinClause.join_map_entries(lambda o: o[0])).write_to(sinks.collect())
        >>> sorted(run(p))
        [(('pen', 3), 'bob', None), (('tea', 1), 'ann', 4)]
        """
        builder = self._join_builder("hash_join2")
        builder._add(stage1, clause1)
        builder._add(stage2, clause2)
        return builder.build(map_to_output, name=name)

    def inner_hash_join(self, other: Stage, clause: JoinClause, map_to_output: Callable[..., Any] | None = None,
                        name: str | None = None) -> Stage:
        """Jet's ``innerHashJoin``: as `hash_join2` with one batch stage, an item without match
        dropped: ``(item, match)`` or ``map_to_output(item, match)``.

        >>> from jetbench import Pipeline, run, sinks, sources
        >>> from jetbench.pipeline import JoinClause
        >>> p = Pipeline()
        >>> orders = p.read_from(sources.items([("tea", 1), ("pen", 3)]))
        >>> people = p.read_from(sources.items([(1, "ann")]))
        >>> clause = JoinClause.on_keys(lambda o: o[1], lambda c: c[0]).projecting(lambda c: c[1])
        >>> _ = orders.inner_hash_join(people, clause, lambda o, who: f"{who} ordered {o[0]}").write_to(sinks.collect())
        >>> run(p)
        ['ann ordered tea']
        """
        builder = self._join_builder("inner_hash_join")
        builder._add(other, clause)
        return builder.build(map_to_output, how="inner", name=name)

    def inner_hash_join2(self, stage1: Stage, clause1: JoinClause, stage2: Stage, clause2: JoinClause,
                         map_to_output: Callable[..., Any] | None = None, name: str | None = None) -> Stage:
        """Jet's ``innerHashJoin2``: `hash_join2`, an item either stage has no match for dropped.

        >>> from jetbench import Pipeline, run, sinks, sources
        >>> from jetbench.pipeline import JoinClause
        >>> p = Pipeline()
        >>> orders = p.read_from(sources.items([("tea", 1), ("pen", 3)]))
        >>> people = p.read_from(sources.items([(1, "ann"), (3, "bob")]))
        >>> prices = p.read_from(sources.items([("tea", 4)]))
        >>> _ = orders.inner_hash_join2(people, JoinClause.join_map_entries(lambda o: o[1]),
        ...                             prices, JoinClause.join_map_entries(lambda o: o[0])).write_to(sinks.collect())
        >>> run(p)
        [(('tea', 1), 'ann', 4)]
        """
        builder = self._join_builder("inner_hash_join2")
        builder._add(stage1, clause1)
        builder._add(stage2, clause2)
        return builder.build(map_to_output, how="inner", name=name)

    def hash_join_builder(self) -> HashJoinBuilder:
        """Jet's ``hashJoinBuilder``: join this stage's items with any number of batch stages,
        each added with its `JoinClause`; ``add`` gives each its tag, the place of its match in
        ``(item, match 1, ..., match N)`` (the item is 0), which ``build(map_to_output=None,
        how="left")`` emits per combination of matches.

        >>> from jetbench import Pipeline, run, sinks, sources
        >>> from jetbench.pipeline import JoinClause
        >>> p = Pipeline()
        >>> words = p.read_from(sources.items(["tea", "ink"]))
        >>> sizes = [p.read_from(sources.items(xs)) for xs in (["t3"], ["i5", "t1"], ["t0", "t9"])]
        >>> builder = words.hash_join_builder()
        >>> [builder.add(s, JoinClause.on_keys(lambda w: w[0], lambda x: x[0])) for s in sizes]
        [1, 2, 3]
        >>> _ = builder.build(lambda w, a, b, c: (w, a, b, c), how="inner").write_to(sinks.collect())
        >>> sorted(run(p))
        [('tea', 't3', 't1', 't0'), ('tea', 't3', 't1', 't9')]
        """
        return self._join_builder("hash_join_builder")

    def _join_builder(self, what: str) -> HashJoinBuilder:
        return HashJoinBuilder(self, what)

    def co_group(self, other: Stage, left_key: Callable[[Any], Hashable], right_key: Callable[[Any], Hashable],
                 window: WindowDefinition | None = None, name: str | None = None) -> Stage:
        """Group both stages by key: this stage's items by ``left_key(item)``, ``other``'s by
        ``right_key(other_item)``.

        Batch stages: emits ``(key, [items], [other items])`` once both inputs complete. With a
        ``window`` (both stages timestamped, e.g. streams): emits, per window and key,
        ``WindowResult(start, end, key, ([items], [other items]))``.

        >>> from jetbench import Pipeline, run, sources, sinks
        >>> p = Pipeline()
        >>> a, b = p.read_from(sources.items([1, 2, 3])), p.read_from(sources.items([10, 21]))
        >>> _ = a.co_group(b, lambda x: x % 2, lambda y: y % 2).write_to(sinks.collect())
        >>> sorted(run(p))
        [(0, [2], [10]), (1, [1, 3], [21])]
        """
        _check_same_pipeline(self, other)
        spec = self._declare(lambda: CoGroup(left_key, right_key))
        if window is not None:
            sides = [(self, left_key, to_list()), (other, right_key, to_list())]
            return _co_aggregate("co_group", sides, window, name or "co-group", labels=("left", "right"))
        _check_bounded(self, "co_group (without a window)")
        _check_bounded(other, "co_group (without a window)")
        return self._next(spec, name or "co-group", upstream=[self.node, other.node], timestamped=False)

    def aggregate2(self, op0: AggregateOperation, other: Stage, op1: AggregateOperation,
                   name: str | None = None) -> Stage:
        """Jet's co-aggregation of two batch stages: this stage's items folded by ``op0``,
        ``other``'s by ``op1``; emits ``(result 0, result 1)`` once both complete (keyed after
        `group_by`, windowed after `window`: see `GroupedStage.aggregate2`,
        `WindowedStage.aggregate2`); see `jetbench.processors.co_aggregate`.

        >>> from jetbench import Pipeline, aggregate, run, sinks, sources
        >>> p = Pipeline()
        >>> a, b = p.read_from(sources.items([1, 2, 3])), p.read_from(sources.items(["x", "y"]))
        >>> _ = a.aggregate2(aggregate.summing(), b, aggregate.counting()).write_to(sinks.collect())
        >>> run(p)
        [(6, 2)]
        """
        return self._co_builder(op0, "aggregate2")._add(other, op1).build(name)

    def aggregate3(self, op0: AggregateOperation, stage1: Stage, op1: AggregateOperation, stage2: Stage,
                   op2: AggregateOperation, name: str | None = None) -> Stage:
        """As `aggregate2` with a third stage: emits ``(result 0, result 1, result 2)``.

        >>> from jetbench import Pipeline, aggregate, run, sinks, sources
        >>> p = Pipeline()
        >>> a, b, c = (p.read_from(sources.items(xs)) for xs in ([1, 2], [5], []))
        >>> _ = a.aggregate3(aggregate.summing(), b, aggregate.to_list(), c, aggregate.counting()) \\
        ...     .write_to(sinks.collect())
        >>> run(p)
        [(3, [5], 0)]
        """
        return self._co_builder(op0, "aggregate3")._add(stage1, op1)._add(stage2, op2).build(name)

    def aggregate_builder(self, op0: AggregateOperation) -> AggregateBuilder:
        """Jet's ``aggregateBuilder``: co-aggregate this stage (by ``op0``) with any number of
        stages, each added with its own operation; ``build()`` gives the stage of tuples of their
        results, in the order of the tags (this stage's is 0).

        >>> from jetbench import Pipeline, aggregate, run, sinks, sources
        >>> p = Pipeline()
        >>> a, b, c = (p.read_from(sources.items(xs)) for xs in ([1, 2], [3], [4, 5, 6]))
        >>> builder = a.aggregate_builder(aggregate.summing())
        >>> builder.add(b, aggregate.summing()), builder.add(c, aggregate.counting())
        (1, 2)
        >>> _ = builder.build().write_to(sinks.collect())
        >>> run(p)
        [(3, 3, 3)]
        """
        return self._co_builder(op0, "aggregate_builder")

    def _co_builder(self, op0: AggregateOperation, what: str) -> AggregateBuilder:
        return AggregateBuilder(self, None, None, op0, what)

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

    def rolling_aggregate(self, op: AggregateOperation, name: str | None = None) -> Stage:
        """After every item, ``(key, running result of op)`` over the items of its key so far
        (batch or stream, items keep their timestamps); see `jetbench.processors.rolling_aggregate`."""
        _check_op(self.stage, op)
        spec = self.stage._declare(lambda: RollingAggregate(self.key_fn, op))
        return self.stage._next(spec, name or "rolling-aggregate")

    def map_stateful(self, create_fn: Callable[[], Any], fn: Callable[[Any, Any, Any], Any],
                     ttl: float | None = None, on_evict: Callable[[Any, Any, Any], Any] | None = None,
                     name: str | None = None) -> Stage:
        """``fn(state, key, item)`` with one state per key (``create_fn()``): the new item (None:
        none); with ``ttl`` (ms, timestamped stages) a key's state is evicted once its latest item
        is that far behind the watermark, ``on_evict(state, key, watermark)`` giving a last item.
        See `jetbench.processors.map_stateful`."""
        return self.stage._stateful("map", self.key_fn, create_fn, fn, ttl, on_evict, name)

    def filter_stateful(self, create_fn: Callable[[], Any], fn: Callable[[Any, Any, Any], Any],
                        ttl: float | None = None, name: str | None = None) -> Stage:
        """Keep the items for which ``fn(state, key, item)`` is true, one state per key."""
        return self.stage._stateful("filter", self.key_fn, create_fn, fn, ttl, None, name)

    def flat_map_stateful(self, create_fn: Callable[[], Any], fn: Callable[[Any, Any, Any], Any],
                          ttl: float | None = None, on_evict: Callable[[Any, Any, Any], Any] | None = None,
                          name: str | None = None) -> Stage:
        """Every item of ``fn(state, key, item)``, one state per key (``on_evict`` gives items)."""
        return self.stage._stateful("flat_map", self.key_fn, create_fn, fn, ttl, on_evict, name)

    def aggregate2(self, op0: AggregateOperation, other: GroupedStage, op1: AggregateOperation,
                   name: str | None = None) -> Stage:
        """Jet's keyed co-aggregation of two batch stages, each grouped by its own key: emits
        ``(key, (result 0, result 1))`` per key seen on either side (an operation's result over
        no items where a side has none).

        >>> from jetbench import Pipeline, aggregate, run, sinks, sources
        >>> p = Pipeline()
        >>> sales = p.read_from(sources.items([("tea", 3), ("pen", 2), ("tea", 1)]))
        >>> returns = p.read_from(sources.items(["tea", "ink"]))
        >>> _ = sales.group_by(lambda s: s[0]).aggregate2(aggregate.summing(lambda s: s[1]),
        ...     returns.group_by(lambda r: r), aggregate.counting()).write_to(sinks.collect())
        >>> sorted(run(p))
        [('ink', (0, 1)), ('pen', (2, 0)), ('tea', (4, 1))]
        """
        return self._co_builder(op0, "aggregate2")._add(other, op1).build(name)

    def aggregate3(self, op0: AggregateOperation, stage1: GroupedStage, op1: AggregateOperation,
                   stage2: GroupedStage, op2: AggregateOperation, name: str | None = None) -> Stage:
        """As `aggregate2` with a third grouped stage: ``(key, (result 0, result 1, result 2))``."""
        return self._co_builder(op0, "aggregate3")._add(stage1, op1)._add(stage2, op2).build(name)

    def aggregate_builder(self, op0: AggregateOperation) -> AggregateBuilder:
        """Keyed co-aggregation of any number of grouped stages (``builder.add(stage.group_by(k),
        op)``): ``(key, (result 0, ..., result N))``; see `Stage.aggregate_builder`.

        >>> from jetbench import Pipeline, aggregate, run, sinks, sources
        >>> p = Pipeline()
        >>> a, b, c = (p.read_from(sources.items(xs)) for xs in (["ab", "c"], ["a"], ["cd", "ce"]))
        >>> first_letter = lambda w: w[0]
        >>> builder = a.group_by(first_letter).aggregate_builder(aggregate.counting())
        >>> builder.add(b.group_by(first_letter), aggregate.to_list()), \\
        ...     builder.add(c.group_by(first_letter), aggregate.counting())
        (1, 2)
        >>> _ = builder.build().write_to(sinks.collect())
        >>> sorted(run(p))
        [('a', (1, ['a'], 0)), ('c', (1, [], 2))]
        """
        return self._co_builder(op0, "aggregate_builder")

    def _co_builder(self, op0: AggregateOperation, what: str) -> AggregateBuilder:
        return AggregateBuilder(self.stage, self.key_fn, None, op0, what)

    def distinct(self, name: str | None = None) -> Stage:
        """The first item of each key (batch stages only); see `jetbench.processors.distinct`."""
        _check_bounded(self.stage, "group_by(...).distinct")
        return self.stage._next(Distinct(self.key_fn), name or "distinct")


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
        if self.window_def.early_results_ms and op.combine is None:
            raise PipelineError(f"stage {self.stage.name!r}: early results ({self.window_def!r}) need an aggregate op "
                                "with combine")
        spec = self.stage._declare(lambda: WindowAggregate(self.key_fn, op, self.window_def))
        return self.stage._next(spec, name or f"window-{self.window_def!r}", timestamped=True)

    def distinct(self, name: str | None = None) -> Stage:
        """Each distinct item once per window (Jet's ``StageWithWindow.distinct``), or when
        grouped one item of each key per window (``StageWithKeyAndWindow.distinct``): emits
        ``WindowResult(start, end, key, item)``, key None when not grouped. Jet emits
        ``WindowResult(start, end, item)`` and ``KeyedWindowResult(start, end, key, item)``, the
        item of a key being any one of them (its ``pickAny``); jetbench keeps the first its window
        holds (`jetbench.processors.distinct.PICK_FIRST`). Not grouped, the items are the keys
        (they must be hashable): a window aggregation keyed by the item, then the key dropped (so
        does Jet). Late items are dropped as by `aggregate`.

        >>> from jetbench import Pipeline, run, sinks, sources, window
        >>> p = Pipeline()
        >>> clicks = p.read_from(sources.test_stream([(0, "a"), (2, "b"), (5, "a"), (12, "a")]))
        >>> _ = clicks.window(window.tumbling(10)).distinct().write_to(sinks.collect())
        >>> for r in sorted(run(p)):
        ...     print(r)
        WindowResult(start=0, end=10, key=None, value='a')
        WindowResult(start=0, end=10, key=None, value='b')
        WindowResult(start=10, end=20, key=None, value='a')
        >>> p = Pipeline()
        >>> words = p.read_from(sources.test_stream([(0, "apple"), (3, "avocado"), (4, "banana"), (11, "apricot")]))
        >>> _ = words.group_by(lambda w: w[0]).window(window.tumbling(10)).distinct().write_to(sinks.collect())
        >>> for r in sorted(run(p)):
        ...     print(r)
        WindowResult(start=0, end=10, key='a', value='apple')
        WindowResult(start=0, end=10, key='b', value='banana')
        WindowResult(start=10, end=20, key='a', value='apricot')
        """
        if self.key_fn is not None:
            return self.aggregate(PICK_FIRST, name=name or "window-distinct")
        by_item = WindowedStage(self.stage, itself, self.window_def).aggregate(PICK_FIRST,
                                                                               name=name or "window-distinct")
        return by_item.map(_unkeyed, name=f"{by_item.name}-items")


    def aggregate2(self, op0: AggregateOperation, other: Stage | GroupedStage, op1: AggregateOperation,
                   name: str | None = None) -> Stage:
        """Co-aggregation per window of this stage and ``other`` (a `GroupedStage` when this one is
        grouped): emits ``WindowResult(start, end, key, (result 0, result 1))`` (key None when not
        grouped); both stages timestamped, the operations combining for sliding and session windows.

        >>> from jetbench import Pipeline, aggregate, run, sinks, sources, window
        >>> p = Pipeline()
        >>> clicks = p.read_from(sources.test_stream([(0, "a"), (5, "b"), (12, "a")]))
        >>> views = p.read_from(sources.test_stream([(3, "a"), (14, "a")]))
        >>> _ = clicks.group_by(lambda c: c).window(window.tumbling(10)) \\
        ...     .aggregate2(aggregate.counting(), views.group_by(lambda v: v), aggregate.counting()) \\
        ...     .write_to(sinks.collect())
        >>> for r in sorted(run(p)):
        ...     print(r.start, r.end, r.key, r.value)
        0 10 a (1, 1)
        0 10 b (1, 0)
        10 20 a (1, 1)
        """
        return self._co_builder(op0, "aggregate2")._add(other, op1).build(name)

    def aggregate3(self, op0: AggregateOperation, stage1: Stage | GroupedStage, op1: AggregateOperation,
                   stage2: Stage | GroupedStage, op2: AggregateOperation, name: str | None = None) -> Stage:
        """As `aggregate2` with a third stage: ``(result 0, result 1, result 2)`` per window."""
        return self._co_builder(op0, "aggregate3")._add(stage1, op1)._add(stage2, op2).build(name)

    def aggregate_builder(self, op0: AggregateOperation) -> AggregateBuilder:
        """Co-aggregation per window of any number of stages; see `Stage.aggregate_builder`."""
        return self._co_builder(op0, "aggregate_builder")

    def _co_builder(self, op0: AggregateOperation, what: str) -> AggregateBuilder:
        return AggregateBuilder(self.stage, self.key_fn, self.window_def, op0, what)


class AggregateBuilder:
    """Jet's ``AggregateBuilder``: stages co-aggregated with this one, each by its own operation
    (grouped by its own key when this stage is, per window when it is windowed). ``add`` gives
    each stage's tag, the place of its result in the tuple ``build()``'s stage emits."""

    def __init__(self, stage: Stage, key_fn: Callable[[Any], Hashable] | None, window_def: WindowDefinition | None,
                 op0: AggregateOperation, what: str = "aggregate_builder"):
        _check_op(stage, op0)
        self.stage, self.key_fn, self.window_def, self._what = stage, key_fn, window_def, what
        self._sides: list[tuple[Stage, Callable[[Any], Hashable] | None, AggregateOperation]] = [(stage, key_fn, op0)]

    def tag0(self) -> int:
        """The tag of the stage the builder started from."""
        return 0

    def add(self, other: Stage | GroupedStage, op: AggregateOperation) -> int:
        """Co-aggregate ``other`` (grouped by its key, `Stage.group_by`, when this stage is) by
        ``op``; its tag, the place of its result."""
        self._add(other, op)
        return len(self._sides) - 1

    def _add(self, other: Any, op: AggregateOperation) -> AggregateBuilder:
        what, keyed = self._what, self.key_fn is not None
        if keyed and not isinstance(other, GroupedStage):
            raise PipelineError(f"stage {self.stage.name!r}: {what} of a grouped stage takes another grouped stage "
                                f"(other.group_by(key_fn)), got {other!r}")
        if not keyed and isinstance(other, GroupedStage):
            raise PipelineError(f"stage {self.stage.name!r}: {what} of a stage not grouped takes a stage, not "
                                f"the grouped {other.stage.name!r} (group both, or neither)")
        stage: Stage = other.stage if isinstance(other, GroupedStage) else other
        _check_same_pipeline(self.stage, stage)
        _check_op(stage, op)
        self._sides.append((stage, other.key_fn if isinstance(other, GroupedStage) else None, op))
        return self

    def build(self, name: str | None = None) -> Stage:
        """The stage of the co-aggregated results."""
        return _co_aggregate(self._what, self._sides, self.window_def, name or "co-aggregate")


class HashJoinBuilder:
    """Jet's ``HashJoinBuilder``: the batch stages a stage's items are hash-joined with, each by
    its `JoinClause`; ``add`` gives each its tag (its match's place in the result tuple)."""

    def __init__(self, stage: Stage, what: str = "hash_join_builder"):
        self.stage, self._what = stage, what
        self._sides: list[tuple[Stage, JoinClause]] = []

    def add(self, other: Stage, clause: JoinClause) -> int:
        """Join with ``other``'s items (a batch stage) as ``clause`` says; its tag."""
        self._add(other, clause)
        return len(self._sides)

    def _add(self, other: Any, clause: Any) -> None:
        _check_same_pipeline(self.stage, other)
        if not isinstance(clause, JoinClause):
            raise PipelineError(f"stage {self.stage.name!r}: {self._what} joins {other.name!r} by a JoinClause "
                                f"(JoinClause.on_keys(left_key, right_key)), got {clause!r}")
        _check_bounded(other, f"the build side of {self._what}")
        self._sides.append((other, clause))

    def build(self, map_to_output: Callable[..., Any] | None = None, how: str = "left",
              name: str | None = None) -> Stage:
        """The stage of the joined items: ``(item, match 1, ..., match N)`` or
        ``map_to_output(item, match 1, ..., match N)`` (None: dropped); ``how="left"`` (Jet's)
        puts None for a stage without match, ``"inner"`` drops the item."""
        stage, sides = self.stage, self._sides
        if not sides:
            raise PipelineError(f"stage {stage.name!r}: {self._what} needs a stage to join with (add(stage, clause))")
        first, *rest = (clause for _, clause in sides)
        second = rest.pop(0) if rest else None

        def make() -> MultiHashJoin:
            return MultiHashJoin(first.left_key, first.right_key, first.projection,
                                 second.left_key if second else None, second.right_key if second else None,
                                 second.projection if second else None, how=how, more=tuple(rest),
                                 map_to_output=map_to_output)

        spec = stage._declare(make)
        return stage._next(spec, name or "hash-join", upstream=[stage.node, *(s.node for s, _ in sides)],
                           timestamped=stage.node.timestamped)


def _co_aggregate(what: str, sides: Sequence[tuple[Stage, Callable[[Any], Hashable] | None, AggregateOperation]],
                  window: WindowDefinition | None, name: str, labels: tuple[str, ...] | None = None) -> Stage:
    """Co-aggregate ``sides`` (stage, its key or None, its operation): batch, the `CoAggregate`
    stage; with a window, the sides' items tagged (stages ``name-0``, ``name-1`` ..., or
    ``name-<label>``), merged and window-aggregated by `co_aggregate_operation` (one window
    vertex: Jet's plan too)."""
    first = sides[0][0]
    if len(sides) < 2:
        raise PipelineError(f"stage {first.name!r}: {what} needs another stage to co-aggregate with (add(stage, op))")
    keyed = sides[0][1] is not None
    if window is not None:
        tagged: Stage | None = None
        for i, (stage, key_fn, _) in enumerate(sides):
            _check_window(stage, window)
            one = stage.map(Tag(i, key_fn or no_key), name=f"{name}-{labels[i] if labels else i}")
            tagged = one if tagged is None else tagged.merge(one, name=None if labels else f"{name}-merge")
        assert tagged is not None
        op = co_aggregate_operation(*(op for _, _, op in sides))
        windowed = tagged.group_by(tag_key).window(window) if keyed else tagged.window(window)
        return windowed.aggregate(op, name=name)
    for stage, _, _ in sides:
        _check_bounded(stage, f"{what} (without a window)")
    (_, k0, op0), (_, k1, op1), *more = sides
    spec = first._declare(lambda: CoAggregate(k0, op0, k1, op1, more=tuple((k, op) for _, k, op in more)))
    return first._next(spec, name, upstream=[stage.node for stage, _, _ in sides], timestamped=False)


def _unkeyed(result: WindowResult) -> WindowResult:
    """A window result without its key (the item a windowed ``distinct`` keyed itself by)."""
    return WindowResult(result.start, result.end, None, result.value)


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
