"""Processors behind `jetbench.sources` and `jetbench.sinks`: files, a rate-driven generator,
a scripted test stream, and the dict / callback / pandas / files / latency sinks.

Each processor comes with a small supplier class (what a `Vertex` calls once per instance);
the collecting sinks' suppliers also merge the instances' ``result_part()`` into `Job.result`.
"""

from __future__ import annotations

import glob
import math
import os
import random
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable
from itertools import accumulate
from typing import Any

from ..core.errors import JetbenchError
from ..core.plan import merge_parts
from ..core.processor import Processor
from ._emit import EmittingProcessor
from .sinks import CollectSink, CollectSinkP
from .sources import ItemsSourceP
from .supplier import ProcessorSupplier

#: Characters of text a file source reads per ``complete()`` call (then it returns).
FILE_CHUNK_CHARS = 1 << 16


# -- files source -----------------------------------------------------------------------------


class FilesSourceP(EmittingProcessor):
    """Emits the lines (without the newline) of its share of ``paths``: file i goes to the
    instance with global index ``i % total_parallelism``.

    Non-cooperative (blocking file I/O). Each ``complete()`` reads about `FILE_CHUNK_CHARS`
    characters and emits them as one batch; it also copes with a refusing outbox (tests).
    """

    is_cooperative = False

    def __init__(self, paths: list[str], encoding: str = "utf-8"):
        self.paths = paths
        self.encoding = encoding
        self._mine: list[str] = []
        self._file = None

    def init(self, outbox, context) -> None:
        super().init(outbox, context)
        self._mine = list(self.paths[context.global_index :: context.total_parallelism])
        self._mine.reverse()  # pop() from the end takes them in path order

    def complete(self) -> bool:
        emitter = self._emitter
        if not emitter.flush():
            return False
        while True:
            if self._file is None:
                if not self._mine:
                    return True
                self._file = open(self._mine.pop(), encoding=self.encoding)  # noqa: SIM115 - closed below or in close()
            lines = self._file.readlines(FILE_CHUNK_CHARS)
            if lines:
                emitter.emit([line[:-1] if line[-1:] == "\n" else line for line in lines])
                return False
            self._file.close()
            self._file = None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def matching_files(glob_pattern: str) -> list[str]:
    """The regular files matching ``glob_pattern`` (``**`` recurses), sorted by path."""
    paths = sorted(p for p in glob.glob(os.path.expanduser(glob_pattern), recursive=True) if os.path.isfile(p))
    if not paths:
        raise JetbenchError(f"files source: no file matches {glob_pattern!r}")
    return paths


class FilesSource(ProcessorSupplier):
    """Supplier of `FilesSourceP`; the glob is expanded once, here (an error if nothing matches)."""

    def __init__(self, glob_pattern: str, encoding: str = "utf-8"):
        super().__init__(FilesSourceP, matching_files(glob_pattern), encoding, label="files_source")
        self.glob_pattern = glob_pattern

    def __repr__(self) -> str:
        return f"files_source({self.glob_pattern!r}, {len(self.paths)} files)"


# -- generator source -------------------------------------------------------------------------


