"""The processor test harness catches broken processors (and passes correct ones)."""

from __future__ import annotations

import doctest
import time

import pytest

import jetbench.testing
from jetbench.core.items import Watermark
from jetbench.core.processor import Processor, ProcessorContext
from jetbench.testing import SlowCallWarning, verify_processor

# -- correct processors ------------------------------------------------------------------------


class Doubler(Processor):
    """The textbook cooperative processor: peek, offer, remove only when accepted."""

    def process(self, ordinal, inbox):
        while inbox:
            if not self.outbox.offer(2 * inbox.peek()):
                return
            inbox.remove()


class Recorder(Processor):
    """Emits ``(ordinal, item)`` per item and records every lifecycle call in ``events``."""

    def __init__(self):
        self.events = []
        self.batches = []
        self._batch_pending = False

    def init(self, outbox, context):
        super().init(outbox, context)
        self.events.append(("init", context.vertex_name, context.global_index))

    def process(self, ordinal, inbox):
        if not self._batch_pending:
            self.batches.append((ordinal, len(inbox)))
        while inbox:
            if not self.outbox.offer((ordinal, inbox.peek())):
                self._batch_pending = True
                return
            self.events.append(("item", ordinal, inbox.remove()))
        self._batch_pending = False

    def try_process_watermark(self, watermark):
        if not self.outbox.offer(watermark):
            return False
        self.events.append(("wm", watermark.timestamp))
        return True

    def try_process(self):
        self.events.append(("try_process",))
        return True

    def complete_edge(self, ordinal):
        self.events.append(("complete_edge", ordinal))
        return True

    def complete(self):
        self.events.append(("complete",))
        return True

    def close(self):
        self.events.append(("close",))


class TwoPerItemOnOrdinal1(Processor):
    """Emits two items per input item, only on ordinal 1, removing the input item only when both
    are out: its only progress on some calls is an item on ordinal 1."""

    def __init__(self):
        self._sent = 0

    def process(self, ordinal, inbox):
        while inbox:
            item = inbox.peek()
            while self._sent < 2:
                if not self.outbox.offer((item, self._sent), ordinal=1):
                    return
                self._sent += 1
            self._sent = 0
            inbox.remove()


class Reverser(Processor):
    """Buffers everything and emits it reversed from complete()."""

    def __init__(self):
        self._items = []

    def process(self, ordinal, inbox):
        self._items += inbox.take()

    def complete(self):
        while self._items:
            if not self.outbox.offer(self._items[-1]):
                return False
            self._items.pop()
        return True


class SingleItemSource(Processor):
    """Emits one item and returns the result of that offer: legal even though it leaves the
    capacity-1 bucket full when it says it is done."""

    def complete(self):
        return self.outbox.offer("only")


class BlockingEmitter(Processor):
    """Non-cooperative: relies on the blocking outbox and ignores offer()'s result."""

    is_cooperative = False

    def process(self, ordinal, inbox):
        for item in inbox.take():
            self.outbox.offer(item)
            self.outbox.offer(item)


def test_correct_processor_passes_in_both_modes():
    report = verify_processor(Doubler, input=[1, 2, 3], expected=[2, 4, 6])
    assert report.modes == ["inbox_limit=1", "inbox_limit=1024"]
    assert [run.inbox_limit for run in report.runs] == [1, 1024]
    assert all(run.output == [2, 4, 6] for run in report.runs)
    assert all(run.calls > 0 for run in report.runs)
    assert report.runs[0].processor is not report.runs[1].processor


def test_source_without_input_runs_once():
    report = verify_processor(SingleItemSource, expected=["only"])
    assert report.modes == ["inbox_limit=1"]


def test_empty_input_runs_once():
    report = verify_processor(Doubler, input=[], expected=[])
    assert report.modes == ["inbox_limit=1"]


def test_blocking_outbox_for_non_cooperative_processors():
    verify_processor(BlockingEmitter, input=[1, 2, 3], expected=[1, 1, 2, 2, 3, 3])


def test_lifecycle_calls_and_context():
    report = verify_processor(
        Recorder,
        inputs=[["a", "b"]],
        expected=[(0, "a"), (0, "b")],
        context={"vertex_name": "v", "global_index": 2, "total_parallelism": 3},
    )
    run1, run1024 = (run.processor.events for run in report.runs)
    assert run1 == [
        ("init", "v", 2),
        ("try_process",),
        ("item", 0, "a"),
        ("try_process",),
        ("item", 0, "b"),
        ("try_process",),
        ("complete_edge", 0),
        ("complete",),
        ("close",),
    ]
    assert run1024 == [
        ("init", "v", 2),
        ("try_process",),
        ("item", 0, "a"),
        ("item", 0, "b"),
        ("try_process",),
        ("complete_edge", 0),
        ("complete",),
        ("close",),
    ]


