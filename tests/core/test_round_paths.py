"""The hot paths of one round (issue 17: the engine's fixed cost per tasklet call) keep their
meaning: the worker's timed call reads the clock n + 1 times a round and charges each tasklet
its own span, the PROCESS state runs through its direct call, an emptied inbox shares one list
that nobody gets to append to."""

from __future__ import annotations

from jetbench import Inbox, Processor, ProcessorContext
from jetbench.core.idle import IdleConfig
from jetbench.core.items import Stamped
from jetbench.core.job import Job
from jetbench.core.queues import InboundStream, SPSCQueue
from jetbench.core.tasklet import ProcessorTasklet, TaskletState
from jetbench.core.worker import Worker


class _Clock:
    """A clock whose every monotonic_ns reading is 10 ns after the one before, counting them."""

    def __init__(self) -> None:
        self.reads = 0

    def monotonic(self) -> float:
        return self.monotonic_ns() / 1e9

    def monotonic_ns(self) -> int:
        self.reads += 1
        return 10 * self.reads

    def time_ns(self) -> int:
        return 0

    def sleep(self, seconds: float) -> None:
        pass


class _Idle(Processor):
    def process(self, ordinal, inbox):
        inbox.take()


def _tasklet(processor: Processor, inbound: list[InboundStream]) -> ProcessorTasklet:
    return ProcessorTasklet(processor, ProcessorContext("v", 0, 0, 1, 1), inbound, [], 8, 8)


def test_a_round_of_timed_calls_reads_the_clock_once_per_call_and_once_more():
    clock = _Clock()
    worker = Worker(0, Job("j"), IdleConfig(1000, 1000), 10**9, "w", clock=clock)
    tasklets = [_tasklet(_Idle(), [InboundStream(0, 0, [SPSCQueue(4)])]) for _ in range(3)]
    for _ in range(2):  # two rounds, as the worker's round loop runs them
        worker._last_ns = 0
        for t in tasklets:
            worker._call(t)
    assert clock.reads == 2 * (3 + 1)
    # each call is charged from the end of the call before it (10 ns a reading here)
    assert [t.busy_ns for t in tasklets] == [20, 20, 20]
    assert [t.calls for t in tasklets] == [2, 2, 2]


def test_the_process_state_follows_every_transition():
    q = SPSCQueue(4)
    t = _tasklet(_Idle(), [InboundStream(0, 0, [q])])
    assert t.state is TaskletState.INIT and not t._processing
    t.call()
    assert t.state is TaskletState.PROCESS and t._processing
    q.offer_chunk([1, 2])
    t.call()
    assert t.received_count == 2
    t.abort()
    assert t.state is TaskletState.END and not t._processing


def test_an_emptied_inbox_hands_out_lists_of_its_callers_own():
    a, b = Inbox([1, 2]), Inbox()
    assert a.take() == [1, 2]
    mine = a.take()  # empty now: a new list, not the list the empty inboxes share
    mine.append("x")
    assert (a.take(), b.take(), list(a), len(b)) == ([], [], [], 0)
    c = Inbox(Stamped([5], ["e"]))
    assert c.take_stamped() == ([5], ["e"])
    ts, items = c.take_stamped()
    items.append("y")
    assert (c.take(), b.take_stamped()) == ([], ([], []))
