"""Unit-test harness for processors: a port of Hazelcast Jet's ``TestSupport.verifyProcessor``.

`verify_processor` drives one processor instance through its whole lifecycle the way the engine
would, but adversarially: the outbox takes **one item per ordinal** and is emptied only between
calls, every processing call must make progress, ``process()`` is called a second time while the
outbox is still full, and the output is compared after each run. It catches processors that lose
or reorder items when the outbox refuses them, spin without progress, claim to be done with
output still pending, or take too long per call.

>>> from jetbench.processors import map_processor
>>> report = verify_processor(
...     map_processor(lambda x: 10 * x),
...     input=[1, 2, Watermark(5), 3],
...     expected=[10, 20, Watermark(5), 30],
... )
>>> [run.mode for run in report.runs]  # doctest: +NORMALIZE_WHITESPACE
['inbox_limit=1', 'inbox_limit=1024', 'inbox_limit=1, restore every snapshot',
 'inbox_limit=1, restore every other snapshot', 'inbox_limit=1, snapshots never restored']

A processor that does the wrong thing fails with an `AssertionError` naming the mode:

>>> verify_processor(map_processor(str), input=[1, 2], expected=["1"])  # doctest: +ELLIPSIS
Traceback (most recent call last):
  ...
AssertionError: [TransformP, inbox_limit=1] output mismatch...

Differences from Jet's ``TestSupport`` (quirks fixed, Python API differences):

* Progress counts an item (or watermark) on **any** output ordinal, not only ordinal 0.
* ``cooperative_fail_ms`` really is the failure threshold (Jet's ``cooperativeTimeout`` only
  switched a fixed 5000 ms check on or off).
* A watermark in the input is delivered on its own through ``try_process_watermark``; the inbox
  given to ``process()`` only ever holds data (as in the engine); a processor that reads columns
  (``accepts_stamped``) gets a batch of ``(ts, item)`` pairs as a stamped chunk, as the engine
  hands it a timestamped stream's columns. Watermarks are not coalesced
  across input ordinals, so the input's watermarks must be strictly increasing in delivery order.
* ``try_process()`` is called at every empty-inbox point and ``complete_edge(ordinal)`` once an
  input ordinal is exhausted, as the engine does (Jet's harness never calls ``tryProcess``).
* Outbox refusals are checked like Jet's ``OutboxImpl`` assertions, per ordinal: after an offer to
  ordinal *o* was refused, the next offer to *o* must start with the same item.
* A non-cooperative processor gets a blocking outbox that never refuses (it empties itself into the
  output instead), as in the engine.
* The boolean methods must return a real ``bool`` (a forgotten ``return`` gives None, which would
  otherwise loop forever).
* Call times exclude garbage-collector pauses.
* The snapshot modes run by default only for a processor that supports snapshots
  (``snapshot_support`` ``"supported"``, e.g. it overrides ``save_to_snapshot``): Jet runs them
  for every processor, but a Python processor that keeps state without saving it would fail
  them; ``snapshots=True`` asks for them anyway. They also run phase 1's
  ``snapshot_commit_prepare`` and, for a snapshot not restored, phase 2's
  ``snapshot_commit_finish(True)``; and a restored instance gets ``complete_edge`` again for the
  input ordinals exhausted before the snapshot, as the engine's restored job does.
"""

from __future__ import annotations

import dataclasses
import gc
import pickle
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .core.clock import SYSTEM_CLOCK, Clock
from .core.inbox import Inbox
from .core.items import Stamped, Watermark, unzip_pairs
from .core.outbox import BlockingOutbox, Outbox
from .core.processor import Processor, ProcessorContext

__all__ = ["RunReport", "SlowCallWarning", "VerifyReport", "verify_processor"]

#: Capacity of each output bucket: one item, so every second offer in a call is refused.
OUTBOX_CAPACITY = 1


#: what the snapshot modes do with the snapshots they take
RESTORE_EVERY, RESTORE_EVERY_OTHER, RESTORE_NEVER = 1, 2, 0


@dataclass(frozen=True)
class _Mode:
    inbox_limit: int
    #: None: no snapshots; else restore every `restore_interval`-th snapshot (0: never)
    restore_interval: int | None = None

    @property
    def name(self) -> str:
        name = f"inbox_limit={self.inbox_limit}"
        if self.restore_interval is None:
            return name
        what = {RESTORE_EVERY: "restore every snapshot", RESTORE_EVERY_OTHER: "restore every other snapshot",
                RESTORE_NEVER: "snapshots never restored"}[self.restore_interval]
        return f"{name}, {what}"

    @property
    def snapshots(self) -> bool:
        return self.restore_interval is not None


