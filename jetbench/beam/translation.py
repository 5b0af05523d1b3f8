"""A Beam portable pipeline translated to a jetbench DAG, as Jet's Beam runner did for Java.

Beam's own optimizer (``translations.optimize_pipeline`` with its standard phases: combiner
lifting, splittable-DoFn expansion, flatten transcoding, greedy fusion, impulse extraction,
topological sort) leaves only four kinds of transform, each becoming one vertex:

==================  ========================================================================
Beam                jetbench
==================  ========================================================================
Impulse             `ImpulseP`, a source with one instance
executable stage    `ExecutableStageP`: the fused DoFns, run in an embedded SDK harness
                    (non-cooperative); side inputs arrive on broadcast edges;
                    a stateful stage's input is partitioned on the encoded key bytes
GroupByKey          `GroupByKeyP` behind an edge partitioned on the encoded key bytes
Flatten             `FlattenP`, one inbound ordinal per input PCollection
==================  ========================================================================

A combine is lifted by Beam's phase into Precombine (in the producing stage), a GroupByKey
and Merge/ExtractOutputs (in the consuming stage): jetbench's two-stage aggregation shape,
accumulate locally then combine after the partitioned edge. The GroupByKey vertex gets the
combine's CombineFn and merges each key's accumulators as they arrive (`GroupByKeyP`).

>>> import apache_beam as beam
>>> from apache_beam.transforms import environments
>>> p = beam.Pipeline()
>>> _ = p | beam.Impulse() | beam.Map(lambda _: ("k", 1)) | beam.CombinePerKey(sum)
>>> proto = p.to_runner_api(default_environment=environments.EmbeddedPythonEnvironment.default())
>>> plan = translate(optimize(proto))
>>> [(v.name.split()[0], kind) for v in plan.dag.vertices for kind in [plan.vertices[v.name][0]]]
[('impulse-1', 'impulse'), ('stage-2', 'stage'), ('group-3', 'group_by_key'), ('stage-4', 'stage')]
>>> [e.routing.value for e in plan.dag.edges]
['unicast', 'partitioned', 'unicast']
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from apache_beam.internal import pickler
from apache_beam.portability import common_urns
from apache_beam.portability.api import beam_fn_api_pb2, beam_runner_api_pb2
from apache_beam.runners.portability.fn_api_runner import translations
from apache_beam.runners.worker import bundle_processor
from apache_beam.transforms.core import CombineFn
from apache_beam.utils import proto_utils

from ..core.dag import DAG, Edge, Vertex
from ..processors.supplier import ProcessorSupplier
from .coding import ElementSplitter, KeyedSplitter, PipelineCoders, sequence_of, stable_key_of
from .errors import UnsupportedBeamFeature
from .flatten import FlattenP
from .grouping import GroupByKeyP
from .impulse import ImpulseP
from .metrics import MonitoringCollector
from .routes import PCollectionRoutes
from .stage import ExecutableStageP, SideInputSpec, StageSpec, TimerFamily
from .workers import ProcessWorkers

__all__ = ["KNOWN_RUNNER_URNS", "BeamPlan", "optimize", "translate"]

IMPULSE = common_urns.primitives.IMPULSE.urn
FLATTEN = common_urns.primitives.FLATTEN.urn
GROUP_BY_KEY = common_urns.primitives.GROUP_BY_KEY.urn
EXECUTABLE_STAGE = common_urns.executable_stage
#: the transforms the runner implements itself; everything else is fused into stages
KNOWN_RUNNER_URNS = frozenset([IMPULSE, FLATTEN, GROUP_BY_KEY])

_MERGE_ACCUMULATORS = common_urns.combine_components.COMBINE_PER_KEY_MERGE_ACCUMULATORS.urn
_INPUT_ID = "jetbench/read"
_PROCESS_RESTRICTIONS = common_urns.sdf_components.PROCESS_SIZED_ELEMENTS_AND_RESTRICTIONS.urn
_SIDE_INPUT_PATTERNS = frozenset([common_urns.side_inputs.ITERABLE.urn, common_urns.side_inputs.MULTIMAP.urn])


def optimize(pipeline: beam_runner_api_pb2.Pipeline, drain: bool = False) -> beam_runner_api_pb2.Pipeline:
    """Beam's fusion and the other standard phases, leaving stages and the known runner URNs
    (``drain``: splittable DoFns expanded to truncate their restrictions, Beam's ``is_drain``)."""
    return translations.optimize_pipeline(pipeline, phases=translations.standard_optimize_phases(),
                                          known_runner_urns=KNOWN_RUNNER_URNS, partial=False, is_drain=drain)


@dataclass
class _Node:
    """One vertex-to-be: its kind, inputs ``(pcollection, role)`` and routes of its outputs."""

    vertex: Vertex
    kind: str
    inputs: list[tuple[str, str]]
    outputs: list[str]
    routes: PCollectionRoutes = field(default_factory=PCollectionRoutes)
    steps: list[str] = field(default_factory=list)
    #: a stage in worker processes reading a splittable DoFn's restrictions: one per item
    one_per_item: bool = False


@dataclass
class BeamPlan:
    """What a pipeline became: the DAG, each vertex's Beam steps, and the metrics collector."""

    dag: DAG
    #: vertex name -> (kind, the Beam steps it runs)
    vertices: dict[str, tuple[str, list[str]]]
    collector: MonitoringCollector
    #: the job's SDK worker processes, if its stages run bundles in them
    workers: ProcessWorkers | None = None

    def explain(self) -> str:
        """The DAG as text: each vertex with its kind and Beam steps, then the edges."""
        lines = []
        for v in self.dag.vertices:
            kind, steps = self.vertices[v.name]
            lp = "default" if v.local_parallelism is None else v.local_parallelism
            lines.append(f"{v.name}  [{kind}, parallelism {lp}]")
            lines.extend(f"    {step}" for step in steps)
        for e in self.dag.edges:
            how = e.routing.value + (f", priority {e.edge_priority}" if e.edge_priority else "")
            lines.append(f"{e.source.name}[{e.source_ordinal}] -> {e.target.name}[{e.destination_ordinal}]  ({how})")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()

    def __repr__(self) -> str:
        return f"BeamPlan({len(self.dag.vertices)} vertices, {len(self.dag.edges)} edges)"

    def _repr_svg_(self) -> str | None:
        """A notebook draws the plan as its DAG (when Graphviz's ``dot`` is installed)."""
        return self.dag._repr_svg_()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str] | None:
        return self.dag._repr_mimebundle_(include, exclude)


