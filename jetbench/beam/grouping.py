"""Beam's GroupByKey as a jetbench vertex: a partitioned edge on the encoded key bytes feeds
instances that each group the keys they own, then apply the windowing strategy (window
assignment already done upstream; merging windows merged here) and its trigger with Beam's own
trigger driver over the whole key (`create_trigger_driver(windowing, True).process_entire_key`).

A batch grouping: the groups are emitted once every input is exhausted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from apache_beam.transforms import trigger
from apache_beam.transforms.window import GlobalWindow, GlobalWindows
from apache_beam.utils import windowed_value

from ..core.inbox import Inbox
from ..core.processor import Processor
from .coding import encode_chunks
from .routes import PCollectionRoutes, PendingOutput

__all__ = ["GroupByKeyP"]

_ON_TIME_ONLY = windowed_value.PaneInfo(is_first=True, is_last=True, timing=windowed_value.PaneInfoTiming.ON_TIME,
                                       index=0, nonspeculative_index=0)


class GroupByKeyP(Processor):
    """Groups ``(key bytes, decoded element)`` pairs by key; at the end emits each key's groups,
    windowed and triggered, as chunks of the output PCollection."""

    snapshot_support = "unsupported"

    def __init__(self, input_coder: Any, output_coder: Any, windowing: Any, output_pcoll: str,
                 routes: PCollectionRoutes):
        self.input_coder = input_coder
        self.output_coder = output_coder
        self.windowing = windowing
        self.output_pcoll = output_pcoll
        self.routes = routes
        self._groups: defaultdict[bytes, list[Any]] = defaultdict(list)
        self._pending = PendingOutput()
        self._chunks: Iterator[bytes] | None = None
        self.keys_grouped = 0

    def process(self, ordinal: int, inbox: Inbox) -> None:
        groups: defaultdict[bytes, list[Any]] = self._groups
        for key, element in inbox.take():  # the element decoded by the producer's `KeyedSplitter`
            groups[key].append(element)

    def complete(self) -> bool:
        if self._chunks is None:
            self._chunks = encode_chunks(self._grouped(), self.output_coder)
        while self._pending.flush(self.outbox):
            chunk = next(self._chunks, None)
            if chunk is None:
                return True
            self._pending.extend(self.routes.items(self.output_pcoll, chunk))
        return False

    def _grouped(self) -> Iterator[Any]:
        default = self.windowing.is_default()
        driver = None if default else trigger.create_trigger_driver(self.windowing, True)
        groups, self._groups = self._groups, defaultdict(list)
        for decoded in groups.values():
            self.keys_grouped += 1
            key = decoded[0].value[0]
            if driver is None:
                yield GlobalWindows.windowed_value(
                    (key, [wv.value[1] for wv in decoded]), timestamp=GlobalWindow().max_timestamp(),
                    pane_info=_ON_TIME_ONLY)
            else:
                yield from driver.process_entire_key(key, [wv.with_value(wv.value[1]) for wv in decoded])

    def metrics(self) -> dict[str, int]:
        return {"keys_grouped": self.keys_grouped}