# The runs, in order (Jet's five): the second one only runs when there is input; the last three
# (snapshot modes) only when the processor takes part in snapshots (see ``snapshots``). Each
# snapshot mode takes a snapshot before any input, at every empty inbox and between
# complete() calls that made progress but returned False.
_MODES = (_Mode(inbox_limit=1), _Mode(inbox_limit=1024),
          _Mode(1, RESTORE_EVERY), _Mode(1, RESTORE_EVERY_OTHER), _Mode(1, RESTORE_NEVER))


class SlowCallWarning(UserWarning):
    """A processing call took longer than the warning threshold."""


@dataclass
class RunReport:
    """What one run (one mode, one fresh processor) did."""

    mode: str
    inbox_limit: int
    #: The processor instance, closed; e.g. read a sink's ``result_part()`` from it.
    processor: Processor
    #: The output: a list, or a list of lists (one per ordinal) if ``output_ordinals != 1``.
    output: list
    #: Number of timed calls (process, try_process_watermark, try_process, complete_edge, complete).
    calls: int = 0
    slowest_call: str = ""
    slowest_call_ms: float = 0.0


@dataclass
class VerifyReport:
    """Returned by `verify_processor` when every run passed."""

    runs: list[RunReport] = field(default_factory=list)

    @property
    def modes(self) -> list[str]:
        return [run.mode for run in self.runs]

    def __repr__(self) -> str:
        runs = ", ".join(f"{r.mode}: {r.calls} calls" for r in self.runs)
        return f"VerifyReport({runs})"


