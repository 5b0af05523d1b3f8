"""The idle job's latency probe (`LatencyProbeP`), in a module of its own so that it is compiled
with the engine's hot modules (`jetbench.core.compiled`): it is called once per round of the
idle job, where an interpreted ``process`` override cost more than the identity map it wraps.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable
from typing import Final

from ..core.inbox import Inbox
from ..core.native import mypyc_attr
from ..processors.snapshotting import instance_key, own_values
from ..processors.transform import TransformP
from ..processors.transform_chain import Transform
from .job_functions import identity

#: latency samples a probe keeps (then it only counts)
MAX_SAMPLES: Final = 1_000_000


@mypyc_attr(allow_interpreted_subclasses=True)
class LatencyProbeP(TransformP):
    """An identity map that records, per batch, how long ago its oldest item was due (ms).

    Its counters (``items`` passed, latency ``samples``) are part of its snapshot, saved under
    this instance's own key: a job with a processing guarantee that restarts goes on counting
    from the snapshot, so an item is counted once however often the job restarts.

    >>> from jetbench.testing import verify_processor
    >>> report = verify_processor(LatencyProbeP, input=[(0, "a"), (1, "b"), (2, "c")],
    ...                           expected=[(0, "a"), (1, "b"), (2, "c")])
    >>> [run.processor.items for run in report.runs]
    [3, 3, 3, 3, 3]
    """

    def __init__(self) -> None:
        # the job's own (interpreted) identity, as the other maps call it: this module is compiled
        super().__init__(Transform(timestamped=True).map(identity))
        self.samples: list[float] = []
        self.items = 0
        self._time_ns: Callable[[], int] = time.time_ns  # bound once: no module lookup per batch

    def save_to_snapshot(self) -> bool:
        return self.outbox.offer_to_snapshot(instance_key("LatencyProbeP", self.context),
                                             (self.items, array("d", self.samples)))

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        mine, _, _ = own_values(inbox, "LatencyProbeP", self.context)
        for items, samples in mine:  # several when restored at a lower parallelism
            self.items += items
            self.samples += samples[:MAX_SAMPLES - len(self.samples)]

    def process(self, ordinal: int, inbox: Inbox) -> None:
        before = len(inbox)
        if before and not self._emitter.pending:
            samples = self.samples
            if len(samples) < MAX_SAMPLES:
                samples.append(self._time_ns() / 1e6 - inbox.peek()[0])
        super().process(ordinal, inbox)
        self.items += before - len(inbox)