def test_context_object_and_validation():
    ctx = ProcessorContext("x", 0, 0, 1, 1)
    report = verify_processor(Recorder, context=ctx)
    assert report.runs[0].processor.events[0] == ("init", "x", 0)
    with pytest.raises(ValueError, match="global_index 3 outside total_parallelism 2"):
        verify_processor(Recorder, context={"global_index": 3, "total_parallelism": 2})


def test_call_complete_false_skips_complete():
    report = verify_processor(Recorder, input=[1], expected=[(0, 1)], call_complete=False)
    assert ("complete",) not in report.runs[0].processor.events
    assert report.runs[0].processor.events[-1] == ("close",)


# -- items lost when the outbox refuses ------------------------------------------------------


class IgnoresRefusal(Processor):
    """Offers every item of the inbox and ignores False: loses items."""

    def process(self, ordinal, inbox):
        for item in inbox.take():
            self.outbox.offer(item)


class RemovesBeforeOffer(Processor):
    """Takes the item out of the inbox before knowing that the outbox accepted it."""

    def process(self, ordinal, inbox):
        self.outbox.offer(inbox.remove())


class DropsWhenFull(Processor):
    """Never sees a refusal (it checks room) but discards what does not fit."""

    def process(self, ordinal, inbox):
        for item in inbox.take():
            if self.outbox.room(0):
                self.outbox.offer(item)


def test_ignoring_a_refusal_is_caught():
    with pytest.raises(
        AssertionError,
        match=r"inbox_limit=1024\] offered 3 to ordinal 0 after the outbox had refused 2",
    ):
        verify_processor(IgnoresRefusal, input=[1, 2, 3], expected=[1, 2, 3])


def test_full_outbox_recall_catches_item_removed_before_offer():
    # Inbox limit 1 alone would not catch it: the item is lost on the re-call with a full outbox.
    with pytest.raises(AssertionError, match=r"inbox_limit=1024\] offered 3 .* refused 2"):
        verify_processor(RemovesBeforeOffer, input=[1, 2, 3], expected=[1, 2, 3])


def test_silently_dropped_items_fail_the_output_check():
    with pytest.raises(AssertionError) as info:
        verify_processor(DropsWhenFull, input=[1, 2, 3], expected=[1, 2, 3])
    message = str(info.value)
    assert "[DropsWhenFull, inbox_limit=1024] output mismatch" in message
    assert "expected (3 items): [1, 2, 3]" in message
    assert "actual   (1 items): [1]" in message
    assert "first difference at index 1: expected 2, got <end of output>" in message


# -- progress --------------------------------------------------------------------------------


class Idle(Processor):
    def process(self, ordinal, inbox):
        return


class NeverCompletes(Processor):
    def complete(self):
        return False


class StuckWatermark(Processor):
    def try_process_watermark(self, watermark):
        return False


class StuckEdge(Processor):
    def complete_edge(self, ordinal):
        return False


def test_process_without_progress_fails():
    with pytest.raises(
        AssertionError, match=r"\[Idle, inbox_limit=1\] process\(\) call without progress"
    ):
        verify_processor(Idle, input=[1])


def test_complete_without_progress_fails():
    with pytest.raises(AssertionError, match=r"complete\(\) call without progress: NeverCompletes"):
        verify_processor(NeverCompletes)


def test_watermark_and_complete_edge_without_progress_fail():
    with pytest.raises(AssertionError, match=r"try_process_watermark\(\) call without progress"):
        verify_processor(StuckWatermark, input=[Watermark(1)])
    with pytest.raises(AssertionError, match=r"complete_edge\(\) call without progress"):
        verify_processor(StuckEdge, input=[])


def test_disabled_progress_assertion_still_stops_at_max_calls():
    with pytest.raises(AssertionError, match=r"complete\(\) still not done after 50 calls"):
        verify_processor(NeverCompletes, progress_assertion=False, max_calls=50)


def test_progress_on_any_output_ordinal_counts():
    # Jet's harness only looked at ordinal 0 and would reject this correct processor.
    verify_processor(
        TwoPerItemOnOrdinal1,
        input=["a", "b"],
        output_ordinals=2,
        expected=[[], [("a", 0), ("a", 1), ("b", 0), ("b", 1)]],
    )


# -- complete() with pending output ----------------------------------------------------------


class DoneTooEarly(Processor):
    def complete(self):
        self.outbox.offer("a")
        self.outbox.offer("b")  # refused: the bucket holds "a"
        return True