def verify_processor(
    supplier: Callable[[], Processor],
    *,
    input: Iterable[Any] | None = None,  # Jet's name; shadows the builtin only in here
    inputs: Sequence[Iterable[Any]] | None = None,
    priorities: Sequence[int] | None = None,
    expected: Sequence[Any] | None = None,
    assert_output: Callable[[list], Any] | None = None,
    any_order: bool = False,
    output_ordinals: int = 1,
    context: ProcessorContext | Mapping[str, Any] | None = None,
    progress_assertion: bool = True,
    call_complete: bool = True,
    snapshots: bool | None = None,
    cooperative_warn_ms: float | None = 5.0,
    cooperative_fail_ms: float | None = 5000.0,
    noncooperative_warn_ms: float | None = 10_000.0,
    max_calls: int = 1_000_000,
) -> VerifyReport:
    """Run a processor from ``supplier`` through every test mode and check its output.

    Modes: inbox limit 1, then inbox limit 1024 (only if there is at least one input item), then
    Jet's three snapshot modes at inbox limit 1: every snapshot restored into a new instance,
    every other snapshot restored, snapshots taken but never restored; each with a fresh
    processor from ``supplier``, a fresh outbox of capacity 1 per output ordinal and a fresh
    output. Per run: ``init``; the input in order (priority groups ascending, ordinals
    interleaved item by item within a group, up to ``inbox_limit`` consecutive items of one ordinal
    per inbox; watermarks through ``try_process_watermark``), with ``try_process`` at every empty
    inbox and ``complete_edge`` for every exhausted input ordinal; ``complete()`` until it returns
    True; ``close()`` (always, also after a failure); then the output check.

    A snapshot (Jet's ``TestSupport``): ``save_to_snapshot()`` until True, each call making
    progress (True, an entry or an output item), into a snapshot bucket of one entry emptied
    after each call; ``snapshot_commit_prepare()`` until True; the entries pickled and read
    back (a deep copy, as the engine stores them). Restored: the instance is closed and a
    **new** one from ``supplier`` is initialised, gets the entries through
    ``restore_from_snapshot`` (each call takes an entry or emits) and
    ``finish_snapshot_restore()``, then goes on where the old one stopped. Not restored:
    ``snapshot_commit_finish(True)``. In the snapshot modes the context's
    ``processing_guarantee`` is ``"exactly_once"`` unless the given context names one.

    Args:
        supplier: zero-argument callable returning a **new** processor on every call.
        input: the items of input ordinal 0 (shorthand for ``inputs=[input]``). Leave out both
            ``input`` and ``inputs`` for a source (no input ordinals).
        inputs: one item list per input ordinal.
        priorities: one priority per input ordinal; lower values are delivered first, and a group
            is exhausted before the next starts. Default: all equal.
        expected: the expected output: a list, or a list of lists (one per ordinal) when
            ``output_ordinals != 1``. Default: no output at all. Watermarks that the processor
            emits are part of the output.
        assert_output: instead of ``expected``, a callable that receives the output (same shape)
            after each run and raises if it is wrong.
        any_order: compare with ``expected`` as a multiset (items need not be hashable).
        output_ordinals: number of output ordinals (0 for a sink, as in the engine).
        context: a `ProcessorContext`, or a dict of its fields overriding the defaults
            (vertex ``"test_vertex"``, index 0 of 1).
        progress_assertion: require every ``process``/``try_process_watermark``/``complete_edge``/
            ``complete`` call to take an input item, emit something, or return True.
        call_complete: call ``complete()`` after the input (disable for streaming processors).
        snapshots: run the three snapshot modes (Jet's ``disableSnapshots`` is
            ``snapshots=False``); None (the default): only when the processor supports
            snapshots (its ``snapshot_support`` is ``"supported"``).
        cooperative_warn_ms: a cooperative call slower than this emits a `SlowCallWarning`.
        cooperative_fail_ms: a cooperative call slower than this fails the test (None: never).
        noncooperative_warn_ms: a non-cooperative call slower than this emits a `SlowCallWarning`.
        max_calls: safety net: fail when one phase (one inbox, one watermark, ``try_process``,
            ``complete_edge`` or ``complete``) needs more calls than this.

    Returns:
        A `VerifyReport` with one `RunReport` (mode, processor, output, call statistics) per run.

    Raises:
        AssertionError: the processor broke the contract or its output was wrong; the message
            names the processor and the mode.
        ValueError, TypeError: the arguments are inconsistent.
    """
    if isinstance(supplier, Processor) or not callable(supplier):
        raise TypeError(
            f"verify_processor needs a supplier (a zero-argument callable returning a new "
            f"processor, e.g. `lambda: MyP()`), got {supplier!r}"
        )
    if input is not None and inputs is not None:
        raise ValueError("pass either input or inputs, not both")
    if expected is not None and assert_output is not None:
        raise ValueError("pass either expected or assert_output, not both")
    if output_ordinals < 0:
        raise ValueError(f"output_ordinals must be >= 0, got {output_ordinals}")
    if max_calls < 1:
        raise ValueError(f"max_calls must be >= 1, got {max_calls}")

    input_lists = [list(input)] if input is not None else [list(x) for x in inputs or ()]
    if priorities is None:
        priorities = [0] * len(input_lists)
    elif len(priorities) != len(input_lists):
        raise ValueError(f"{len(priorities)} priorities for {len(input_lists)} input ordinals")
    order = _input_order(input_lists, list(priorities))
    _check_watermarks(order)

    expected_lists = _expected_lists(expected, output_ordinals) if assert_output is None else None
    ctx = _make_context(context)
    settings = _Settings(
        has_input=bool(input_lists),
        order=order,
        exhausted_at=_exhausted_at(input_lists, list(priorities)),
        output_ordinals=output_ordinals,
        context=ctx,
        progress_assertion=progress_assertion,
        call_complete=call_complete,
        snapshots=snapshots,
        cooperative_warn_ms=cooperative_warn_ms,
        cooperative_fail_ms=cooperative_fail_ms,
        noncooperative_warn_ms=noncooperative_warn_ms,
        max_calls=max_calls,
    )

    gc_clock = _GcClock()
    gc.callbacks.append(gc_clock)
    try:
        return _verify(supplier, settings, expected_lists, assert_output, any_order, gc_clock)
    finally:
        gc.callbacks.remove(gc_clock)


def _verify(
    supplier: Callable[[], Processor],
    settings: _Settings,
    expected_lists: list[list] | None,
    assert_output: Callable[[list], Any] | None,
    any_order: bool,
    gc_clock: _GcClock,
) -> VerifyReport:
    output_ordinals = settings.output_ordinals
    report = VerifyReport()
    seen: list[Processor] = []
    def new_processor() -> Processor:
        processor = supplier()
        if not isinstance(processor, Processor):
            raise TypeError(f"supplier {supplier!r} returned {processor!r}, not a Processor")
        if any(processor is p for p in seen):
            raise AssertionError(
                f"supplier {supplier!r} returned the same processor instance twice; it must "
                "create a new one on every call"
            )
        seen.append(processor)
        return processor

    for mode in _MODES:
        if mode.inbox_limit > 1 and not settings.order:
            continue
        processor = new_processor()
        if mode.snapshots and not _wants_snapshots(settings.snapshots, processor):
            continue
        run = _Run(settings, mode, processor, gc_clock, new_processor)
        output = run.execute()
        shaped = output[0] if output_ordinals == 1 else output
        if assert_output is not None:
            try:
                assert_output(shaped)
            except BaseException as e:
                e.add_note(f"verify_processor: assert_output failed for {run.label}")
                raise
        else:
            assert expected_lists is not None  # verify_processor makes them when assert_output is None
            run.check_output(output, expected_lists, any_order)
        report.runs.append(
            RunReport(
                mode=mode.name,
                inbox_limit=mode.inbox_limit,
                processor=run.processor,
                output=shaped,
                calls=run.calls,
                slowest_call=run.slowest_call,
                slowest_call_ms=run.slowest_ns / 1e6,
            )
        )
    return report