def translate(optimized: beam_runner_api_pb2.Pipeline, parallelism: int | None = None,
              queue_size: int | None = None, stable_keys: bool = False, merge_combiners: bool = True,
              workers: ProcessWorkers | None = None) -> BeamPlan:
    """The jetbench DAG of an optimized pipeline (see `optimize`). ``stable_keys`` (a job with a
    processing guarantee): partitioned edges route on `stable_key`, the same in every process,
    rather than on the key bytes' salted hash. ``merge_combiners``: the GroupByKey of a lifted
    combine merges its accumulators (else the merge step in the harness does it all). ``workers``:
    the stateless stages run their bundles in these SDK worker processes (`jetbench.beam.workers`)."""
    key_of = stable_key_of if stable_keys else _key_of
    coders = PipelineCoders(optimized)
    collector = MonitoringCollector()
    dag = DAG()
    nodes: list[_Node] = []
    leaves = _leaves(optimized)
    merges = _lifted_merges(optimized, leaves) if merge_combiners else {}
    for transform_id in leaves:
        nodes.append(_node(dag, optimized, transform_id, len(nodes) + 1, coders, collector, parallelism, merges,
                           workers))
    producers: dict[str, _Node] = {}
    for node in nodes:
        for pcoll in node.outputs:
            producers[pcoll] = node
    out_ordinals: dict[str, int] = {}
    for node in nodes:
        for in_ordinal, (pcoll, role) in enumerate(node.inputs):
            producer = producers.get(pcoll)
            if producer is None:
                raise UnsupportedBeamFeature(f"PCollection {pcoll!r} read by {node.vertex.name!r} has no producer "
                                             "this runner knows")
            out = out_ordinals.get(producer.vertex.name, 0)
            out_ordinals[producer.vertex.name] = out + 1
            keyed = role == "keyed"
            splitter: KeyedSplitter | ElementSplitter | None = None
            if keyed:
                splitter = KeyedSplitter(coders.windowed_coder(pcoll), decoded=node.kind == "group_by_key")
            elif role == "main" and node.one_per_item:
                splitter = ElementSplitter(coders.windowed_coder(pcoll))
            producer.routes.add(pcoll, out, splitter)
            edge = Edge.from_(producer.vertex, out).to(node.vertex, in_ordinal)
            if keyed:
                edge.partitioned(key_of)
            elif isinstance(splitter, ElementSplitter):  # one element per item, dealt out in turn
                edge.partitioned(sequence_of)
            elif role == "side":
                edge.broadcast()
            if queue_size is not None:
                edge.queue_size(queue_size)
            dag.edge(edge)
    return BeamPlan(dag, {n.vertex.name: (n.kind, n.steps) for n in nodes}, collector, workers)


