"""Beam's GroupByKey as a jetbench vertex: a partitioned edge on the encoded key bytes feeds
instances that each group the keys they own, then apply the windowing strategy (window
assignment already done upstream; merging windows merged here) and its trigger with Beam's own
trigger driver over the whole key (`create_trigger_driver(windowing, True).process_entire_key`).

A batch grouping: the groups are emitted once every input is exhausted, a chunk of keys at a
time.

The GroupByKey of a lifted combine (Beam's phases: Precombine in the producing stage, this
GroupByKey, MergeAccumulators and ExtractOutputs in the consuming one) gets the combine's
`CombineFn` (``merge_fn``, pickled): in the global window with the default trigger it merges a
key's accumulators as they arrive, every `_MERGE_EVERY` of them, and emits each key with one
accumulator; the merge step downstream then has a single one to merge. That is jetbench's
two-stage aggregation (accumulate before the partitioned edge, combine after it), and a key
holds one accumulator, not a list of them. In a job with a processing guarantee it saves, at a barrier, the groups it holds (each
key's elements encoded with the input coder, under the key's `stable_key`, so that a restore
hands them to the instance the partitioned edge routes that key to); while it emits, it first
hands over the output it has pending, then saves the keys not emitted yet.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterator
from typing import Any, ClassVar

from apache_beam.internal import pickler
from apache_beam.transforms import trigger
from apache_beam.transforms.window import GlobalWindow, GlobalWindows
from apache_beam.utils import windowed_value

from ..core.inbox import Inbox
from ..core.processor import Processor
from .coding import decode_all, encode_all, stable_key
from .routes import PCollectionRoutes, PendingOutput

__all__ = ["GroupByKeyP"]

_ON_TIME_ONLY = windowed_value.PaneInfo(is_first=True, is_last=True, timing=windowed_value.PaneInfoTiming.ON_TIME,
                                       index=0, nonspeculative_index=0)
#: output elements per emitted chunk (a key's panes are never split over two chunks)
_CHUNK = 256
#: a lifted combine's accumulators of one key are merged whenever this many have gathered
_MERGE_EVERY = 32


class GroupByKeyP(Processor):
    """Groups ``(key bytes, decoded element)`` pairs by key; at the end emits each key's groups,
    windowed and triggered, as chunks of the output PCollection."""

    snapshot_support: ClassVar[str] = "supported"

    def __init__(self, input_coder: Any, output_coder: Any, windowing: Any, output_pcoll: str,
                 routes: PCollectionRoutes, merge_fn: bytes | None = None):
        self.input_coder = input_coder
        self.output_coder = output_coder
        self.windowing = windowing
        self.output_pcoll = output_pcoll
        self.routes = routes
        self._groups: defaultdict[bytes, list[Any]] = defaultdict(list)
        self._pending = PendingOutput()
        #: the keys still to emit, in arrival order, once emitting has started
        self._order: deque[bytes] | None = None
        self._driver: Any = None
        self._saving: Iterator[tuple[Any, Any]] | None = None
        self.keys_grouped = 0
        #: the pickled CombineFn of a lifted combine whose accumulators this grouping merges
        self.merge_fn = merge_fn if windowing.is_default() else None
        self._combine_fn: Any = None
        self.merges = 0

    def init(self, outbox: Any, context: Any) -> None:
        super().init(outbox, context)
        if self.merge_fn is not None:
            self._combine_fn = pickler.loads(self.merge_fn)
            self._combine_fn.setup()

    def close(self) -> None:
        if self._combine_fn is not None:
            self._combine_fn.teardown()
            self._combine_fn = None

    def process(self, ordinal: int, inbox: Inbox) -> None:
        groups: defaultdict[bytes, list[Any]] = self._groups
        if self._combine_fn is None:
            for key, element in inbox.take():  # the element decoded by the producer's `KeyedSplitter`
                groups[key].append(element)
            return
        for key, element in inbox.take():
            group = groups[key]
            group.append(element)
            if len(group) >= _MERGE_EVERY:
                groups[key] = [self._merged(group)]

    def _merged(self, group: list[Any]) -> Any:
        """One element holding the merge of ``group``'s accumulators (of one key)."""
        self.merges += 1
        first = group[0]
        merged = self._combine_fn.merge_accumulators([wv.value[1] for wv in group])
        return first.with_value((first.value[0], merged))

    def complete(self) -> bool:
        if self._order is None:
            self._order = deque(self._groups)
            if not self.windowing.is_default():
                self._driver = trigger.create_trigger_driver(self.windowing, True)
        while self._pending.flush(self.outbox):
            chunk = self._next_chunk()
            if chunk is None:
                return True
            self._pending.extend(self.routes.items(self.output_pcoll, chunk))
        return False

    def _next_chunk(self) -> bytes | None:
        order, groups = self._order, self._groups
        assert order is not None
        out: list[Any] = []
        while order and len(out) < _CHUNK:
            out.extend(self._fire(groups.pop(order.popleft())))
        return encode_all(out, self.output_coder) if out else None

    def _fire(self, decoded: list[Any]) -> Iterator[Any]:
        self.keys_grouped += 1
        key = decoded[0].value[0]
        if self._combine_fn is not None and len(decoded) > 1:
            decoded = [self._merged(decoded)]
        if self._driver is None:
            yield GlobalWindows.windowed_value((key, [wv.value[1] for wv in decoded]),
                                               timestamp=GlobalWindow().max_timestamp(), pane_info=_ON_TIME_ONLY)
        else:
            yield from self._driver.process_entire_key(key, [wv.with_value(wv.value[1]) for wv in decoded])

    # -- snapshots -----------------------------------------------------------------------------

    def save_to_snapshot(self) -> bool:
        if not self._pending.flush(self.outbox):  # output of keys already taken goes before the barrier
            return False
        if self._saving is None:
            coder = self.input_coder
            self._saving = ((stable_key(key), (key, encode_all(elements, coder)))
                            for key, elements in self._groups.items())
        if not self.outbox.offer_entries_to_snapshot(self._saving):
            return False
        self._saving = None
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        groups, coder = self._groups, self.input_coder
        for _, (key, data) in inbox.take():
            groups[key].extend(decode_all(data, coder))

    def metrics(self) -> dict[str, int]:
        return {"keys_grouped": self.keys_grouped, "accumulator_merges": self.merges}