def _wants_snapshots(snapshots: bool | None, processor: Processor) -> bool:
    from .core.snapshot import snapshot_support

    support = snapshot_support(processor)
    if snapshots is None:
        return support == "supported"
    if snapshots and support == "unsupported":
        raise AssertionError(
            f"snapshots=True, but {type(processor).__name__} says it keeps state it cannot save "
            "(snapshot_support 'unsupported', or a source that is not replayable)"
        )
    return snapshots


# -- argument handling -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Settings:
    has_input: bool
    order: list[tuple[int, Any]]
    exhausted_at: dict[int, int]
    output_ordinals: int
    context: ProcessorContext
    progress_assertion: bool
    call_complete: bool
    snapshots: bool | None
    cooperative_warn_ms: float | None
    cooperative_fail_ms: float | None
    noncooperative_warn_ms: float | None
    max_calls: int


def _groups(priorities: list[int]) -> list[list[int]]:
    return [[o for o, p in enumerate(priorities) if p == prio] for prio in sorted(set(priorities))]


def _input_order(inputs: list[list], priorities: list[int]) -> list[tuple[int, Any]]:
    """(ordinal, item) in delivery order: groups by priority, ordinals interleaved item by item."""
    order: list[tuple[int, Any]] = []
    for ordinals in _groups(priorities):
        longest = max(len(inputs[o]) for o in ordinals)
        for i in range(longest):
            order.extend((o, inputs[o][i]) for o in ordinals if i < len(inputs[o]))
    return order


def _exhausted_at(inputs: list[list], priorities: list[int]) -> dict[int, int]:
    """For each input ordinal, the position in the delivery order after which it is exhausted."""
    result: dict[int, int] = {}
    start = 0
    for ordinals in _groups(priorities):
        pos = start
        for i in range(max(len(inputs[o]) for o in ordinals)):
            for o in ordinals:
                if i < len(inputs[o]):
                    pos += 1
                    if i == len(inputs[o]) - 1:
                        result[o] = pos
        for o in ordinals:
            result.setdefault(o, start)  # empty input: exhausted as soon as its group starts
        start = pos
    return result


def _check_watermarks(order: list[tuple[int, Any]]) -> None:
    last = None
    for ordinal, item in order:
        if isinstance(item, Watermark):
            if item.is_idle_marker:
                raise ValueError(
                    "the idle marker is engine-internal and never reaches a processor; "
                    "leave it out of the input"
                )
            if last is not None and item.timestamp <= last.timestamp:
                raise ValueError(
                    f"input watermarks must be strictly increasing in delivery order (the harness "
                    f"does not coalesce them across ordinals): {item!r} on ordinal {ordinal} "
                    f"comes after {last!r}"
                )
            last = item


def _expected_lists(expected: Sequence[Any] | None, output_ordinals: int) -> list[list]:
    if expected is None:
        return [[] for _ in range(output_ordinals)]
    if output_ordinals == 1:
        return [list(expected)]
    lists = [list(x) for x in expected if isinstance(x, Iterable) and not isinstance(x, str)]
    if len(lists) != len(expected) or len(lists) != output_ordinals:
        raise ValueError(
            f"with output_ordinals={output_ordinals}, expected must hold one list per ordinal, "
            f"got {_short(expected)}"
        )
    return lists


def _make_context(context: ProcessorContext | Mapping[str, Any] | None) -> ProcessorContext:
    if isinstance(context, ProcessorContext):
        return context
    fields: dict[str, Any] = {
        "vertex_name": "test_vertex",
        "local_index": 0,
        "global_index": 0,
        "local_parallelism": 1,
        "total_parallelism": 1,
    }
    fields.update(context or {})
    ctx = ProcessorContext(**fields)
    if not 0 <= ctx.local_index < ctx.local_parallelism:
        raise ValueError(
            f"local_index {ctx.local_index} outside local_parallelism {ctx.local_parallelism}"
        )
    if not 0 <= ctx.global_index < ctx.total_parallelism:
        raise ValueError(
            f"global_index {ctx.global_index} outside total_parallelism {ctx.total_parallelism}"
        )
    return ctx


