"""A fused Beam stage as a jetbench processor: it runs the stage's bundles through an
in-process SDK harness (Beam's `EmbeddedWorkerHandler`), elements in and out as encoded bytes.

The processor is **non-cooperative**: a bundle calls user DoFns, which may block (I/O, sleeps,
a slow service) for as long as they like, which would stall every tasklet sharing a cooperative
thread (Jet's Beam runner made the same choice for DoFns). Impulse, Flatten and GroupByKey run
only the runner's own code and stay cooperative.

What a stage gets:

* side inputs (broadcast edges), stored in the stage's state servicer, per window and per key
  as the access pattern asks, once their edge completes;
* the main input: every batch of chunks in the inbox (at most 16) is one bundle (keyed pairs
  from a keyed edge lose their key first); residuals of splittable DoFns are run again until
  none is left (one that asks for a delay, such as PeriodicImpulse's until its next firing,
  waits until then while the stage's thread sleeps, and is saved with a snapshot). Main input that comes before every side input is complete is held in memory
  until they are. Side edges of a higher priority (drained first) would deadlock when the main
  input and a side input both come from one upstream vertex and the main queue fills up: that
  vertex then waits on a consumer that waits on it;
* at the end, the timers the DoFns set (the last setting per key, tag and window, cleared ones
  dropped) fire in timestamp order, round after round until no new timer is set.

User state and timers live in the instance's state servicer: a stateful stage's input comes on
an edge partitioned on the encoded key bytes, so each instance holds the state of its keys.

In a job with a processing guarantee a stage saves its state between two bundles (a bundle runs
whole inside one call, so the bundle open when a barrier comes finishes first, its output ahead
of the barrier): the main input held for side inputs, the side inputs (received and committed),
its state servicer's contents (user state and side inputs, as encoded bytes), the timers set and
its committed Beam metrics (see `MonitoringCollector`),
under the instance's index; the keyed edge into a stateful stage then routes on `stable_key`, so
a new process resuming the job sends each key to the instance that holds its state (at the same
parallelism: another is refused with an error naming the vertex). Bundles that ask for
finalization are finalized once a snapshot covering their output is stored (phase 2), or at the
end; a bundle run before a failure and not covered by a snapshot is run again after the restore
but its finalization from before the failure is lost.
"""

from __future__ import annotations

import itertools
import math
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from apache_beam.coders.coder_impl import create_OutputStream
from apache_beam.portability.api import beam_fn_api_pb2, beam_runner_api_pb2, metrics_pb2
from apache_beam.runners.portability.fn_api_runner import worker_handlers
from apache_beam.runners.portability.fn_api_runner.execution import WindowGroupingBuffer
from apache_beam.runners.worker import bundle_processor, sdk_worker
from apache_beam.runners.worker.statecache import StateCache

from ..core.inbox import Inbox
from ..core.processor import Processor
from .errors import BeamRunnerError, BeamStageError
from .metrics import MonitoringCollector
from .routes import PCollectionRoutes
from .side_inputs import commit_side_input
from .state import SnapshotStateServicer

__all__ = ["ExecutableStageP", "StageSpec", "SideInputSpec", "TimerFamily"]

_bundle_ids = itertools.count(1)
#: at most this many chunks in one bundle: a cancelled job waits for the bundle running at most
_CHUNKS_PER_BUNDLE = 16
_WHILE_RUNNING = re.compile(r"while running '([^']+)'")


@dataclass(frozen=True)
class SideInputSpec:
    ordinal: int
    transform_id: str
    tag: str
    access_pattern: beam_runner_api_pb2.FunctionSpec
    windowed_coder: Any


@dataclass(frozen=True)
class TimerFamily:
    transform_id: str
    family_id: str
    coder: Any