def test_complete_true_with_refused_item_fails():
    with pytest.raises(
        AssertionError,
        match=r"outbox has unfinished items, but complete\(\) claims to be done: DoneTooEarly never re-offered the refused 'b' on ordinal 0",
    ):
        verify_processor(DoneTooEarly, expected=["a", "b"])


def test_complete_true_with_a_full_but_accepted_bucket_is_fine():
    verify_processor(SingleItemSource, expected=["only"])


class ReturnsNone(Processor):
    def complete(self):
        self.outbox.offer("x")  # forgot `return True`


def test_boolean_methods_must_return_bool():
    with pytest.raises(
        AssertionError, match=r"ReturnsNone.complete\(\) must return True or False, got None"
    ):
        verify_processor(ReturnsNone, expected=["x"])


# -- call time -------------------------------------------------------------------------------


class Slow(Processor):
    def process(self, ordinal, inbox):
        time.sleep(0.02)
        self.outbox.offer(inbox.remove())


class SlowBlocking(Slow):
    is_cooperative = False


def test_slow_cooperative_call_trips_configurable_fail_limit():
    with pytest.raises(
        AssertionError,
        match=r"\[Slow, inbox_limit=1\] cooperative call Slow.process\(\) took \d+\.\d ms, over the limit of 10",
    ):
        verify_processor(Slow, input=[1], expected=[1], cooperative_fail_ms=10)


def test_slow_cooperative_call_warns_below_fail_limit():
    with pytest.warns(SlowCallWarning, match=r"cooperative call Slow.process\(\) took"):
        report = verify_processor(Slow, input=[1], expected=[1], cooperative_fail_ms=None)
    assert report.runs[0].slowest_call == "process"
    assert report.runs[0].slowest_call_ms >= 15


def test_non_cooperative_calls_have_their_own_warning_limit(recwarn):
    verify_processor(SlowBlocking, input=[1], expected=[1], cooperative_fail_ms=1)
    assert not [w for w in recwarn if issubclass(w.category, SlowCallWarning)]
    with pytest.warns(SlowCallWarning, match="non-cooperative call"):
        verify_processor(SlowBlocking, input=[1], expected=[1], noncooperative_warn_ms=5)


# -- watermarks ------------------------------------------------------------------------------


class SwallowsWatermarks(Doubler):
    def try_process_watermark(self, watermark):
        return True


def test_default_watermark_forwarding_keeps_order():
    wm1, wm2 = Watermark(10), Watermark(20)
    report = verify_processor(Doubler, input=[wm1, 1, 2, wm2, 3], expected=[wm1, 2, 4, wm2, 6])
    assert all(run.output == [wm1, 2, 4, wm2, 6] for run in report.runs)


def test_swallowed_watermark_fails_output_check():
    with pytest.raises(
        AssertionError, match=r"first difference at index 1: expected Watermark\(10\), got 4"
    ):
        verify_processor(
            SwallowsWatermarks, input=[1, Watermark(10), 2], expected=[2, Watermark(10), 4]
        )


def test_watermarks_go_to_every_output_ordinal():
    class Fanout(Processor):
        def process(self, ordinal, inbox):
            while inbox and self.outbox.offer(inbox.peek()):  # to every ordinal
                inbox.remove()

    wm = Watermark(5)
    verify_processor(Fanout, input=[1, wm, 2], output_ordinals=2, expected=[[1, wm, 2], [1, wm, 2]])


def test_watermark_refusal_is_tolerated():
    # Recorder's data offer is refused while the watermark is pending, and vice versa.
    wm = Watermark(1)
    verify_processor(Recorder, inputs=[[1, wm, 2]], expected=[(0, 1), wm, (0, 2)])


def test_input_watermarks_must_increase():
    with pytest.raises(ValueError, match="strictly increasing"):
        verify_processor(Doubler, inputs=[[Watermark(2)], [Watermark(2)]])
    with pytest.raises(ValueError, match="idle marker"):
        verify_processor(Doubler, input=[Watermark(2**63 - 1)])


# -- output comparison -----------------------------------------------------------------------


def test_ordered_vs_any_order():
    with pytest.raises(
        AssertionError, match=r"output mismatch:\n  expected \(3 items\): \[1, 2, 3\]"
    ):
        verify_processor(Reverser, input=[1, 2, 3], expected=[1, 2, 3])
    verify_processor(Reverser, input=[1, 2, 3], expected=[1, 2, 3], any_order=True)


def test_any_order_counts_duplicates():
    with pytest.raises(AssertionError) as info:
        verify_processor(Reverser, input=[1, 2, 2], expected=[1, 1, 2], any_order=True)
    assert "missing:    [1]" in str(info.value)
    assert "unexpected: [2]" in str(info.value)