class _GcClock:
    """A stopwatch of garbage collection: adds up the time spent in it, read from ``clock``
    (a `gc.callbacks` entry). Not a clock of its own: it reads the engine's `Clock`.

    >>> from jetbench.core.clock import MockClock
    >>> clock = MockClock()
    >>> gc_time = _GcClock(clock)
    >>> gc_time("start", {}); clock.advance(0.002); gc_time("stop", {})
    >>> gc_time.total_ns
    2000000
    """

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self.total_ns = 0
        self._start = 0
        self._now_ns = clock.monotonic_ns

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = self._now_ns()
        else:
            self.total_ns += self._now_ns() - self._start


# -- the outbox --------------------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


class _CheckingOutbox(Outbox):
    """An `Outbox` that remembers, per ordinal, the item it refused (Jet's "unfinished item") and
    asserts that the next offer to that ordinal starts with the same item."""

    def __init__(self, ordinal_count: int, capacity: int, owner: str):
        super().__init__(ordinal_count, capacity, owner)
        self.refused: dict[int, Any] = {}

    def offer(self, item: Any, ordinal: int | Sequence[int] | None = None) -> bool:
        targets = self._targets(item, ordinal)
        self._check_reoffer(item, targets)
        ok = super().offer(item, ordinal)
        for o in targets:
            if ok:
                self.refused.pop(o, None)
            else:
                self.refused[o] = item
        return ok

    def offer_batch(self, items: Iterable[Any], ordinal: int = 0) -> int:
        if type(items) is not list:
            items = list(items)
        if not items:
            return super().offer_batch(items, ordinal)
        self._check_reoffer(items[0], (ordinal,))
        n = len(items)
        done = super().offer_batch(items, ordinal)
        if done < n:
            self.refused[ordinal] = items[done]
        else:
            self.refused.pop(ordinal, None)
        return done

    def offer_stamped(self, ts: list[Any], items: list[Any], ordinal: int = 0) -> int:
        if not items:
            return super().offer_stamped(ts, items, ordinal)
        self._check_reoffer((ts[0], items[0]), (ordinal,))
        n = len(items)
        done = super().offer_stamped(ts, items, ordinal)
        if done < n:
            self.refused[ordinal] = (ts[done], items[done])
        else:
            self.refused.pop(ordinal, None)
        return done

    def _targets(self, item: Any, ordinal: int | Sequence[int] | None) -> Sequence[int]:
        if isinstance(item, Watermark) or ordinal is None:
            return range(self.ordinal_count)
        if isinstance(ordinal, int):
            return (ordinal,)
        return list(ordinal)

    def _check_reoffer(self, item: Any, targets: Iterable[int]) -> None:
        for o in targets:
            if o in self.refused and not _same(self.refused[o], item):
                error = AssertionError(
                    f"{self._owner} offered {_short(item)} to ordinal {o} after the outbox had "
                    f"refused {_short(self.refused[o])} there; after a refusal the processor must "
                    "re-offer the same item before anything else, or that item is lost or reordered"
                )
                error._verify_processor = True  # type: ignore[attr-defined]
                raise error


def _short(item: Any, limit: int = 200) -> str:
    text = repr(item)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _fmt(items: list, limit: int = 2000) -> str:
    text = repr(items)
    if len(text) <= limit:
        return text
    shown = []
    size = 0
    for item in items:
        r = _short(item)
        size += len(r) + 2
        if size > limit:
            break
        shown.append(r)
    return f"[{', '.join(shown)}, ... ({len(items) - len(shown)} more)]"


# -- one run -----------------------------------------------------------------------------------