@dataclass
class StageSpec:
    """What the translation knows of one fused stage."""

    vertex_name: str
    descriptor: beam_fn_api_pb2.ProcessBundleDescriptor
    input_transform_id: str
    #: data output transform id -> the PCollection it writes
    outputs: dict[str, str]
    #: Beam's names of the steps fused into this stage
    steps: list[str]
    side_inputs: list[SideInputSpec] = field(default_factory=list)
    keyed_input_ordinals: frozenset[int] = frozenset()
    timer_families: list[TimerFamily] = field(default_factory=list)
    stateful: bool = False
    #: the job's SDK worker processes, for a stage that runs its bundles in them (`jetbench.beam.workers`)
    workers: Any = None


class ExecutableStageP(Processor):
    """Runs one fused Beam stage's bundles in an embedded SDK harness (see the module doc)."""

    is_cooperative = False
    snapshot_support: ClassVar[str] = "supported"

    def __init__(self, spec: StageSpec, routes: PCollectionRoutes, collector: MonitoringCollector):
        self.spec = spec
        self.routes = routes
        self.collector = collector
        self._side_chunks: dict[int, list[bytes]] = {s.ordinal: [] for s in spec.side_inputs}
        self._side_specs = {s.ordinal: s for s in spec.side_inputs}
        self._timers: dict[tuple[str, str], dict[Any, Any]] = {}
        #: main-input chunks that came before every side input was complete
        self._held: list[bytes] = []
        #: residuals of splittable DoFns that asked to be resumed later: (when, encoded element)
        self._deferred: list[tuple[float, bytes]] = []
        #: bundles whose finalization waits for a snapshot covering them (with a guarantee)
        self._to_finalize: list[str] = []
        self._prepared: list[str] = []
        self._worker: Any = None
        self._state: SnapshotStateServicer | None = None
        self._descriptor_id = ""
        self.bundles = 0
        self.elements_in = 0

    # -- lifecycle -----------------------------------------------------------------------------

    def init(self, outbox: Any, context: Any) -> None:
        super().init(outbox, context)
        descriptor = beam_fn_api_pb2.ProcessBundleDescriptor()
        descriptor.CopyFrom(self.spec.descriptor)
        self._descriptor_id = descriptor.id = f"{self.spec.vertex_name}#{context.global_index}"
        self._state = SnapshotStateServicer()
        if self.spec.workers is not None:  # a worker process of the job's pool runs the bundles
            self._worker = self.spec.workers.worker_for(context.global_index, descriptor)
            descriptor.state_api_service_descriptor.CopyFrom(self._worker.state_api_service_descriptor())
            _point_data_ports_at(descriptor, self._worker.data_api_service_descriptor())
        else:  # the embedded harness reads only the descriptors of its "worker manager", no provision info
            self._worker = _embedded_harness(descriptor, self._state)
        descriptor.timer_api_service_descriptor.CopyFrom(self._worker.data_api_service_descriptor())
        if context.processing_guarantee != "none":  # a restart: this instance's committed metrics start again
            self.collector.restart(self.spec.vertex_name, context.global_index)

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if ordinal in self._side_chunks:
            self._side_chunks[ordinal].extend(inbox.take())
            return
        if self._side_chunks:  # a side input is not complete yet: hold the main input
            self._held.extend(self._main_chunks(ordinal, inbox.take()))
            return
        if self._held:  # what was held goes first; the inbox waits for the next call
            self._run_held()
            return
        self._run(self._main_chunks(ordinal, inbox.take(_CHUNKS_PER_BUNDLE)), {})

    def try_process(self) -> bool:
        if self._held and not self._side_chunks:
            self._run_held()
        elif self._deferred:
            self._run_due()
        return not self._held or bool(self._side_chunks)

    def next_wake_time(self) -> float | None:
        """+inf while only input can move this stage on (its dedicated thread then sleeps until a
        producer offers); None while main input is held back that `try_process` can run now; the
        time the first deferred residual is due, if any."""
        if self._held and not self._side_chunks:
            return None
        return min(due for due, _ in self._deferred) if self._deferred else math.inf

    def complete_edge(self, ordinal: int) -> bool:
        side = self._side_specs.get(ordinal)
        if side is not None and ordinal in self._side_chunks:  # not committed before a restore
            buffer = WindowGroupingBuffer(side.access_pattern, side.windowed_coder)
            for chunk in self._side_chunks.pop(ordinal):
                buffer.append(chunk)
            commit_side_input(self._state, side.transform_id, side.tag, side.access_pattern, buffer)
        return True

    def complete(self) -> bool:
        while self._held:
            self._run_held()
        if self._deferred:
            self._run_due()
            if self._deferred:  # not due yet: the thread sleeps until then (next_wake_time)
                return False
        while self._timers:
            fired = self._take_timers()
            if not fired:
                break
            self._run([], fired)
        self._finalize(self._prepared + self._to_finalize)
        self._prepared, self._to_finalize = [], []
        return True

    def close(self) -> None:
        if self._worker is not None:
            if self.spec.workers is None:  # a worker process is the pool's to shut down, at the job's end
                self._worker.stop_worker()
            self._worker = None

    def metrics(self) -> dict[str, int]:
        return {"bundles": self.bundles, "chunks_in": self.elements_in}

    # -- bundles -------------------------------------------------------------------------------

    def _main_chunks(self, ordinal: int, items: list[Any]) -> list[bytes]:
        if ordinal in self.spec.keyed_input_ordinals:
            items = [element for _, element in items]
        self.elements_in += len(items)
        return items

    def _run_held(self) -> None:
        chunks, self._held = self._held[:_CHUNKS_PER_BUNDLE], self._held[_CHUNKS_PER_BUNDLE:]
        self._run(chunks, {})

    def _run(self, chunks: list[bytes], timers: dict[tuple[str, str], bytes]) -> None:
        """Run a bundle of ``chunks`` (and ``timers``), then its residuals until none is left;
        a residual the DoFn asked to resume after a delay (``defer_remainder``, as Beam's
        PeriodicImpulse does until its next firing) waits in ``_deferred`` until then instead of
        being run again at once, over and over."""
        while True:
            now = time.monotonic()
            residuals = []
            for root in self._bundle(chunks, timers):
                delay = root.requested_time_delay
                if delay.seconds > 0 or delay.nanos > 0:
                    self._deferred.append((now + delay.seconds + delay.nanos / 1e9, root.application.element))
                else:
                    residuals.append(root.application.element)
            if not residuals:
                return
            chunks, timers = residuals, {}

    def _run_due(self) -> None:
        """Run the deferred residuals that are due (in one bundle)."""
        now = time.monotonic()
        due = [element for when, element in self._deferred if when <= now]
        if due:
            self._deferred = [(when, element) for when, element in self._deferred if when > now]
            self._run(due, {})

    def _bundle(self, chunks: list[bytes], timers: dict[tuple[str, str], bytes]) -> list[Any]:
        spec, worker = self.spec, self._worker
        bundle_id = f"jetbench_bundle_{next(_bundle_ids)}"
        self.bundles += 1
        data = worker.data_conn
        stream = data.output_stream(bundle_id, spec.input_transform_id)
        for chunk in chunks:
            stream.write(chunk)
        stream.close()
        for family in spec.timer_families:
            timer_stream = data.output_timer_stream(bundle_id, family.transform_id, family.family_id)
            fired = timers.get((family.transform_id, family.family_id))
            if fired:
                timer_stream.write(fired)
            timer_stream.close()
        try:  # the embedded harness runs the bundle in this very call
            future = worker.control_conn.push(beam_fn_api_pb2.InstructionRequest(
                instruction_id=bundle_id,
                process_bundle=beam_fn_api_pb2.ProcessBundleRequest(process_bundle_descriptor_id=self._descriptor_id)))
        except Exception as exc:
            raise self._failure(f"{type(exc).__name__}: {exc}") from exc
        expected: list[Any] = list(spec.outputs)
        expected.extend((f.transform_id, f.family_id) for f in spec.timer_families)
        outputs: list[tuple[str, bytes]] = []
        written: list[tuple[tuple[str, str], bytes]] = []
        # a worker process that fails the bundle sends no more output: stop waiting for it then
        failed = lambda: future.is_done() and bool(future.get().error)  # noqa: E731
        for element in data.input_elements(bundle_id, expected, abort_callback=failed):
            if isinstance(element, beam_fn_api_pb2.Elements.Timers):
                written.append(((element.transform_id, element.timer_family_id), element.timers))
            elif element.data:
                outputs.append((spec.outputs[element.transform_id], element.data))
        response = future.get()
        if response.error:
            raise self._failure(response.error)
        result = response.process_bundle
        self.collector.add(spec.vertex_name, result.monitoring_infos, self.context.global_index)
        for pcoll_id, chunk in outputs:
            for ordinal, item in self.routes.items(pcoll_id, chunk):
                self.outbox.offer(item, ordinal)  # a blocking outbox: waits for room
        self._remember_timers(written)
        if result.requires_finalization:
            if self.context.processing_guarantee == "none":
                self._finalize([bundle_id])
            else:  # once a snapshot holds what the bundle emitted
                self._to_finalize.append(bundle_id)
        return list(result.residual_roots)

    def _finalize(self, bundle_ids: list[str]) -> None:
        for bundle_id in bundle_ids:
            done = self._worker.control_conn.push(beam_fn_api_pb2.InstructionRequest(
                finalize_bundle=beam_fn_api_pb2.FinalizeBundleRequest(instruction_id=bundle_id))).get()
            if done.error:
                raise self._failure(done.error)

    def _failure(self, error: str) -> BeamStageError:
        match = _WHILE_RUNNING.search(error)
        step = match.group(1) if match else None
        where = f"Beam step {step!r}" if step else f"a Beam step of {', '.join(map(repr, self.spec.steps))}"
        return BeamStageError(f"{where} failed in jetbench vertex {self.spec.vertex_name!r}:\n{error}",
                              step=step, vertex=self.spec.vertex_name)

    # -- timers --------------------------------------------------------------------------------

    def _remember_timers(self, written: Iterable[tuple[tuple[str, str], bytes]]) -> None:
        coders = {(f.transform_id, f.family_id): f.coder.get_impl() for f in self.spec.timer_families}
        for family, chunk in written:
            table = self._timers.setdefault(family, {})
            for timer in coders[family].decode_all(chunk):
                where = (timer.user_key, timer.dynamic_timer_tag, timer.windows[0])
                if timer.clear_bit:
                    table.pop(where, None)
                else:
                    table[where] = timer

    def _take_timers(self) -> dict[tuple[str, str], bytes]:
        """The timers set so far, encoded per family in timestamp order; forgets them."""
        timers, self._timers = self._timers, {}
        return self._encoded_timers(timers)

    def _encoded_timers(self, timers: dict[tuple[str, str], dict[Any, Any]]) -> dict[tuple[str, str], bytes]:
        coders = {(f.transform_id, f.family_id): f.coder.get_impl() for f in self.spec.timer_families}
        fired: dict[tuple[str, str], bytes] = {}
        for family, table in timers.items():
            if not table:
                continue
            stream = create_OutputStream()
            for timer in sorted(table.values(), key=lambda t: t.fire_timestamp):
                coders[family].encode_to_stream(timer, stream, True)
            fired[family] = stream.get()
        return fired


    # -- snapshots -----------------------------------------------------------------------------

    def save_to_snapshot(self) -> bool:
        """The instance's state, one entry under its index (see the module doc); called between
        bundles, never inside one."""
        assert self._state is not None
        state = {
            "parallelism": self.context.total_parallelism,
            "held": [*self._held, *(element for _, element in self._deferred)],  # deferred residuals: run at once
            # by step and tag: the ordinals of the side inputs may differ in a new process
            "side_chunks": {(self._side_specs[ordinal].transform_id, self._side_specs[ordinal].tag): list(chunks)
                            for ordinal, chunks in self._side_chunks.items()},
            "servicer": self._state.dump(),
            "timers": self._encoded_timers(self._timers),
            "metrics": [info.SerializeToString()
                        for info in self.collector.committed(self.spec.vertex_name, self.context.global_index)],
        }
        return self.outbox.offer_to_snapshot(self.context.global_index, state)

    def snapshot_commit_prepare(self) -> bool:
        self._prepared += self._to_finalize
        self._to_finalize = []
        return True

    def snapshot_commit_finish(self, success: bool) -> bool:
        if success:  # what those bundles emitted is in a stored snapshot: they may finalize
            prepared, self._prepared = self._prepared, []
            self._finalize(prepared)
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        assert self._state is not None
        for _, state in inbox.take():
            if state["parallelism"] != self.context.total_parallelism:
                raise BeamRunnerError(
                    f"jetbench vertex {self.spec.vertex_name!r}: its state was saved at parallelism "
                    f"{state['parallelism']} and cannot be restored at parallelism {self.context.total_parallelism} "
                    "(each instance holds the state of the keys routed to it): resume with the same parallelism")
            self._held += state["held"]
            ordinals = {(side.transform_id, side.tag): side.ordinal for side in self.spec.side_inputs}
            self._side_chunks = {ordinals[name]: chunks for name, chunks in state["side_chunks"].items()}
            self._state.load(state["servicer"])
            self._remember_timers(state["timers"].items())
            self.collector.restart(self.spec.vertex_name, self.context.global_index,
                                   [metrics_pb2.MonitoringInfo.FromString(info) for info in state["metrics"]])