def _key_of(pair: tuple[bytes, bytes]) -> bytes:
    return pair[0]


def _leaves(pipeline: beam_runner_api_pb2.Pipeline) -> list[str]:
    """The primitive transforms in a topological order that is the same in every process (ties
    broken by name): the vertices' names number them in it, and a process resuming a job finds
    its snapshot's vertices by those names. (Beam's own order of stages can change from one
    process to the next.)"""
    transforms = pipeline.components.transforms
    leaves: list[str] = []

    def walk(transform_id: str) -> None:
        t = transforms[transform_id]
        if t.subtransforms:
            for sub in t.subtransforms:
                walk(sub)
        elif set(t.outputs.values()) - set(t.inputs.values()) or not t.outputs and t.inputs:
            leaves.append(transform_id)

    for root in pipeline.root_transform_ids:
        walk(root)
    producer = {pcoll: tid for tid in leaves for pcoll in transforms[tid].outputs.values()}
    waiting: dict[str, int] = {}
    consumers: dict[str, list[str]] = {tid: [] for tid in leaves}
    for tid in leaves:
        before = {producer[pc] for pc in _inputs(transforms[tid]) if pc in producer} - {tid}
        waiting[tid] = len(before)
        for other in before:
            consumers[other].append(tid)
    ready = [(transforms[tid].unique_name, tid) for tid in leaves if not waiting[tid]]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        _, tid = heapq.heappop(ready)
        order.append(tid)
        for nxt in consumers[tid]:
            waiting[nxt] -= 1
            if not waiting[nxt]:
                heapq.heappush(ready, (transforms[nxt].unique_name, nxt))
    if len(order) != len(leaves):  # a cycle: Beam's optimizer never makes one; keep its order
        return leaves
    return order


def _inputs(t: beam_runner_api_pb2.PTransform) -> list[str]:
    """The PCollections a leaf reads: its inputs, and a fused stage's side inputs too."""
    pcolls = list(t.inputs.values())
    if t.spec.urn == EXECUTABLE_STAGE:
        stage = beam_runner_api_pb2.ExecutableStagePayload.FromString(t.spec.payload)
        pcolls.append(stage.input)
        pcolls += [stage.components.transforms[side.transform_id].inputs[side.local_name]
                   for side in stage.side_inputs]
    return pcolls


