"""Spark's own windows where they mean the same: a batch tumbling or sliding window aggregation
(``stage.window(w).aggregate(op)``, keyed or not) run as ``groupBy(window(ts, size, slide), key)``.

On the local executor a window aggregation is one vertex (`SlidingWindowP`) behind an edge
partitioned by the item's key. On Spark, when its operation has a typed form
(`jetbench.spark.lowering`), the work is split the way Jet splits a two-stage aggregation:

1. **Frames, in Python, before the shuffle.** In the producer stage a vertex named after the
   window vertex (`FrameAccumulateP`, so an error in the user's key or value function names it)
   folds each task's ``(ts, item)`` events into one accumulator per frame (``slide`` ms, aligned
   to 0 as the local windows are: ``ts - ts % slide``) and key, as `SlidingWindowP` does.
2. **Windows, in Spark.** The ``(frame start, key, accumulator)`` triples cross as typed columns
   (`TypedWindow`: the key and accumulator columns of `TypedAggregation`, and the frame start);
   Spark's ``window(timestamp_millis(frame), size, slide)`` puts each frame in every window that
   holds it (one for tumbling windows, ``size / slide`` for sliding ones: windows ``[start, end)``
   with ``start`` a multiple of ``slide``, the local convention) and ``groupBy(window, key).agg()``
   combines them in the JVM.
3. **Results, in Python.** The window vertex of the consuming stage is replaced by `WindowCombineP`,
   which combines what reaches it per ``(start, end, key)`` and emits the items `SlidingWindowP`
   emits, ``(end, WindowResult(start, end, key, finish(acc)))``, windows in order of end.

Triples that do not fit Spark's types (a key or accumulator as in `jetbench.spark.lowering`, or a
frame start that is not an integral number of ms within +-2**50) travel pickled, past Spark's
aggregation, and are put in their windows in Python (`TypedWindow.decode`): `WindowCombineP`
combines them with Spark's results for an equal key, so the result is the Python path's.

Batch only (the SparkRunner runs bounded jobs): every window is emitted when the input completes,
over all its events, as on the Python path (`jetbench.spark.runner`, "event time in batch mode").
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa

from ..core.inbox import Inbox
from ..processors.aggregate_operation import AggregateOperation
from ..processors.emitter import EmittingProcessor
from ..processors.window_definition import WindowResult
from .lowering import KEY_FIELDS, TypedAggregation, decode_key

__all__ = ["FrameAccumulate", "FrameAccumulateP", "TypedWindow", "WindowCombine", "WindowCombineP", "window_key"]

_MISSING = object()
#: frame starts Spark holds exactly as timestamps (ms), with room for a window's size
_FRAME_LIMIT = 1 << 50


def window_key(result: tuple[Any, Any, Any, Any]) -> Any:
    """What the window accumulators ``(start, end, key, acc)`` are partitioned by on their way to
    `WindowCombineP`: the key, as the local executor partitions the events (equal keys meet; a
    str key takes `stable_hash`'s fast path, a tuple of window and key took 10 us per item)."""
    return result[2]


class _EmitsWhenComplete(EmittingProcessor):
    """A processor that emits its `results` once, when its input completes (what does not fit the
    outbox goes out on the next calls)."""

    snapshot_support: ClassVar[str] = "unsupported"  # a Spark task is retried whole
    _done = False

    def results(self) -> list[Any]:
        raise NotImplementedError

    def complete(self) -> bool:
        if self._done:
            return self._emitter.flush()
        self._done = True
        out = self.results()
        return self._emitter.emit(out) if out else True


class FrameAccumulateP(_EmitsWhenComplete):
    """Stage 1 of a lowered window: ``(ts, item)`` events folded into one accumulator per frame
    (``ts - ts % slide``) and key (None without ``key_fn``); emits ``(frame start, key, acc)``
    triples when its input completes. With a batch kernel (``op.accumulate_groups``; global:
    ``op.accumulate_all``) a batch is folded with one call per frame it spans (its items sorted
    into their frames first), else item by item."""

    def __init__(self, key_fn: Callable[[Any], Hashable] | None, op: AggregateOperation, slide: int):
        self.key_fn = key_fn
        self.op = op
        self.slide = slide
        self.frames: dict[Any, dict[Any, Any]] = {}
        self._batch = op.accumulate_all if key_fn is None else op.accumulate_groups
        self.accepts_stamped = True  # a stamped chunk is read as its columns

    def process(self, ordinal: int, inbox: Inbox) -> None:
        # columns: a stamped chunk as it is (``accepts_stamped``), pairs unzipped
        ts, items = inbox.take_stamped()
        if not ts:
            return
        slide = self.slide
        if self._batch is not None:
            lo, hi = min(ts), max(ts)
            fs = lo - lo % slide
            if fs == hi - hi % slide:  # the whole batch in one frame: one call of the batch kernel
                self._fold(self.frames.setdefault(fs, {}), items)
                return
            # several frames: the items of each frame, then one call of the batch kernel per frame
            buckets: dict[Any, list[Any]] = {}
            for t, item in zip(ts, items, strict=True):
                f = t - t % slide
                bucket = buckets.get(f)
                if bucket is None:
                    buckets[f] = [item]
                else:
                    bucket.append(item)
            for f, bucket in buckets.items():
                self._fold(self.frames.setdefault(f, {}), bucket)
            return
        frames = self.frames
        key_fn = self.key_fn
        create, accumulate = self.op.create, self.op.accumulate
        for t, item in zip(ts, items, strict=True):
            fs = t - t % slide
            found = frames.get(fs)
            if found is None:
                found = frames[fs] = {}
            key = None if key_fn is None else key_fn(item)
            acc = found.get(key, _MISSING)
            found[key] = accumulate(create() if acc is _MISSING else acc, item)

    def _fold(self, frame: dict[Any, Any], items: list[Any]) -> None:
        op, key_fn = self.op, self.key_fn
        if key_fn is not None:
            assert op.accumulate_groups is not None  # _batch is it
            op.accumulate_groups(frame, key_fn, items)
            return
        assert op.accumulate_all is not None  # _batch is it
        acc = frame.get(None, _MISSING)
        frame[None] = op.accumulate_all(op.create() if acc is _MISSING else acc, items)

    def results(self) -> list[Any]:
        out = [(fs, key, acc) for fs, frame in self.frames.items() for key, acc in frame.items()]
        self.frames = {}
        return out


class FrameAccumulate:
    """The supplier of `FrameAccumulateP` (picklable: it travels to the workers in the task plan)."""

    def __init__(self, key_fn: Callable[[Any], Hashable] | None, op: AggregateOperation, slide: int):
        self.key_fn = key_fn
        self.op = op
        self.slide = slide

    def __call__(self) -> FrameAccumulateP:
        return FrameAccumulateP(self.key_fn, self.op, self.slide)


class WindowCombineP(_EmitsWhenComplete):
    """Stage 2 of a lowered window, in place of the window vertex: combines ``(start, end, key,
    acc)`` window accumulators (Spark's, and those of the pickled frames) per window and key, and
    emits ``(end, WindowResult(start, end, key, finish(acc)))`` when its input completes, in order
    of window end, as `SlidingWindowP` does. The first accumulator of a window is copied
    (``combine(create(), acc)``): a pickled frame's accumulator is shared by its windows."""

    def __init__(self, op: AggregateOperation):
        self.op = op
        self.windows: dict[tuple[Any, Any, Any], Any] = {}

    def process(self, ordinal: int, inbox: Inbox) -> None:
        windows = self.windows
        get = windows.get
        combine, create = self.op.combine, self.op.create
        assert combine is not None  # only operations with combine are lowered
        for start, end, key, acc in inbox.take():
            k = (start, end, key)
            current = get(k, _MISSING)
            windows[k] = combine(create() if current is _MISSING else current, acc)

    def results(self) -> list[Any]:
        finish = self.op.finish_fn
        ordered = sorted(self.windows.items(), key=lambda entry: entry[0][1])  # stable: by end, then arrival
        self.windows = {}
        return [(end, tuple.__new__(WindowResult, (start, end, key, finish(acc)))) for (start, end, key), acc in ordered]


class WindowCombine:
    """The supplier of `WindowCombineP`, in place of the window vertex's."""

    def __init__(self, op: AggregateOperation):
        self.op = op

    def __call__(self) -> WindowCombineP:
        return WindowCombineP(self.op)


def _frame_ms(fs: Any) -> int | None:
    """A frame start as Spark holds it (an int of ms), or None when it cannot."""
    t = type(fs)
    if t is float:
        if not fs.is_integer():
            return None
        fs = int(fs)
    elif t is not int:
        return None
    return fs if -_FRAME_LIMIT <= fs <= _FRAME_LIMIT else None


@dataclass
class TypedWindow(TypedAggregation):
    """A lowered window (the cut edge into window vertex ``vertex``): `TypedAggregation`'s columns
    and the frame start ``c<channel>_fs``; Spark puts each typed row in its windows and combines
    them; pickled triples go past Spark's aggregation (see the module doc)."""

    op: AggregateOperation | None = None
    key_fn: Callable[[Any], Hashable] | None = None
    size: int = 1
    slide: int = 1
    vertex: str = ""

    def fields(self) -> list[pa.Field]:
        return [*super().fields(), pa.field(f"{self.prefix}fs", pa.int64())]

    def encode_pairs(self, pairs: list[Any], seq: int) -> tuple[list[list[Any]], list[Any]]:
        """Here ``(frame start, key, accumulator)`` triples: typed columns (`fields`) and the
        triples that keep the Python path."""
        columns: list[list[Any]] = [[] for _ in self.fields()]
        rest: list[Any] = []
        for triple in pairs:
            fs = _frame_ms(triple[0])
            row = self.encode_row(triple[1], triple[2], seq) if fs is not None else None
            if row is None:
                rest.append(triple)
                continue
            seq += 1
            for column, value in zip(columns, (*row, fs), strict=True):
                column.append(value)
        return columns, rest

    def aggregate(self, rows: Any) -> Any:
        """Spark's ``groupBy(window(frame), key).agg(...)`` over this edge's rows, as ``(start, end,
        key columns, g, data, accumulator columns)`` (window bounds in ms). A row of pickled triples
        (``data``) is given frame 0 and kept in one of its windows, a group of its own (its ``g``),
        so it goes through the same aggregation untouched, in one pass over the producer's rows."""
        from pyspark.sql import functions as F

        p = self.prefix
        frame = F.timestamp_millis(F.coalesce(F.col(f"{p}fs"), F.lit(0)))
        w = F.window(frame, f"{self.size} milliseconds", f"{self.slide} milliseconds").alias("w")
        inputs = [f.name for f in self.form.fields(f"{p}a_")]
        windowed = rows.select(w, *self.group_names(), "data", *inputs) \
            .where(F.col("data").isNull() | (F.col("w.start") == F.timestamp_millis(F.lit(0))))
        aggregated = windowed.groupBy("w", *self.group_names(), "data").agg(*self.form.aggregates(f"{p}a_", F))
        return aggregated.select(F.unix_millis(F.col("w.start")).alias("start"), F.unix_millis(F.col("w.end")).alias("end"),
                                 *[c for c in aggregated.columns if c != "w"])

    def decode(self, batch: pa.RecordBatch) -> list[Any]:
        """``(start, end, key, acc)`` window accumulators of a batch of `aggregate`'s rows; the
        pickled triples are put in every window that holds their frame."""
        columns = [c.to_pylist() for c in batch.columns]
        n = len(KEY_FIELDS)
        form = self.form
        size, slide = self.size, self.slide
        out: list[Any] = []
        for row in zip(*columns, strict=True):
            data = row[n + 3]
            if data is None:
                out.append((row[0], row[1], decode_key(row[2:2 + n]), form.decode(row[n + 4:])))
                continue
            for fs, key, acc in pickle.loads(data):
                first = int(fs)
                for end in range(first + slide, first + size + 1, slide):
                    out.append((end - size, end, key, acc))
        return out

    def pre_vertex(self) -> tuple[str, Callable[[], Any]] | None:
        assert self.op is not None
        return self.vertex, FrameAccumulate(self.key_fn, self.op, self.slide)

    def describe(self) -> str:
        window = f"window(ts, {self.size} ms" + ("" if self.size == self.slide else f", {self.slide} ms") + ")"
        by = f"{window}, key" if self.keyed else window
        return f"groupBy({by}).agg({self.form.describe('')})"
