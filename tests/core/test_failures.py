"""Failures, cancellation and timeouts: the job ends cleanly, close() runs for everyone."""

from __future__ import annotations

import threading
import time

import pytest
from engine_helpers import Lifecycle, ListSource, RecordingSink, Supplier, Tracked, linear_dag

from jetbench import (
    DAG,
    Edge,
    ExecutionService,
    JobCancelled,
    JobError,
    JobStatus,
    JobTimeout,
    Processor,
    Watermark,
)

STAGES = ["init", "process", "try_process_watermark", "complete_edge", "complete", "close"]


class Boom(Tracked):
    """Forwards items; instance ``bad`` raises ``error`` in ``where``."""

    def __init__(
        self, where: str, lifecycle: Lifecycle, errors: dict, bad: int = 1, after: int = 50
    ):
        super().__init__(lifecycle)
        self.where = where
        self.errors = errors
        self.bad = bad
        self.after = after
        self.seen = 0
        self.pending: list = []

    def _maybe_fail(self, where: str) -> None:
        if where == self.where and self.context.global_index == self.bad:
            error = ValueError(f"boom in {where}")
            self.errors[self.context.global_index] = error
            raise error

    def init(self, outbox, context):
        super().init(outbox, context)
        self._maybe_fail("init")

    def process(self, ordinal, inbox):
        while inbox:
            if not self.outbox.offer(inbox.peek()):
                return
            inbox.remove()
            self.seen += 1
            if self.seen >= self.after:
                self._maybe_fail("process")

    def try_process_watermark(self, watermark):
        self._maybe_fail("try_process_watermark")
        return self.outbox.offer(watermark)

    def complete_edge(self, ordinal):
        self._maybe_fail("complete_edge")
        return True

    def complete(self):
        self._maybe_fail("complete")
        return True

    def close(self):
        super().close()
        self._maybe_fail("close")


def _stream(n=2000):
    out = []
    for t in range(n):
        if t and t % 100 == 0:
            out.append(Watermark(t))
        out.append(t)
    return out


def _all_closed_once(lifecycle: Lifecycle, expected: dict[str, int]) -> None:
    """Every processor instance was closed exactly once (initialized or not)."""
    assert len(lifecycle.instances) == sum(expected.values())
    assert [p.closed for p in lifecycle.instances] == [1] * len(lifecycle.instances)
    initialized = {
        (p.context.vertex_name, p.context.global_index)
        for p in lifecycle.instances
        if p.initialized
    }
    assert initialized <= {(v, i) for v, lp in expected.items() for i in range(lp)}


@pytest.mark.parametrize("where", STAGES)
def test_exception_fails_job_names_vertex_and_instance(service, where):
    lifecycle = Lifecycle()
    errors: dict = {}
    listener_calls: list = []
    dag = DAG()
    src = dag.new_vertex(
        "src", lambda: ListSource(_stream(), per_call=50, split=False, lifecycle=lifecycle), 1
    )
    mid = dag.new_vertex("mid", lambda: Boom(where, lifecycle, errors), 2)
    sink = dag.new_vertex("sink", lambda: RecordingSink(lifecycle=lifecycle), 2)
    dag.edge(Edge.between(src, mid).broadcast().queue_size(32)).edge(Edge.between(mid, sink))
    job = service.submit(dag)
    job.add_done_listener(listener_calls.append)
    with pytest.raises(JobError) as info:
        job.join(timeout=10)
    err = info.value
    assert not isinstance(err, JobCancelled)
    assert "vertex 'mid' instance 1" in str(err)
    assert f"boom in {where}" in str(err)
    assert (err.vertex, err.instance) == ("mid", 1)
    assert err.__cause__ is errors[1]
    assert job.status is JobStatus.FAILED and job.failure is err
    assert job.is_done and listener_calls == [job]
    _all_closed_once(lifecycle, {"src": 1, "mid": 2, "sink": 2})
    with pytest.raises(JobError):  # joining again raises the same error
        job.join(timeout=1)
    assert all(not w.alive for w in job.metrics().workers)