def _lifted_merges(pipeline: beam_runner_api_pb2.Pipeline, leaves: list[str]) -> dict[str, beam_runner_api_pb2.FunctionSpec]:
    """PCollection (a GroupByKey's output) -> the CombineFn spec of the lifted combine's merge
    step that is its only consumer."""
    transforms = pipeline.components.transforms
    readers: dict[str, int] = {}
    for tid in leaves:
        for pcoll in set(_inputs(transforms[tid])):
            readers[pcoll] = readers.get(pcoll, 0) + 1
    merges: dict[str, beam_runner_api_pb2.FunctionSpec] = {}
    for tid in leaves:
        t = transforms[tid]
        if t.spec.urn != EXECUTABLE_STAGE:
            continue
        stage = beam_runner_api_pb2.ExecutableStagePayload.FromString(t.spec.payload)
        if readers.get(stage.input) != 1:
            continue
        for inner in stage.transforms:
            step = stage.components.transforms[inner]
            if step.spec.urn == _MERGE_ACCUMULATORS and list(step.inputs.values()) == [stage.input]:
                payload = beam_runner_api_pb2.CombinePayload.FromString(step.spec.payload)
                merges[stage.input] = payload.combine_fn
    return merges


def _node(dag: DAG, pipeline: beam_runner_api_pb2.Pipeline, transform_id: str, index: int,
          coders: PipelineCoders, collector: MonitoringCollector, parallelism: int | None,
          merges: dict[str, beam_runner_api_pb2.FunctionSpec], workers: ProcessWorkers | None = None) -> _Node:
    t = pipeline.components.transforms[transform_id]
    urn = t.spec.urn
    if urn == IMPULSE:
        (out,) = t.outputs.values()
        routes = PCollectionRoutes()
        v = dag.new_vertex(f"impulse-{index} {t.unique_name}", ProcessorSupplier(ImpulseP, out, routes), 1)
        return _Node(v, "impulse", [], [out], routes, [t.unique_name])
    if urn == FLATTEN:
        (out,) = t.outputs.values()
        routes = PCollectionRoutes()
        v = dag.new_vertex(f"flatten-{index} {t.unique_name}", ProcessorSupplier(FlattenP, out, routes),
                           parallelism)
        return _Node(v, "flatten", [(pc, "main") for pc in t.inputs.values()], [out], routes, [t.unique_name])
    if urn == GROUP_BY_KEY:
        (inp,) = t.inputs.values()
        (out,) = t.outputs.values()
        routes = PCollectionRoutes()
        merge = merges.get(out)
        merge_fn = None if merge is None else pickler.dumps(CombineFn.from_runner_api(merge, coders.context))
        supplier = ProcessorSupplier(GroupByKeyP, coders.windowed_coder(inp), coders.windowed_coder(out),
                                     coders.windowing(inp), out, routes, merge_fn)
        v = dag.new_vertex(f"group-{index} {t.unique_name}", supplier, parallelism)
        return _Node(v, "group_by_key", [(inp, "keyed")], [out], routes, [t.unique_name])
    if urn == EXECUTABLE_STAGE:
        return _stage_node(dag, pipeline, t, index, coders, collector, parallelism, workers)
    raise UnsupportedBeamFeature(f"Beam step {t.unique_name!r}: transform {urn!r} is not supported by the "
                                 "jetbench runner")