class GeneratorP(EmittingProcessor):
    """Jet's GeneratorP: emits items at ``rate_per_s`` (over all instances) on the wall clock.

    Sequence number ``s`` is due ``s / rate_per_s`` seconds after ``init``;
    instance k of n emits s = k, k + n, ... Each ``complete()`` emits what is due, up to the
    outbox's room, as one batch, and offers nothing when nothing is due (so the worker idles).
    Items are ``item_fn(s)`` (default ``s``), or ``(ts, item)`` when ``timestamped``, where
    ``ts`` is the wall-clock time (epoch ms) at which the item was *due*: the moment the event
    happened, so end-to-end latency includes any time it waited for the worker to wake up.
    With ``count`` the instances emit sequence numbers ``0 .. count - 1`` between them and
    complete; without it they never complete. `next_wake_time` tells a timer-aware idle
    strategy when the next item is due.
    """

    def __init__(
        self,
        rate_per_s: float,
        item_fn: Callable[[int], Any] | None = None,
        timestamped: bool = True,
        count: int | None = None,
    ):
        self.rate_per_s = rate_per_s
        self.item_fn = item_fn
        self.timestamped = timestamped
        self.count = count
        self._start_ns = 0

    def init(self, outbox, context) -> None:
        super().init(outbox, context)
        self._step = context.total_parallelism
        self._next = context.global_index  # the next sequence number this instance emits
        self._end = math.inf if self.count is None else self.count
        self._start_ns = time.monotonic_ns()
        self._start_epoch_ms = time.time_ns() / 1e6

    def next_wake_time(self) -> float | None:
        """When (``time.monotonic()`` seconds) this instance's next item is due."""
        if self._next >= self._end:
            return None
        return self._start_ns / 1e9 + self._next / self.rate_per_s

    def complete(self) -> bool:
        emitter = self._emitter
        if not emitter.flush():
            return False
        seq, step, end = self._next, self._step, self._end
        if seq >= end:
            return True
        # highest sequence number due by now, over all instances
        due = min((time.monotonic_ns() - self._start_ns) * self.rate_per_s // 1_000_000_000, end - 1)
        n = min(int((due - seq) // step) + 1, emitter.room()) if due >= seq else 0
        if n <= 0:
            return False
        seqs = range(seq, seq + n * step, step)
        self._next = seq + n * step
        fn = self.item_fn
        if self.timestamped:
            t0, ms_per_item = self._start_epoch_ms, 1000.0 / self.rate_per_s
            if fn is None:
                items = [(t0 + s * ms_per_item, s) for s in seqs]
            else:
                items = [(t0 + s * ms_per_item, fn(s)) for s in seqs]
        else:
            items = list(seqs) if fn is None else [fn(s) for s in seqs]
        emitter.emit(items)
        return self._next >= end and not emitter.pending


class GeneratorSource(ProcessorSupplier):
    """Supplier of `GeneratorP`; its params are those of `GeneratorP`."""

    def __init__(
        self,
        rate_per_s: float,
        item_fn: Callable[[int], Any] | None = None,
        timestamped: bool = True,
        count: int | None = None,
    ):
        if isinstance(rate_per_s, bool) or not isinstance(rate_per_s, int | float) or not rate_per_s > 0:
            raise JetbenchError(f"generator: rate_per_s must be a number > 0, got {rate_per_s!r}")
        if math.isinf(rate_per_s):
            raise JetbenchError("generator: rate_per_s must be finite")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
            raise JetbenchError(f"generator: count must be None or an int >= 0, got {count!r}")
        if item_fn is not None and not callable(item_fn):
            raise JetbenchError(f"generator: item_fn must be callable, got {item_fn!r}")
        super().__init__(GeneratorP, rate_per_s, item_fn, timestamped, count, label="generator")

    def __repr__(self) -> str:
        return f"generator({self.rate_per_s:g}/s, count={self.count})"


# -- test stream ------------------------------------------------------------------------------


class TestStreamSource:
    """Supplier emitting scripted ``(timestamp, item)`` events in order, from instance 0 only."""

    __test__ = False  # not a pytest test class

    def __init__(self, events: Iterable[tuple[float, Any]]):
        checked = []
        for i, event in enumerate(events):
            try:
                ts, item = event
            except (TypeError, ValueError):
                raise JetbenchError(f"test_stream: event {i} must be a (timestamp, item) pair, got {event!r}") from None
            if isinstance(ts, bool) or not isinstance(ts, int | float):
                raise JetbenchError(f"test_stream: event {i} has a non-numeric timestamp {ts!r}")
            checked.append((ts, item))
        self.events = tuple(checked)

    def __call__(self) -> ItemsSourceP:
        # an iterator (not a sequence) is read by global instance 0 alone
        return ItemsSourceP(iter(self.events))

    def __repr__(self) -> str:
        return f"test_stream({len(self.events)} events)"


# -- sinks ------------------------------------------------------------------------------------


class ToDictSinkP(Processor):
    """Puts ``(key, value)`` pairs into a dict (a later value replaces an earlier one)."""

    collects = True

    def __init__(self) -> None:
        self.result: dict = {}

    def process(self, ordinal: int, inbox) -> None:
        self.result.update(inbox.take())

    def result_part(self) -> dict:
        return self.result


class ToDictSink(ProcessorSupplier):
    """Supplier of `ToDictSinkP`; the job's result is one dict (instances merged in index order)."""

    def __init__(self) -> None:
        super().__init__(ToDictSinkP, label="to_dict_sink")

    #: the dicts of the instances merged in index order
    merge_results = staticmethod(merge_parts)

    def __repr__(self) -> str:
        return "to_dict_sink()"


class CallbackSinkP(Processor):
    """Calls ``fn(item)`` for each item (an exception fails the job)."""

    def __init__(self, fn: Callable[[Any], Any]):
        self.fn = fn

    def process(self, ordinal: int, inbox) -> None:
        inbox.drain(self.fn)


class CallbackSink(ProcessorSupplier):
    """Supplier of `CallbackSinkP`; ``fn`` is its param."""

    def __init__(self, fn: Callable[[Any], Any]):
        if not callable(fn):
            raise JetbenchError(f"callback sink: fn must be callable, got {fn!r}")
        super().__init__(CallbackSinkP, fn, label="callback_sink")

    def __repr__(self) -> str:
        return f"callback_sink({getattr(self.fn, '__name__', self.fn)})"


class PandasSink(ProcessorSupplier):
    """Supplier of a `CollectSinkP` whose merged items become a ``pandas.DataFrame`` at job end.

    Named tuples, dataclasses and dicts give one column per field; other items go through
    ``pandas.DataFrame(items)`` as they are.
    """

    def __init__(self) -> None:
        super().__init__(CollectSinkP, label="pandas_sink")

    @staticmethod
    def merge_results(parts: list[list]) -> Any:
        import pandas as pd

        return pd.DataFrame(CollectSink.merge_results(parts))

    def __repr__(self) -> str:
        return "pandas_sink()"


class FilesSinkP(Processor):
    """Writes ``str(item)`` lines to ``directory/part-{k:05d}`` (k = global index).

    Non-cooperative (blocking file I/O); the file is flushed and closed in ``close()``.
    """

    is_cooperative = False

    def __init__(self, directory: str, encoding: str = "utf-8"):
        self.directory = directory
        self.encoding = encoding
        self.path: str | None = None
        self._file = None

    def init(self, outbox, context) -> None:
        super().init(outbox, context)
        os.makedirs(self.directory, exist_ok=True)
        self.path = os.path.join(self.directory, f"part-{context.global_index:05d}")
        self._file = open(self.path, "w", encoding=self.encoding)  # noqa: SIM115 - closed in close()

    def process(self, ordinal: int, inbox) -> None:
        self._file.write("".join([f"{item}\n" for item in inbox.take()]))

    def close(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.flush()
            finally:
                file.close()


class FilesSink(ProcessorSupplier):
    """Supplier of `FilesSinkP`; ``directory`` and ``encoding`` are its params."""

    def __init__(self, directory: str | os.PathLike, encoding: str = "utf-8"):
        super().__init__(FilesSinkP, os.fspath(directory), encoding, label="files_sink")

    def __repr__(self) -> str:
        return f"files_sink({self.directory!r})"


#: Latency samples a `LatencySinkP` keeps before it switches to reservoir sampling.
LATENCY_SAMPLE_LIMIT = 1_000_000


class LatencySinkP(Processor):
    """Records ``now_ms - ts`` for every ``(ts, item)``, with one clock read per batch.

    Count, sum and max are exact; the samples for percentiles are all kept up to ``limit``,
    then a uniform reservoir of ``limit`` of them (algorithm R).
    """

    collects = True

    def __init__(self, limit: int = LATENCY_SAMPLE_LIMIT):
        self.limit = limit
        self.samples: list[float] = []
        self.count = 0
        self.total = 0.0
        self.max = -math.inf
        self._random = random.Random()

    def process(self, ordinal: int, inbox) -> None:
        now = time.time_ns() / 1e6
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


class LatencySink(ProcessorSupplier):
    """Supplier of `LatencySinkP`; merges the instances into one summary dict (see `summarize_latency`)."""

    def __init__(self, limit: int = LATENCY_SAMPLE_LIMIT):
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise JetbenchError(f"latency sink: limit must be an int >= 1, got {limit!r}")
        super().__init__(LatencySinkP, limit, label="latency_sink")

    @staticmethod
    def merge_results(parts: list[tuple[int, float, float, list[float]]]) -> dict[str, Any]:
        return summarize_latency(parts)

    def __repr__(self) -> str:
        return "latency_sink()"


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