def test_first_failure_wins(service):
    lifecycle = Lifecycle()
    errors: dict = {}

    class BothBoom(Boom):
        def process(self, ordinal, inbox):
            inbox.clear()
            error = RuntimeError(f"instance {self.context.global_index}")
            self.errors[self.context.global_index] = error
            raise error

    dag = DAG()
    src = dag.new_vertex("src", lambda: ListSource(range(100), split=False, lifecycle=lifecycle), 1)
    mid = dag.new_vertex("mid", lambda: BothBoom("process", lifecycle, errors), 2)
    dag.edge(Edge.between(src, mid).broadcast())
    job = service.submit(dag)
    with pytest.raises(JobError) as info:
        job.join(timeout=10)
    assert info.value.__cause__ is errors[info.value.instance]
    assert f"instance {info.value.instance}" in str(info.value)
    _all_closed_once(lifecycle, {"src": 1, "mid": 2})


class ClosingProbe(Processor):
    """Counts close() calls even when never initialized."""

    def __init__(self):
        self.closes = 0

    def process(self, ordinal, inbox):
        inbox.clear()

    def close(self):
        self.closes += 1


def test_supplier_exception_fails_job(service):
    made: list = []
    error = KeyError("no processor for you")

    def flaky():
        if len(made) == 1:
            raise error
        p = ClosingProbe()
        made.append(p)
        return p

    sources = Supplier(lambda: ListSource(range(10)))
    dag = DAG()
    src = dag.new_vertex("src", sources, 2)
    mid = dag.new_vertex("mid", flaky, 2)
    sink = dag.new_vertex("sink", ClosingProbe, 1)
    dag.edge(Edge.between(src, mid)).edge(Edge.between(mid, sink))
    job = service.submit(dag)
    with pytest.raises(JobError) as info:
        job.join(timeout=10)
    assert "vertex 'mid'" in str(info.value) and "instance 1" in str(info.value)
    assert (info.value.vertex, info.value.instance) == ("mid", 1)
    assert info.value.__cause__ is error
    assert job.status is JobStatus.FAILED
    # every processor created before the failure is closed, once, even without init
    assert [p.closed for p in sources.created] == [1, 1]
    assert [p.closes for p in made] == [1]


def test_failure_tears_down_endless_sources(service):
    """A sink fails after a while; the other endless source instances must be stopped."""
    lifecycle = Lifecycle()
    errors: dict = {}

    class Endless(Tracked):
        def complete(self):
            while self.outbox.offer(1):
                pass
            return False

    dag = DAG()
    src = dag.new_vertex("src", lambda: Endless(lifecycle), 2)
    mid = dag.new_vertex("mid", lambda: Boom("process", lifecycle, errors, bad=0, after=5000), 2)
    dag.edge(Edge.between(src, mid).queue_size(64))
    job = service.submit(dag)
    with pytest.raises(JobError, match="vertex 'mid' instance 0"):
        job.join(timeout=10)
    _all_closed_once(lifecycle, {"src": 2, "mid": 2})


def test_failure_in_non_cooperative_processor(service):
    lifecycle = Lifecycle()
    errors: dict = {}

    class BlockingBoom(Boom):
        is_cooperative = False

    dag = DAG()
    src = dag.new_vertex("src", lambda: ListSource(_stream(), split=False, lifecycle=lifecycle), 2)
    mid = dag.new_vertex("mid", lambda: BlockingBoom("process", lifecycle, errors, bad=1), 2)
    sink = dag.new_vertex("sink", lambda: RecordingSink(lifecycle=lifecycle), 1)
    dag.edge(Edge.between(src, mid).isolated()).edge(Edge.between(mid, sink))
    job = service.submit(dag)
    with pytest.raises(JobError, match="vertex 'mid' instance 1") as info:
        job.join(timeout=10)
    assert info.value.__cause__ is errors[1]
    _all_closed_once(lifecycle, {"src": 2, "mid": 2, "sink": 1})


def test_failure_while_blocking_source_waits_for_room(service):
    """The consumer fails; a non-cooperative source stuck on a full queue must leave."""
    lifecycle = Lifecycle()
    errors: dict = {}

    class BlockingFlood(Tracked):
        is_cooperative = False

        def complete(self):
            for i in range(10**9):
                self.outbox.offer(i)
            return True

    dag = DAG()
    src = dag.new_vertex("src", lambda: BlockingFlood(lifecycle), 1)
    mid = dag.new_vertex("mid", lambda: Boom("process", lifecycle, errors, bad=0, after=100), 1)
    dag.edge(Edge.between(src, mid).queue_size(4))
    job = service.submit(dag)
    with pytest.raises(JobError, match="vertex 'mid' instance 0"):
        job.join(timeout=5)
    _all_closed_once(lifecycle, {"src": 1, "mid": 1})


