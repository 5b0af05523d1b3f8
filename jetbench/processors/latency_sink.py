"""The latency sink: end-to-end latency percentiles of ``(ts, item)`` events.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, ClassVar

from ..core.clock import SYSTEM_CLOCK
from ..core.inbox import Inbox
from ..core.native import mypyc_attr
from ..core.outbox import Outbox
from ..core.processor import Processor, ProcessorContext
from .kind_params import KindParams, number
from .snapshotting import instance_key, own_values

#: Latency samples a `LatencySinkP` keeps before it switches to reservoir sampling.
LATENCY_SAMPLE_LIMIT = 1_000_000


@mypyc_attr(allow_interpreted_subclasses=True)
class LatencySinkP(Processor):
    """Records ``now_ms - ts`` for every ``(ts, item)``, with one clock read per batch.

    Count, sum and max are exact; the samples for percentiles are all kept up to ``limit``,
    then a uniform reservoir of ``limit`` of them (algorithm R).

    Snapshots: count, sum, max, the samples and the reservoir's random state, under a
    broadcast key naming the instance; a restored instance takes its own (at another
    parallelism, those of the old instances it stands for, merged: counts and sums added,
    samples joined up to ``limit``).
    """

    snapshot_support: ClassVar[str] = "supported"

    collects = True

    # the default is LATENCY_SAMPLE_LIMIT written out: compiled, a class whose defaults are all
    # literals keeps its signature, which ProcessorSupplier reads (tests/core/test_compiled_build.py)
    def __init__(self, limit: int = 1_000_000, seed: int | None = None):
        self.limit = limit
        self.samples: list[float] = []
        self.count = 0
        self.total = 0.0
        self.max = -math.inf
        self._random = random.Random(seed)  # reservoir choices; a seed makes them repeatable
        self._time_ns: Callable[[], int] = SYSTEM_CLOCK.time_ns  # the context's clock, from init

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        self._time_ns = context.clock.time_ns

    def process(self, ordinal: int, inbox: Inbox) -> None:
        now = self._time_ns() / 1e6
        batch = [now - ts for ts, _ in inbox.take()]
        if not batch:
            return
        self.total += sum(batch)
        self.max = max(self.max, max(batch))
        samples, limit, seen = self.samples, self.limit, self.count
        self.count = seen + len(batch)
        room = limit - len(samples)
        if room > 0:
            samples += batch[:room]
            seen += min(room, len(batch))
            batch = batch[room:]
        rand = self._random.random
        for value in batch:
            seen += 1
            j = int(rand() * seen)
            if j < limit:
                samples[j] = value

    def result_part(self) -> tuple[int, float, float, list[float]]:
        return self.count, self.total, self.max, self.samples

    def save_to_snapshot(self) -> bool:
        return self.outbox.offer_to_snapshot(instance_key("LatencySinkP", self.context),
                                             (self.count, self.total, self.max, self.samples,
                                              self._random.getstate()))

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        mine, _, _ = own_values(inbox, "LatencySinkP", self.context)
        for count, total, top, samples, state in mine:
            if not self.count:
                self._random.setstate(state)
            self.count += count
            self.total += total
            self.max = max(self.max, top)
            self.samples += samples[:max(0, self.limit - len(self.samples))]


@mypyc_attr(native_class=False)  # a plain dataclass (a ProcessorSupplier), not a native class
@dataclass(frozen=True, eq=False, repr=False)
class LatencySink(KindParams):
    """The latency sink's parameter and vertex supplier (``latency_sink``): a sink of
    ``(ts, item)`` events whose result is their end-to-end latency (one summary dict over all
    instances, see `summarize_latency`); ``limit`` samples are kept per instance.

    >>> latency_sink(limit=0)
    Traceback (most recent call last):
        ...
    jetbench.processors.kind_params.KindParamError: latency_sink: limit must be an int >= 1, got 0
    """

    limit: int = number(LATENCY_SAMPLE_LIMIT, integer=True, minimum=1, help="samples kept for the percentiles")
    processor = LatencySinkP
    function = "latency_sink"

    def describe(self) -> str:
        return "latency_sink()"

    @staticmethod
    def merge_results(parts: list[tuple[int, float, float, list[float]]]) -> dict[str, Any]:
        return summarize_latency(parts)


#: the latency sink's vertex supplier (its declaration, `LatencySink`)
latency_sink = LatencySink


_PERCENTILES = (("p50_ms", 0.5), ("p90_ms", 0.9), ("p99_ms", 0.99), ("p999_ms", 0.999))


def summarize_latency(parts: list[tuple[int, float, float, list[float]]]) -> dict[str, Any]:
    """Merge ``(count, sum, max, samples)`` parts into count, mean, percentiles and max (ms).

    Percentiles are nearest-rank over the samples. A part that kept fewer samples than items
    (reservoir) weighs each of its samples by ``count / len(samples)``, so parts merge without
    bias. With no items every value but ``count`` is None.

    >>> summarize_latency([(3, 6.0, 3.0, [1.0, 2.0, 3.0]), (1, 4.0, 4.0, [4.0])])["p50_ms"]
    2.0
    """
    parts = [p for p in parts if p[0]]
    count = sum(p[0] for p in parts)
    summary: dict[str, Any] = {"count": count, "mean_ms": None}
    summary.update(dict.fromkeys((name for name, _ in _PERCENTILES), None))
    summary["max_ms"] = None
    if not count:
        return summary
    summary["mean_ms"] = sum(p[1] for p in parts) / count
    summary["max_ms"] = max(p[2] for p in parts)
    if all(len(s) == c for c, _, _, s in parts):  # exact: every item has its sample
        values = sorted(v for p in parts for v in p[3])
        cumulative: list[float] | range = range(1, len(values) + 1)
    else:
        pairs = sorted((v, c / len(s)) for c, _, _, s in parts for v in s)
        values = [v for v, _ in pairs]
        cumulative = list(accumulate(w for _, w in pairs))
    total = cumulative[-1]
    for name, q in _PERCENTILES:
        # nearest rank: the first value whose cumulative weight reaches q of the total
        # (the tolerance keeps 0.9 * 10 from landing past rank 9 by float error)
        i = bisect_left(cumulative, q * total * (1 - 1e-12))
        summary[name] = values[min(i, len(values) - 1)]
    return summary


BUILDER_KINDS = (
    LatencySink.builder_kind(id="latency", label="latency", category="sink", inputs=True, outputs=False,
                             description="(ts, item) items; the job's result is end-to-end latency percentiles"),
)