def test_any_order_with_unhashable_items():
    items = [{"k": 1}, [2], {"k": 1}]
    verify_processor(Reverser, input=items, expected=items, any_order=True)
    with pytest.raises(AssertionError, match=r"missing:    \[\[3\]\]"):
        verify_processor(Reverser, input=items, expected=[{"k": 1}, [3], {"k": 1}], any_order=True)


def test_assert_output_callback_runs_per_mode():
    seen = []
    verify_processor(Doubler, input=[1, 2], assert_output=seen.append)
    assert seen == [[2, 4], [2, 4]]

    def must_be_empty(output):
        assert output == [], output

    with pytest.raises(AssertionError) as info:
        verify_processor(Doubler, input=[1], assert_output=must_be_empty)
    assert "[Doubler, inbox_limit=1]" in "\n".join(info.value.__notes__)


def test_default_expected_is_no_output():
    verify_processor(Reverser, call_complete=False, input=[1])
    with pytest.raises(AssertionError, match="output mismatch"):
        verify_processor(Doubler, input=[1])


# -- input ordinals and priorities -----------------------------------------------------------


def test_inputs_are_interleaved_item_by_item():
    report = verify_processor(
        Recorder,
        inputs=[["a1", "a2", "a3"], ["b1"]],
        expected=[(0, "a1"), (1, "b1"), (0, "a2"), (0, "a3")],
    )
    batches = [run.processor.batches for run in report.runs]
    assert batches == [
        [(0, 1), (1, 1), (0, 1), (0, 1)],  # inbox_limit=1
        [(0, 1), (1, 1), (0, 2)],  # consecutive items of one ordinal share an inbox
    ]
    events = report.runs[1].processor.events
    assert events.index(("complete_edge", 1)) < events.index(("item", 0, "a2"))
    assert events.index(("complete_edge", 0)) < events.index(("complete",))


def test_priorities_deliver_lower_values_first():
    report = verify_processor(
        Recorder,
        inputs=[["a1", "a2"], ["b1", "b2"], []],
        priorities=[1, 0, 1],
        expected=[(1, "b1"), (1, "b2"), (0, "a1"), (0, "a2")],
    )
    events = [e for e in report.runs[0].processor.events if e[0] != "try_process"]
    assert events == [
        ("init", "test_vertex", 0),
        ("item", 1, "b1"),
        ("item", 1, "b2"),
        ("complete_edge", 1),
        ("complete_edge", 2),  # empty input: exhausted as soon as its group starts
        ("item", 0, "a1"),
        ("item", 0, "a2"),
        ("complete_edge", 0),
        ("complete",),
        ("close",),
    ]


def test_watermark_ends_a_batch():
    wm = Watermark(7)
    report = verify_processor(
        Recorder, inputs=[[1, 2, wm, 3, 4]], expected=[(0, 1), (0, 2), wm, (0, 3), (0, 4)]
    )
    assert report.runs[1].processor.batches == [(0, 2), (0, 2)]


# -- misuse and failures ---------------------------------------------------------------------


class Raises(Recorder):
    def process(self, ordinal, inbox):
        raise RuntimeError("boom")


def test_processor_errors_propagate_and_close_is_still_called():
    instances = []

    def supplier():
        instances.append(Raises())
        return instances[-1]

    with pytest.raises(RuntimeError, match="boom") as info:
        verify_processor(supplier, input=[1])
    assert "[Raises, inbox_limit=1]" in "\n".join(info.value.__notes__)
    assert instances[0].events[-1] == ("close",)


def test_supplier_misuse():
    shared = Doubler()
    with pytest.raises(AssertionError, match="same processor instance twice"):
        verify_processor(lambda: shared, input=[1], expected=[2])
    with pytest.raises(TypeError, match="needs a supplier"):
        verify_processor(Doubler(), input=[1])
    with pytest.raises(TypeError, match="not a Processor"):
        verify_processor(lambda: object())
    with pytest.raises(ValueError, match="either input or inputs"):
        verify_processor(Doubler, input=[1], inputs=[[1]])
    with pytest.raises(ValueError, match="2 priorities for 1 input ordinals"):
        verify_processor(Doubler, inputs=[[1]], priorities=[0, 1])
    with pytest.raises(ValueError, match="one list per ordinal"):
        verify_processor(Doubler, input=[1], output_ordinals=2, expected=[2])


def test_module_doctests():
    result = doctest.testmod(jetbench.testing)
    assert result.attempted > 0
    assert result.failed == 0