def _point_data_ports_at(descriptor: beam_fn_api_pb2.ProcessBundleDescriptor, endpoint: Any) -> None:
    """Tell the data ports of ``descriptor`` where the runner's data channel is (a worker process
    connects to it over gRPC; the embedded harness needs no address)."""
    for transform in descriptor.transforms.values():
        if transform.spec.urn in (bundle_processor.DATA_INPUT_URN, bundle_processor.DATA_OUTPUT_URN):
            port = beam_fn_api_pb2.RemoteGrpcPort.FromString(transform.spec.payload)
            port.api_service_descriptor.CopyFrom(endpoint)
            transform.spec.payload = port.SerializeToString()


def _embedded_harness(descriptor: beam_fn_api_pb2.ProcessBundleDescriptor, state: Any) -> Any:
    """Beam's in-process SDK harness for ``descriptor``, reading and writing state through
    ``state``, without Beam's state cache (as Beam's harness runs with ``--state_cache_size=0``).

    The embedded harness's cache (100 MB) would only ever serve one bundle (the runner gives no
    cache tokens, so entries are keyed by the bundle) and weighs every value it stores with
    ``objsize.get_deep_size``, which walks the globals of every loaded module on each call: a
    stateful DoFn paid that on every state write (most of the CPU of a stateful stage here), to
    save re-reading an in-memory dict. Reads and writes go straight to ``state`` instead."""
    manager: Any = _Descriptors(descriptor)
    handler = worker_handlers.EmbeddedWorkerHandler(None, state=state, provision_info=None,  # type: ignore[arg-type]
                                                    worker_manager=manager)
    handler.bundle_processor_cache.state_handler_factory = worker_handlers.SingletonStateHandlerFactory(
        sdk_worker.GlobalCachingStateHandler(StateCache(0), state))
    return handler


class _Descriptors:
    """What `EmbeddedWorkerHandler` reads of its worker manager: the bundle descriptors by id."""

    def __init__(self, descriptor: beam_fn_api_pb2.ProcessBundleDescriptor):
        self._process_bundle_descriptors = {descriptor.id: descriptor}