class _Run:
    """One mode: a fresh processor, outbox and output, driven from init to close."""

    def __init__(self, settings: _Settings, mode: _Mode, processor: Processor, gc_clock: _GcClock,
                 new_processor: Callable[[], Processor] | None = None):
        self.s = settings
        self.gc_clock = gc_clock
        self.mode = mode
        self.processor = processor
        self.name = type(processor).__name__
        self.label = f"[{self.name}, {mode.name}]"
        self.cooperative = bool(processor.is_cooperative)  # read before init, as the engine does
        n = settings.output_ordinals
        self.output: list[list] = [[] for _ in range(n)]
        self.outbox = self._new_outbox()
        self.inbox = Inbox()
        self.calls = 0
        self.slowest_ns = 0
        self.slowest_call = ""
        self.context = settings.context
        if mode.snapshots and self.context.processing_guarantee == "none":
            self.context = dataclasses.replace(self.context, processing_guarantee="exactly_once")
        self._new_processor = new_processor
        self._snapshots_taken = 0
        self._completed_edges: list[int] = []  # input ordinals whose complete_edge returned True

    def _new_outbox(self) -> Outbox:
        n = self.s.output_ordinals
        if self.cooperative:
            return _CheckingOutbox(n, OUTBOX_CAPACITY, self.label)
        return BlockingOutbox(n, OUTBOX_CAPACITY, self.label, self._drain)

    # -- driving ---------------------------------------------------------------------------

    def execute(self) -> list[list]:
        try:
            self.processor.init(self.outbox, self.context)
            self._snapshot()  # before any input
            if self.s.has_input:
                self._run_input()
            if self.s.call_complete:
                self._run_complete()
        except BaseException as e:
            if not getattr(e, "_verify_processor", False):
                e.add_note(f"verify_processor: raised while testing {self.label}")
            try:
                self.processor.close()
            except Exception as close_error:
                e.add_note(f"verify_processor: close() then raised {close_error!r}")
            raise
        self.processor.close()
        return self.output

    # -- snapshots -------------------------------------------------------------------------

    def _snapshot(self) -> None:
        """In a snapshot mode: take a snapshot, then restore it into a new instance or commit it."""
        mode = self.mode
        if not mode.snapshots:
            return
        entries = self._save()
        interval = mode.restore_interval
        restore = interval is not None and interval > 0 and self._snapshots_taken % interval == 0
        self._snapshots_taken += 1
        if restore:
            self._restore(entries)
        else:
            self._run_bool("snapshot_commit_finish", self.processor.snapshot_commit_finish, True)

    def _save(self) -> list[tuple[Any, Any]]:
        outbox = self.outbox
        entries: list[tuple[Any, Any]] = []
        calls = 0
        while True:
            calls = self._count(calls, "save_to_snapshot()")
            mark = self._mark()
            done = self._call_bool("save_to_snapshot", self.processor.save_to_snapshot)
            taken = outbox.take_snapshot()
            entries += taken
            if self.s.progress_assertion and not done and not taken and not self._produced(mark):
                self._fail(
                    f"save_to_snapshot() call without progress: {self.name}.save_to_snapshot() returned "
                    "False, saved no entry and emitted nothing"
                )
            self._drain()
            if done:
                break
        self._run_bool("snapshot_commit_prepare", self.processor.snapshot_commit_prepare)
        try:  # what the engine stores: a deep copy, taken at the barrier
            copied: list[tuple[Any, Any]] = pickle.loads(pickle.dumps(entries, pickle.HIGHEST_PROTOCOL))
        except Exception as e:
            self._fail(f"{self.name}'s snapshot entries cannot be pickled: {type(e).__name__}: {e}")
            raise  # unreachable: _fail raises
        return copied

    def _restore(self, entries: list[tuple[Any, Any]]) -> None:
        """Close the instance and go on in a new one restored from ``entries``."""
        assert self._new_processor is not None  # verify_processor gives it to snapshot modes
        if self.outbox.has_data() or self.outbox.pending_watermark is not None:
            self._fail("the outbox is not empty after a snapshot was saved")
        self.processor.close()
        self.processor = self._new_processor()
        self.outbox = self._new_outbox()
        self.processor.init(self.outbox, self.context)
        inbox = Inbox(list(entries))
        calls = 0
        while inbox:
            calls = self._count(calls, "restore_from_snapshot()")
            before = len(inbox)
            mark = self._mark()
            self._call("restore_from_snapshot", self.processor.restore_from_snapshot, inbox)
            if len(inbox) >= before and not self._produced(mark):
                self._fail(
                    f"restore_from_snapshot() call without progress: {self.name}.restore_from_snapshot(inbox) "
                    f"neither took an entry ({before} entries, head {_short(inbox.peek())}) nor emitted anything"
                )
            self._drain()
        self._run_bool("finish_snapshot_restore", self.processor.finish_snapshot_restore)
        for ordinal in self._completed_edges:  # the restored job's upstream, done, sends DONE again
            self._run_complete_edge(ordinal, again=True)

    def _run_bool(self, method: str, fn: Callable[..., Any], *args: Any) -> None:
        """Call a snapshot method until it returns True, each call making progress."""
        calls = 0
        while True:
            calls = self._count(calls, f"{method}()")
            mark = self._mark()
            done = self._call_bool(method, fn, *args)
            if self.s.progress_assertion and not done and not self._produced(mark):
                self._fail(f"{method}() call without progress: {self.name}.{method}() returned False "
                           "and emitted nothing")
            self._drain()
            if done:
                return

    def _run_input(self) -> None:
        order = self.s.order
        limit = self.mode.inbox_limit
        edges = sorted(self.s.exhausted_at, key=lambda o: (self.s.exhausted_at[o], o))
        pos = 0
        while True:
            # The inbox is empty here.
            if pos:
                self._snapshot()  # (the first was taken before any input)
            self._run_try_process()
            while edges and self.s.exhausted_at[edges[0]] <= pos:
                self._run_complete_edge(edges.pop(0))
            if pos >= len(order):
                return
            ordinal, item = order[pos]
            pos += 1
            if isinstance(item, Watermark):
                self._run_watermark(item)
                continue
            batch = [item]
            while (
                len(batch) < limit
                and pos < len(order)
                and order[pos][0] == ordinal
                and not isinstance(order[pos][1], Watermark)
            ):
                batch.append(order[pos][1])
                pos += 1
            if getattr(self.processor, "accepts_stamped", False) and all(
                    type(item) is tuple and len(item) == 2 for item in batch):
                self.inbox._fill_stamped(Stamped(*unzip_pairs(batch)))  # as the engine hands a stamped chunk
            else:
                self.inbox._fill(batch)
            self._run_inbox(ordinal)

    def _run_inbox(self, ordinal: int) -> None:
        inbox = self.inbox
        process = self.processor.process
        calls = 0
        while inbox:
            calls = self._count(calls, "process()")
            before = len(inbox)
            mark = self._mark()
            self._call("process", process, ordinal, inbox)
            if self.s.progress_assertion and len(inbox) >= before and not self._produced(mark):
                self._fail(
                    f"process() call without progress: {self.name}.process({ordinal}, inbox) "
                    f"neither removed an item from the inbox ({before} items, head "
                    f"{_short(inbox.peek())}) nor emitted anything"
                )
            if inbox and self._outbox_full():
                # Call again with the outbox still full: a cooperative processor must cope with
                # the refusal and keep what it could not emit (no progress is required here).
                self._call("process", process, ordinal, inbox)
            self._drain()

    def _run_watermark(self, wm: Watermark) -> None:
        call = self.processor.try_process_watermark
        calls = 0
        while True:
            calls = self._count(calls, f"try_process_watermark({wm!r})")
            mark = self._mark()
            done = self._call_bool("try_process_watermark", call, wm)
            if self.s.progress_assertion and not done and not self._produced(mark):
                self._fail(
                    f"try_process_watermark() call without progress: {self.name}."
                    f"try_process_watermark({wm!r}) returned False and emitted nothing"
                )
            if not done and self._outbox_full():
                done = self._call_bool("try_process_watermark", call, wm)  # full-outbox re-call
            self._drain()
            if done:
                return

    def _run_try_process(self) -> None:
        calls = 0
        while True:
            calls = self._count(calls, "try_process()")
            done = self._call_bool("try_process", self.processor.try_process)
            self._drain()
            if done:
                return

    def _run_complete_edge(self, ordinal: int, again: bool = False) -> None:
        if not again:
            self._completed_edges.append(ordinal)
        calls = 0
        while True:
            calls = self._count(calls, f"complete_edge({ordinal})")
            mark = self._mark()
            done = self._call_bool("complete_edge", self.processor.complete_edge, ordinal)
            if self.s.progress_assertion and not done and not self._produced(mark):
                self._fail(
                    f"complete_edge() call without progress: {self.name}.complete_edge({ordinal}) "
                    "returned False and emitted nothing"
                )
            self._drain()
            if done:
                return

    def _run_complete(self) -> None:
        calls = 0
        while True:
            calls = self._count(calls, "complete()")
            mark = self._mark()
            done = self._call_bool("complete", self.processor.complete)
            if self.s.progress_assertion and not done and not self._produced(mark):
                self._fail(
                    f"complete() call without progress: {self.name}.complete() returned False "
                    "and emitted nothing"
                )
            refused = getattr(self.outbox, "refused", None)
            if done and refused:
                pending = ", ".join(f"{_short(item)} on ordinal {o}" for o, item in refused.items())
                self._fail(
                    f"outbox has unfinished items, but complete() claims to be done: {self.name} "
                    f"never re-offered the refused {pending}"
                )
            self._drain()
            if done:
                return
            if self._produced(mark):
                self._snapshot()

    # -- helpers ---------------------------------------------------------------------------

    def _count(self, calls: int, what: str) -> int:
        if calls >= self.s.max_calls:
            hint = (
                "; a processor that never finishes needs call_complete=False"
                if what == "complete()"
                else ""
            )
            self._fail(f"{self.name}.{what} still not done after {calls} calls (max_calls){hint}")
        return calls + 1

    def _call(self, method: str, fn: Callable[..., Any], *args: Any) -> Any:
        gc_before = self.gc_clock.total_ns
        start = time.perf_counter_ns()
        result = fn(*args)
        # A full collection scans the whole process heap (tens of ms under pytest): not the
        # processor's cost, so it does not count.
        elapsed = time.perf_counter_ns() - start - (self.gc_clock.total_ns - gc_before)
        self.calls += 1
        if elapsed > self.slowest_ns:
            self.slowest_ns, self.slowest_call = elapsed, method
        self._check_time(method, elapsed / 1e6)
        return result

    def _call_bool(self, method: str, fn: Callable[..., Any], *args: Any) -> bool:
        result = self._call(method, fn, *args)
        if type(result) is not bool:
            self._fail(
                f"{self.name}.{method}() must return True or False, got {result!r} "
                "(a missing return statement?)"
            )
        return result

    def _check_time(self, method: str, ms: float) -> None:
        s = self.s
        if self.cooperative:
            if (
                s.cooperative_fail_ms is not None
                and s.cooperative_fail_ms > 0
                and ms > s.cooperative_fail_ms
            ):
                self._fail(
                    f"cooperative call {self.name}.{method}() took {ms:.1f} ms, over the limit of "
                    f"{s.cooperative_fail_ms} ms (cooperative_fail_ms); return sooner or make the "
                    "processor non-cooperative"
                )
            warn_ms = s.cooperative_warn_ms
        else:
            warn_ms = s.noncooperative_warn_ms
        if warn_ms is not None and warn_ms > 0 and ms > warn_ms:
            kind = "cooperative" if self.cooperative else "non-cooperative"
            warnings.warn(
                f"{self.label} {kind} call {self.name}.{method}() took {ms:.1f} ms (> {warn_ms} ms)",
                SlowCallWarning,
                stacklevel=2,
            )

    def _mark(self) -> int:
        return self.outbox.accepted

    def _produced(self, mark: int) -> bool:
        """Did the processor emit anything (on any ordinal) since ``mark``?"""
        outbox = self.outbox
        return outbox.accepted != mark or outbox.has_data() or outbox.pending_watermark is not None

    def _outbox_full(self) -> bool:
        outbox = self.outbox
        if outbox.pending_watermark is not None:
            return True
        return any(outbox.room(o) <= 0 for o in range(outbox.ordinal_count))

    def _drain(self) -> None:
        """Move every bucket, then a pending watermark (to every ordinal), into the output."""
        outbox = self.outbox
        output = self.output
        for o in range(outbox.ordinal_count):
            output[o].extend(outbox.take_bucket(o))
        watermark = outbox.take_watermark()
        if watermark is not None:
            for o in range(outbox.ordinal_count):
                output[o].append(watermark)

    def _fail(self, message: str) -> None:
        error = AssertionError(f"{self.label} {message}")
        error._verify_processor = True  # type: ignore[attr-defined]
        raise error

    # -- output ----------------------------------------------------------------------------

    def check_output(self, actual: list[list], expected: list[list], any_order: bool) -> None:
        for o, (exp, act) in enumerate(zip(expected, actual, strict=True)):
            where = "" if len(expected) == 1 else f" on ordinal {o}"
            if any_order:
                missing, unexpected = _multiset_diff(exp, act)
                if missing or unexpected:
                    self._fail(
                        f"output mismatch{where} (any order):\n"
                        f"  expected ({len(exp)} items): {_fmt(exp)}\n"
                        f"  actual   ({len(act)} items): {_fmt(act)}\n"
                        f"  missing:    {_fmt(missing)}\n"
                        f"  unexpected: {_fmt(unexpected)}"
                    )
            elif not _lists_equal(exp, act):
                index = next(
                    (i for i, (e, a) in enumerate(zip(exp, act, strict=False)) if not _same(e, a)),
                    min(len(exp), len(act)),
                )
                e = _short(exp[index]) if index < len(exp) else "<end of output>"
                a = _short(act[index]) if index < len(act) else "<end of output>"
                self._fail(
                    f"output mismatch{where}:\n"
                    f"  expected ({len(exp)} items): {_fmt(exp)}\n"
                    f"  actual   ({len(act)} items): {_fmt(act)}\n"
                    f"  first difference at index {index}: expected {e}, got {a}"
                )


def _lists_equal(a: list, b: list) -> bool:
    return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))


def _multiset_diff(expected: list, actual: list) -> tuple[list, list]:
    """(expected items missing from actual, actual items not expected), counting duplicates."""
    try:
        want, got = Counter(expected), Counter(actual)
    except TypeError:  # unhashable items: quadratic matching by equality
        remaining = list(actual)
        missing = []
        for e in expected:
            for i, a in enumerate(remaining):
                if _same(e, a):
                    del remaining[i]
                    break
            else:
                missing.append(e)
        return missing, remaining
    return list((want - got).elements()), list((got - want).elements())
