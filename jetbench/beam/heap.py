"""The heap that exists when a pipeline starts, kept out of Python's full collections while it runs.

CPython's cyclic collector scans every tracked object of the oldest generation at each full
(generation 2) collection, and a process that has imported Beam holds several hundred thousand
of them (modules, classes, functions, protos), none of which a running pipeline frees. On Beam's
Nexmark Q11 over 20 k events a full collection took ~75 ms, and the pipeline's own allocations
(decoded elements held for the grouping, chunks in queues, pairs on keyed edges) triggered three
of them on JetbenchRunner against two on the DirectRunner, which holds fewer objects alive:
0.29-0.32 s of the run's 1.57-1.68 s of CPU against 0.20 s (measured with ``gc.callbacks``).

`FrozenHeap` moves the objects alive at the start of a job to the collector's permanent
generation (``gc.freeze()``) and puts them back (``gc.unfreeze()``) when the last job running
with it ends: full collections during the job scan only what the job allocated. Garbage cycles
among the frozen objects wait for the unfreeze, so nothing is lost, only delayed; objects freed by
reference counting are freed at once as always. ``gc.freeze`` is process-wide: jobs overlapping
in one process share one freeze, counted, and undone when the last of them ends.

>>> import gc
>>> heap = FrozenHeap()
>>> heap.acquire(); frozen = gc.get_freeze_count() > 0; heap.release()
>>> frozen, heap.holders
(True, 0)
"""

from __future__ import annotations

import gc
import threading

__all__ = ["FROZEN_HEAP", "FrozenHeap"]


class FrozenHeap:
    """A counted ``gc.freeze()``: the first `acquire` freezes, the last `release` unfreezes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.holders = 0
        #: freezes done by this object (for tests and reports)
        self.freezes = 0
        self._ours = False  # the freeze in place is this object's (not the process's own)

    def acquire(self) -> None:
        with self._lock:
            self.holders += 1
            if self.holders == 1:
                self._ours = gc.get_freeze_count() == 0  # a freeze the process made itself is left alone
                if self._ours:
                    gc.freeze()
                    self.freezes += 1

    def release(self) -> None:
        with self._lock:
            if self.holders == 0:
                return
            self.holders -= 1
            if self.holders == 0 and self._ours:
                gc.unfreeze()
                self._ours = False


#: the one the runner uses: every JetbenchRunner job in the process shares it
FROZEN_HEAP = FrozenHeap()
