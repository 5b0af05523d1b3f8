"""MapUsingServiceP (blocking, own thread) and AsyncMapP (asyncio loop, cooperative)."""

from __future__ import annotations

import asyncio
import random
import threading
import time

import pytest

from jetbench import DAG, Edge, JetbenchError, JobError, Watermark
from jetbench.core.inbox import Inbox
from jetbench.core.outbox import Outbox
from jetbench.core.processor import ProcessorContext
from jetbench.processors import collect_sink, items_source
from jetbench.processors.map_using_service import map_using_service
from jetbench.processors.map_using_service_async import AsyncMapP, map_using_service_async
from jetbench.testing import verify_processor

# In verify_processor the test thread and the loop thread hand the GIL back and forth on every
# submission; on a loaded machine an occasional call then takes over the 5 ms warning threshold.
gil_handoff = pytest.mark.filterwarnings("ignore::jetbench.testing.SlowCallWarning")


def async_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("jetbench.async-")]


class Service:
    """Counts instances and closes; ``calls`` per instance."""

    def __init__(self, registry: list):
        self.closed = False
        self.calls = 0
        self.thread_names: set[str] = set()
        registry.append(self)

    def lookup(self, x):
        self.calls += 1
        self.thread_names.add(threading.current_thread().name)
        return x * 10

    def close(self):
        self.closed = True


def pipeline_dag(supplier, items, parallelism: int | None = None) -> DAG:
    dag = DAG()
    src = dag.new_vertex("src", items_source(items), parallelism)
    mid = dag.new_vertex("map", supplier, parallelism)
    out = dag.new_vertex("out", collect_sink(), parallelism)
    dag.edge(Edge.between(src, mid)).edge(Edge.between(mid, out))
    return dag


# -- MapUsingServiceP -------------------------------------------------------------------------


def test_map_using_service_verify():
    services = []
    supplier = map_using_service(lambda: Service(services), Service.lookup)
    assert supplier().is_cooperative is False
    report = verify_processor(supplier, input=[1, 2, 3], expected=[10, 20, 30])
    # one service per instance: one per run, and one per instance a snapshot was restored into
    assert len(services) > len(report.runs) and all(s.closed for s in services)


def test_map_using_service_timestamped_verify():
    supplier = map_using_service(lambda: Service([]), Service.lookup, timestamped=True)
    verify_processor(supplier, input=[(5, 1), (6, 2), Watermark(6), (9, 3)],
                     expected=[(5, 10), (6, 20), Watermark(6), (9, 30)])


def test_map_using_service_without_close():
    verify_processor(map_using_service(object, lambda s, x: (type(s).__name__, x)), input=[1],
                     expected=[("object", 1)])


def test_map_using_service_in_a_job(service, threads):
    services = []
    dag = pipeline_dag(map_using_service(lambda: Service(services), Service.lookup), range(2000))
    assert sorted(service.run(dag, timeout=10)) == [x * 10 for x in range(2000)]
    assert len(services) == threads and all(s.closed for s in services)
    assert sum(s.calls for s in services) == 2000
    for s in services:  # the blocking calls ran on dedicated threads, not the cooperative workers
        assert all(".blocking-" in name for name in s.thread_names)


def test_map_using_service_error_fails_the_job(service):
    services = []

    def fn(_s, x):
        if x == 500:
            raise KeyError("missing 500")
        return x

    with pytest.raises(JobError, match="missing 500") as info:
        service.run(pipeline_dag(map_using_service(lambda: Service(services), fn), range(1000)), timeout=10)
    assert isinstance(info.value.__cause__, KeyError)
    assert all(s.closed for s in services)


def test_service_suppliers_check_arguments():
    with pytest.raises(JetbenchError):
        map_using_service("nope", Service.lookup)
    with pytest.raises(JetbenchError):
        map_using_service_async(object, None)
    with pytest.raises(JetbenchError, match="max_concurrent"):
        map_using_service_async(object, Service.lookup, max_concurrent=0)


# -- AsyncMapP --------------------------------------------------------------------------------


class AsyncService:
    """Tracks how many calls run at once; sleeps a random few ms per call."""

    def __init__(self, seed: int = 0, max_sleep_s: float = 0.003):
        self.random = random.Random(seed)
        self.max_sleep_s = max_sleep_s
        self.running = 0
        self.peak = 0
        self.closed = False

    async def double(self, x):
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await asyncio.sleep(self.random.random() * self.max_sleep_s)
            return 2 * x
        finally:
            self.running -= 1

    async def close(self):
        await asyncio.sleep(0)
        self.closed = True


async def double(service, x):
    return await service.double(x)