def test_processor_raising_base_exception_does_not_hang(service):
    class Fatal(BaseException):
        pass

    lifecycle = Lifecycle()

    class Dies(Tracked):
        def process(self, ordinal, inbox):
            raise Fatal("fatal")

    dag = DAG()
    src = dag.new_vertex("src", lambda: ListSource(range(50), lifecycle=lifecycle), 2)
    dies = dag.new_vertex("dies", lambda: Dies(lifecycle), 2)
    dag.edge(Edge.between(src, dies))
    job = service.submit(dag)
    with pytest.raises(JobError) as info:
        job.join(timeout=10)
    assert isinstance(info.value.__cause__, Fatal)
    assert job.status is JobStatus.FAILED
    _all_closed_once(lifecycle, {"src": 2, "dies": 2})


def test_result_collection_failure(service):
    class BadCollector(Processor):
        collects = True

        def process(self, ordinal, inbox):
            inbox.clear()

        def result_part(self):
            raise LookupError("no result")

    job = service.submit(linear_dag(lambda: ListSource(range(5)), BadCollector))
    with pytest.raises(JobError, match="no result") as info:
        job.join(timeout=10)
    assert isinstance(info.value.__cause__, LookupError)
    assert job.status is JobStatus.FAILED


# -- cancellation -------------------------------------------------------------------------------


class EndlessSource(Tracked):
    """Emits integers forever (complete() never returns True)."""

    def __init__(self, lifecycle=None):
        super().__init__(lifecycle)
        self.i = 0

    def complete(self):
        while self.outbox.offer(self.i):
            self.i += 1
        return False


def _cancel_and_join(job, after: float = 0.1):
    time.sleep(after)
    assert job.status is JobStatus.RUNNING
    t0 = time.monotonic()
    job.cancel()
    with pytest.raises(JobCancelled) as info:
        job.join(timeout=5)
    elapsed = time.monotonic() - t0
    assert elapsed < 2.0, f"cancellation took {elapsed:.2f} s"
    assert job.status is JobStatus.CANCELLED
    assert isinstance(info.value, JobError)
    return info.value


def test_cancel_endless_source(service):
    lifecycle = Lifecycle()
    sinks = Supplier(lambda: RecordingSink(lifecycle=lifecycle))
    dag = linear_dag(lambda: EndlessSource(lifecycle), sinks, 2, 2, lambda e: e.queue_size(128))
    job = service.submit(dag)
    _cancel_and_join(job)
    assert sum(len(s.items) for s in sinks.created) > 0
    _all_closed_once(lifecycle, {"source": 2, "sink": 2})
    job.cancel()  # cancelling an ended job changes nothing
    assert job.status is JobStatus.CANCELLED


def test_cancel_with_slow_non_cooperative_sink(service):
    lifecycle = Lifecycle()
    sinks = Supplier(
        lambda: RecordingSink(cooperative=False, sleep_s=0.02, max_per_call=1, lifecycle=lifecycle)
    )
    dag = linear_dag(lambda: EndlessSource(lifecycle), sinks, 1, 2, lambda e: e.queue_size(8))
    job = service.submit(dag)
    _cancel_and_join(job)
    _all_closed_once(lifecycle, {"source": 1, "sink": 2})


class BlockingEndless(Tracked):
    """A non-cooperative source offering forever through its blocking outbox."""

    is_cooperative = False

    def complete(self):
        i = 0
        while True:
            self.outbox.offer(i)
            i += 1


def test_cancel_blocking_source_stuck_on_full_queue(service):
    lifecycle = Lifecycle()

    sinks = Supplier(lambda: RecordingSink(max_per_call=1, sleep_s=0.001, lifecycle=lifecycle))
    dag = linear_dag(lambda: BlockingEndless(lifecycle), sinks, 1, 1, lambda e: e.queue_size(4))
    job = service.submit(dag)
    _cancel_and_join(job)
    _all_closed_once(lifecycle, {"source": 1, "sink": 1})


def test_cancel_blocking_source_with_fast_consumer(service):
    """A non-cooperative source whose blocking outbox always finds room soon must still stop."""
    lifecycle = Lifecycle()

    dag = linear_dag(
        lambda: BlockingEndless(lifecycle), lambda: RecordingSink(lifecycle=lifecycle), 1, 1
    )
    job = service.submit(dag)
    _cancel_and_join(job)
    _all_closed_once(lifecycle, {"source": 1, "sink": 1})


