"""Helpers for the window and watermark processor tests: a direct driver, plain-Python reference
implementations of the window semantics, and output comparison by watermark segments.

Semantics the references encode (see jetbench/processors/windows.py):

* Sliding/tumbling: window ``[E - size, E)`` (``E`` a multiple of the slide) holds the events
  with ``E - size <= ts < E`` that arrived while the last watermark was ``< E``; it is emitted
  by the first watermark ``>= E`` (or by ``complete()``) if it holds any event. An event all of
  whose windows end at or before the last watermark is late (dropped, counted).
* Sessions: per key, an event at ``ts`` makes ``[ts, ts + gap)``; overlapping or touching
  sessions merge; a watermark emits the sessions with ``end <= wm``; an event with
  ``ts + gap <= last watermark`` is late.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from jetbench.core.inbox import Inbox
from jetbench.core.items import Stamped, Watermark
from jetbench.core.outbox import Outbox
from jetbench.core.processor import Processor, ProcessorContext
from jetbench.processors.aggregate_operation import AggregateOperation
from jetbench.processors.window_definition import WindowResult

CONTEXT = ProcessorContext("test", 0, 0, 1, 1)
_MISSING = object()


def drive(
    processor: Processor,
    steps: Sequence[Any],
    batch: int = 1024,
    capacity: int = 1024,
    complete: bool = True,
    max_calls: int = 100_000,
    stamped: Callable[[int], bool] | bool = False,
) -> list:
    """Feed ``steps`` (items and Watermarks) in batches of up to ``batch`` items through a
    ``capacity``-limited outbox, draining it after every call; then ``complete()``.

    ``stamped``: whether a batch of ``(ts, item)`` pairs goes in as a stamped chunk's columns
    (as the engine hands a processor that accepts them), or a function of the batch's number
    saying so per batch; else it goes in as the pairs."""
    outbox = Outbox(1, capacity)
    processor.init(outbox, CONTEXT)
    out: list = []

    def drain() -> None:
        out.extend(outbox.take_bucket(0))
        watermark = outbox.take_watermark()
        if watermark is not None:
            out.append(watermark)

    def until_true(fn: Callable[[], bool]) -> None:
        for _ in range(max_calls):
            done = fn()
            drain()
            if done:
                return
        raise AssertionError(f"{fn} not done after {max_calls} calls")

    i = batches = 0
    while i < len(steps):
        step = steps[i]
        if isinstance(step, Watermark):
            until_true(lambda s=step: processor.try_process_watermark(s))
            i += 1
            continue
        j = i
        while j < len(steps) and j - i < batch and not isinstance(steps[j], Watermark):
            j += 1
        chunk = list(steps[i:j])
        as_columns = stamped(batches) if callable(stamped) else stamped
        batches += 1
        inbox = Inbox(Stamped([t for t, _ in chunk], [x for _, x in chunk]) if as_columns else chunk)
        for _ in range(max_calls):
            if not inbox:
                break
            processor.process(0, inbox)
            drain()
        else:
            raise AssertionError("process() did not consume its inbox")
        until_true(processor.try_process)
        i = j
    if complete:
        until_true(processor.complete)
    return out


# -- references ---------------------------------------------------------------------------------


def _fold(op: AggregateOperation, items: list) -> Any:
    acc = op.create()
    for item in items:
        acc = op.accumulate(acc, item)
    return op.finish_fn(acc)


def _group(items: list, key_fn: Callable[[Any], Hashable] | None) -> dict:
    groups: dict = {}
    for item in items:
        groups.setdefault(None if key_fn is None else key_fn(item), []).append(item)
    return groups


def reference_sliding(
    steps: Sequence[Any],
    key_fn: Callable[[Any], Hashable] | None,
    op: AggregateOperation,
    size: int,
    slide: int,
    complete: bool = True,
) -> tuple[list[list], int]:
    """(one list of results per watermark, plus one for ``complete()``; late event count)."""
    wm = -math.inf
    accepted: list[tuple[Any, Any, Any]] = []  # (ts, item, watermark when it arrived)
    late = 0
    segments: list[list] = []

    def ends_of(ts: Any) -> range:
        first = math.floor(ts / slide) * slide + slide
        return range(first, first + size, slide)

    def windows(lo: float, hi: float) -> list:
        ends = sorted({e for ts, _, w in accepted for e in ends_of(ts) if e > w and lo < e <= hi})
        results = []
        for e in ends:
            members = [item for ts, item, w in accepted if e - size <= ts < e and e > w]
            for key, items in _group(members, key_fn).items():
                results.append((e, WindowResult(e - size, e, key, _fold(op, items))))
        return results

    for step in steps:
        if isinstance(step, Watermark):
            segments.append(windows(wm, step.timestamp))
            wm = step.timestamp
        else:
            ts, item = step
            if max(ends_of(ts)) <= wm:
                late += 1
            else:
                accepted.append((ts, item, wm))
    if complete:
        segments.append(windows(wm, math.inf))
    return segments, late


def reference_session(
    steps: Sequence[Any],
    key_fn: Callable[[Any], Hashable] | None,
    op: AggregateOperation,
    gap: int,
    complete: bool = True,
) -> tuple[list[list], int]:
    """Naive session windows: every session is (start, end, items), merged by a full scan."""
    wm = -math.inf
    late = 0
    sessions: dict[Hashable, list[tuple[Any, Any, list]]] = {}
    segments: list[list] = []

    def close(limit: float) -> list:
        results = []
        for key in list(sessions):
            keep = []
            for start, end, items in sessions[key]:
                if end <= limit:
                    results.append((end, WindowResult(start, end, key, _fold(op, items))))
                else:
                    keep.append((start, end, items))
            sessions[key] = keep
        return results

    for step in steps:
        if isinstance(step, Watermark):
            segments.append(close(step.timestamp))
            wm = step.timestamp
            continue
        ts, item = step
        if ts + gap <= wm:
            late += 1
            continue
        key = None if key_fn is None else key_fn(item)
        start, end, items = ts, ts + gap, [item]
        rest = []
        for s in sessions.get(key, []):
            if s[0] <= end and s[1] >= start:  # overlapping or touching
                start, end, items = min(start, s[0]), max(end, s[1]), s[2] + items
            else:
                rest.append(s)
        # merging may make the new session touch one that did not touch the event's own range
        changed = True
        while changed:
            changed = False
            for s in list(rest):
                if s[0] <= end and s[1] >= start:
                    start, end, items = min(start, s[0]), max(end, s[1]), s[2] + items
                    rest.remove(s)
                    changed = True
        sessions[key] = [*rest, (start, end, items)]
    if complete:
        segments.append(close(math.inf))
    return segments, late


# -- comparison ---------------------------------------------------------------------------------


def canon_value(value: Any) -> Any:
    if isinstance(value, Counter):
        return tuple(sorted((k, v) for k, v in value.items() if v))
    if isinstance(value, list):
        return tuple(value)
    return value


def canon(result: Any) -> Any:
    end, wr = result
    return end, wr.start, wr.end, wr.key, canon_value(wr.value)


def split_segments(output: list) -> tuple[list[list], list[Watermark]]:
    """Split an output at its watermarks: (results before each watermark + the tail, watermarks)."""
    segments: list[list] = [[]]
    wms: list[Watermark] = []
    for item in output:
        if isinstance(item, Watermark):
            wms.append(item)
            segments.append([])
        else:
            segments[-1].append(item)
    return segments, wms


def assert_matches(output: list, steps: Sequence[Any], expected_segments: list[list]) -> None:
    """Output = expected segments (any order within a segment, ends ascending) with the input
    watermarks forwarded between them."""
    segments, wms = split_segments(output)
    assert wms == [s for s in steps if isinstance(s, Watermark)], f"watermarks: {wms}"
    assert len(segments) == len(expected_segments), (segments, expected_segments)
    for i, (got, want) in enumerate(zip(segments, expected_segments, strict=True)):
        assert Counter(map(canon, got)) == Counter(map(canon, want)), (
            f"segment {i} (before {wms[i] if i < len(wms) else 'the end'}):\n"
            f"  got  {sorted(map(canon, got), key=repr)}\n  want {sorted(map(canon, want), key=repr)}"
        )
        ends = [r[0] for r in got]
        assert ends == sorted(ends), f"segment {i} not ordered by window end: {ends}"
        for end, wr in got:
            assert end == wr.end