@gil_handoff
def test_async_map_verify_preserves_order():
    services = []

    def factory():
        services.append(AsyncService(seed=len(services)))
        return services[-1]

    items = list(range(60))
    report = verify_processor(map_using_service_async(factory, double, max_concurrent=5), input=items,
                              expected=[2 * x for x in items], progress_assertion=False)
    assert len(report.runs) == 5
    assert all(s.closed and s.peak <= 5 for s in services) and max(s.peak for s in services) > 1
    assert not async_threads()


@gil_handoff
def test_async_map_unordered_and_timestamped():
    supplier = map_using_service_async(AsyncService, double, max_concurrent=8, preserve_order=False,
                                       timestamped=True)
    events = [(i, i) for i in range(40)]
    verify_processor(supplier, input=events, expected=[(ts, 2 * x) for ts, x in events], any_order=True,
                     progress_assertion=False)


@gil_handoff
def test_async_map_holds_watermarks_behind_calls_in_flight():
    supplier = map_using_service_async(AsyncService, double, max_concurrent=8, preserve_order=False)
    items = [1, 2, 3, Watermark(10), 4, 5, Watermark(20), 6]

    def check(output):
        assert output[3] == Watermark(10) and output[6] == Watermark(20)
        assert sorted(output[:3]) == [2, 4, 6] and sorted(output[4:6]) == [8, 10] and output[7] == 12

    verify_processor(supplier, input=items, assert_output=check, progress_assertion=False)


@gil_handoff
def test_async_service_factory_may_be_a_coroutine():
    loops = []

    async def make():
        loops.append(asyncio.get_running_loop())
        return AsyncService()

    report = verify_processor(map_using_service_async(make, double), input=[1, 2], expected=[2, 4],
                              progress_assertion=False)
    assert len(loops) > len(report.runs) and all(loop.is_closed() for loop in loops)


def test_async_loop_thread_is_named_and_stopped():
    p = AsyncMapP(AsyncService, double)
    p.init(Outbox(1), ProcessorContext("lookup", 2, 3, 4, 5))
    assert [t.name for t in async_threads()] == ["jetbench.async-lookup-3"]
    p.close()
    p.close()  # idempotent
    assert not async_threads()


def test_async_close_cancels_calls_in_flight():
    cancelled = []

    async def forever(_service, x):
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(x)
            raise

    p = AsyncMapP(object, forever, max_concurrent=4)
    p.init(Outbox(1), ProcessorContext("v", 0, 0, 1, 1))
    inbox = Inbox([1, 2, 3, 4, 5, 6])
    p.process(0, inbox)
    assert len(inbox) == 2  # only max_concurrent are taken
    time.sleep(0.05)
    assert p.complete() is False
    start = time.monotonic()
    p.close()
    assert time.monotonic() - start < 1
    assert sorted(cancelled) == [1, 2, 3, 4]
    assert not async_threads()


def test_async_map_in_a_job_keeps_order_and_leaks_no_thread(service):
    items = list(range(400))
    svc = AsyncService(seed=3, max_sleep_s=0.004)
    dag = pipeline_dag(map_using_service_async(lambda: svc, double, max_concurrent=16), items, parallelism=1)
    job = service.submit(dag)
    assert job.join(timeout=10) == [2 * x for x in items]
    assert not async_threads()  # stopped and joined in close(), before the job ended
    assert 1 < svc.peak <= 16 and svc.closed


def test_async_map_in_a_job_with_parallel_instances(service, threads):
    dag = pipeline_dag(map_using_service_async(AsyncService, double, max_concurrent=4), range(1000))
    assert sorted(service.run(dag, timeout=10)) == [2 * x for x in range(1000)]
    assert not async_threads()


def test_async_exception_fails_the_job(service):
    async def fail_on_13(_service, x):
        await asyncio.sleep(0.001 if x != 13 else 0)
        if x == 13:
            raise ValueError("unlucky 13")
        return x

    dag = pipeline_dag(map_using_service_async(object, fail_on_13), range(100))
    with pytest.raises(JobError, match="unlucky 13") as info:
        service.run(dag, timeout=10)
    assert isinstance(info.value.__cause__, ValueError)
    assert not async_threads()


def test_async_exception_behind_a_slow_call_fails_fast(service):
    async def slow_head(_service, x):
        if x == 0:
            await asyncio.sleep(3600)
        if x == 1:
            raise RuntimeError("second item failed")
        return x

    start = time.monotonic()
    with pytest.raises(JobError, match="second item failed"):
        service.run(pipeline_dag(map_using_service_async(object, slow_head), range(5), parallelism=1), timeout=10)
    assert time.monotonic() - start < 2
    assert not async_threads()


def test_async_fn_that_is_not_async_fails_the_job(service):
    with pytest.raises(JobError, match="coroutine"):
        service.run(pipeline_dag(map_using_service_async(object, lambda s, x: x), range(3)), timeout=10)
    assert not async_threads()