def test_cancel_idle_job(service):
    """A job whose tasklets only idle (nothing to do) is cancelled promptly."""

    class Waiting(Processor):
        def complete(self):
            return False

    job = service.submit(linear_dag(Waiting, RecordingSink, 1, 2))
    _cancel_and_join(job)


def test_cancel_after_completion_is_a_no_op(service):
    job = service.submit(linear_dag(lambda: ListSource(range(10)), RecordingSink))
    job.join(timeout=10)
    job.cancel()
    assert job.status is JobStatus.COMPLETED
    assert job.join(timeout=1) is None


# -- join timeout ---------------------------------------------------------------------------------


class TimedSource(Processor):
    """Emits one item per call until ``duration`` has passed."""

    def __init__(self, duration: float):
        self.duration = duration
        self.count = 0

    def init(self, outbox, context):
        super().init(outbox, context)
        self.deadline = time.monotonic() + self.duration

    def complete(self):
        if self.outbox.offer(self.count):
            self.count += 1
        return time.monotonic() >= self.deadline


def test_join_timeout_then_completes(service):
    from jetbench.processors import collect_sink

    job = service.submit(linear_dag(lambda: TimedSource(0.3), collect_sink(), 1, 1))
    t0 = time.monotonic()
    with pytest.raises(JobTimeout) as info:
        job.join(timeout=0.05)
    assert time.monotonic() - t0 < 1.0
    assert isinstance(info.value, TimeoutError)
    assert job.status is JobStatus.RUNNING and not job.is_done
    result = job.join(timeout=10)
    assert job.status is JobStatus.COMPLETED
    assert result == list(range(len(result))) and len(result) > 0


def test_join_timeout_then_cancel(service):
    job = service.submit(linear_dag(lambda: EndlessSource(), RecordingSink, 1, 1))
    with pytest.raises(JobTimeout):
        job.join(timeout=0.05)
    job.cancel()
    with pytest.raises(JobCancelled):
        job.join(timeout=5)
    assert job.status is JobStatus.CANCELLED


def test_concurrent_joiners_all_see_result(service):
    from jetbench.processors import collect_sink

    job = service.submit(linear_dag(lambda: TimedSource(0.1), collect_sink(), 1, 1))
    results: list = []
    joiners = [
        threading.Thread(target=lambda: results.append(job.join(timeout=10))) for _ in range(3)
    ]
    for t in joiners:
        t.start()
    for t in joiners:
        t.join()
    assert len(results) == 3 and all(r == results[0] for r in results)


def test_service_rejects_bad_configuration():
    from jetbench import JetbenchError

    for kwargs in (
        {"cooperative_threads": 0},
        {"cooperative_threads": 1.5},
        {"outbox_capacity": 0},
    ):
        with pytest.raises(JetbenchError):
            ExecutionService(**kwargs)
    with pytest.raises(JetbenchError):
        ExecutionService().submit("not a dag")


def test_cancel_with_work_stealing_closes_every_processor(threads):
    """Cancel while work-stealing marks are outstanding: a marked tasklet whose thief has
    left must still be closed by its owner (regression: it used to be dropped)."""

    class Sleepy(Tracked):
        def complete(self):
            time.sleep(0.003)
            return False

    class Quick(Tracked):
        def __init__(self, lifecycle, calls):
            super().__init__(lifecycle)
            self.calls = calls

        def complete(self):
            time.sleep(0.0005)
            self.calls -= 1
            return self.calls <= 0

    for trial in range(20 if threads > 1 else 3):  # one thread: nobody to steal
        lifecycle = Lifecycle()
        dag = DAG()
        for k in range(10):  # dealt alternately: worker 0 gets the sleepy ones
            dag.new_vertex(f"slow{k}", lambda lc=lifecycle: Sleepy(lc), 1)
            dag.new_vertex(f"quick{k}", lambda k=k, lc=lifecycle: Quick(lc, 5 * k + 1), 1)
        job = ExecutionService(cooperative_threads=threads, work_stealing=True).submit(dag)
        time.sleep(0.02 + 0.005 * trial)  # 20 to 115 ms: before, during and after stealing
        job.cancel()
        with pytest.raises(JobCancelled):
            job.join(timeout=5)
        _all_closed_once(
            lifecycle, {**{f"slow{k}": 1 for k in range(10)}, **{f"quick{k}": 1 for k in range(10)}}
        )