def _stage_node(dag: DAG, pipeline: beam_runner_api_pb2.Pipeline, t: beam_runner_api_pb2.PTransform, index: int,
                coders: PipelineCoders, collector: MonitoringCollector, parallelism: int | None,
                workers: ProcessWorkers | None = None) -> _Node:
    stage = beam_runner_api_pb2.ExecutableStagePayload.FromString(t.spec.payload)
    components = stage.components
    ordered = sorted(stage.transforms, key=_local_order)
    names = {tid: components.transforms[tid].unique_name for tid in ordered}
    transforms: dict[str, beam_runner_api_pb2.PTransform] = {names[tid]: components.transforms[tid] for tid in ordered}
    transforms[_INPUT_ID] = beam_runner_api_pb2.PTransform(
        unique_name=_INPUT_ID,
        spec=beam_runner_api_pb2.FunctionSpec(urn=bundle_processor.DATA_INPUT_URN, payload=beam_fn_api_pb2.RemoteGrpcPort(
            coder_id=coders.windowed_coder_id(stage.input)).SerializeToString()),
        outputs={"out": stage.input})
    outputs: dict[str, str] = {}
    for k, pcoll in enumerate(stage.outputs):
        write_id = f"jetbench/write/{k}"
        transforms[write_id] = beam_runner_api_pb2.PTransform(
            unique_name=write_id,
            spec=beam_runner_api_pb2.FunctionSpec(urn=bundle_processor.DATA_OUTPUT_URN,
                                                  payload=beam_fn_api_pb2.RemoteGrpcPort(
                                                      coder_id=coders.windowed_coder_id(pcoll)).SerializeToString()),
            inputs={"in": pcoll})
        outputs[write_id] = pcoll
    descriptor = beam_fn_api_pb2.ProcessBundleDescriptor(
        transforms=transforms, pcollections=components.pcollections, coders=pipeline.components.coders,
        windowing_strategies=components.windowing_strategies, environments=components.environments)
    inputs: list[tuple[str, str]] = [(stage.input, "main")]
    sides: list[SideInputSpec] = []
    for side in stage.side_inputs:
        consumer = components.transforms[side.transform_id]
        pcoll = consumer.inputs[side.local_name]
        payload = proto_utils.parse_Bytes(consumer.spec.payload, beam_runner_api_pb2.ParDoPayload)
        pattern = payload.side_inputs[side.local_name].access_pattern.urn
        if pattern not in _SIDE_INPUT_PATTERNS:
            raise UnsupportedBeamFeature(f"Beam step {names[side.transform_id]!r}: side input {side.local_name!r} "
                                         f"is read as {pattern!r}; the runner supports iterable and multimap")
        sides.append(SideInputSpec(len(inputs), names[side.transform_id], side.local_name,
                                   payload.side_inputs[side.local_name].access_pattern, coders.windowed_coder(pcoll)))
        inputs.append((pcoll, "side"))
    timers = []
    for tid in ordered:
        spec = components.transforms[tid].spec
        if spec.urn in translations.PAR_DO_URNS:
            payload = proto_utils.parse_Bytes(spec.payload, beam_runner_api_pb2.ParDoPayload)
            for family_id, family in payload.timer_family_specs.items():
                timers.append(TimerFamily(names[tid], family_id, coders.coder(family.timer_family_coder_id)))
    stateful = bool(stage.user_states or stage.timers or timers)
    if stateful:  # user state and timers are per key: each instance owns the keys routed to it
        inputs[0] = (stage.input, "keyed")
    steps = [names[tid] for tid in ordered]
    name = f"stage-{index} {_short(steps)}"
    routes = PCollectionRoutes()
    in_processes = workers is not None and not stateful and not sides  # state and side inputs stay in-process
    reads_restrictions = in_processes and any(
        components.transforms[tid].spec.urn == _PROCESS_RESTRICTIONS
        and stage.input in components.transforms[tid].inputs.values() for tid in ordered)
    # its input arrives as (key, element) pairs, whose keys the stage drops: a key for the state of
    # a stateful stage, a sequence number dealing out a splittable DoFn's restrictions
    keyed_input = frozenset({0} if stateful or reads_restrictions else ())
    spec = StageSpec(name, descriptor, _INPUT_ID, outputs, steps, sides, keyed_input, timers,
                     stateful, workers if in_processes else None)
    v = dag.new_vertex(name, ProcessorSupplier(ExecutableStageP, spec, routes, collector), parallelism)
    return _Node(v, "stage", inputs, list(stage.outputs), routes, steps, reads_restrictions)


def _local_order(transform_id: str) -> tuple[int, str]:
    tail = transform_id.rsplit("_", 1)[-1]
    return (int(tail), transform_id) if tail.isdigit() else (1 << 30, transform_id)


def _short(steps: list[str]) -> str:
    """A stage's label: its first and last step (not the ones between, which a reader of an
    error naming the failed step should not mistake for it)."""
    if not steps:
        return "(empty)"
    return steps[0] if len(steps) == 1 else f"{steps[0]} .. {steps[-1]}"
