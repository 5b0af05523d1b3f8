"""Backpressure: bounded queues and outboxes hold a fast source back; nothing is lost."""

from __future__ import annotations

import time
import tracemalloc
from collections import Counter

import pytest
from engine_helpers import ListSource, RecordingSink, Supplier, linear_dag

from jetbench import DAG, Edge, ExecutionService, Processor
from jetbench.processors import map_processor

OUTBOX = 16


class InFlightSource(ListSource):
    """Records, at every accepted offer, how many items it emitted that the sink has not yet
    processed (read on the source's thread, so the count is exact at that moment)."""

    def __init__(self, items, sink_holder: list, **kw):
        super().__init__(items, **kw)
        self.sink_holder = sink_holder
        self.max_in_flight = 0

    def complete(self) -> bool:
        while self.pos < len(self.items):
            if not self.outbox.offer(self.items[self.pos]):
                self.refusals += 1
                return False
            self.pos += 1
            processed = sum(s.processed for s in self.sink_holder)
            self.max_in_flight = max(self.max_in_flight, self.pos - processed)
        return True


def _sample_until_done(job, interval=0.001):
    samples = []
    while not job.is_done:
        samples.append(job.metrics())
        time.sleep(interval)
    return samples


@pytest.mark.parametrize("cooperative", [True, False], ids=["coop-sink", "blocking-sink"])
def test_slow_sink_backpressure_bounded_and_lossless(threads, cooperative):
    service = ExecutionService(cooperative_threads=threads, outbox_capacity=OUTBOX)
    n = 10_000 if cooperative else 400
    queue_size = 8
    items = list(range(n))
    sinks = Supplier(
        lambda: RecordingSink(
            max_per_call=1,
            cooperative=cooperative,
            sleep_s=0 if cooperative else 0.0002,
        )
    )
    sources = Supplier(lambda: InFlightSource(items, sinks.created))
    dag = linear_dag(sources, sinks, 1, 1, lambda e: e.queue_size(queue_size))
    job = service.submit(dag)
    samples = _sample_until_done(job)
    job.join(timeout=30)

    (source,), (sink,) = sources.created, sinks.created
    # all items arrive, in order (one producer, one consumer), none lost or duplicated
    assert sink.items == items
    assert source.refusals > 0, "the source never met backpressure"
    # in flight: the source's outbox bucket + the collector's pending bucket + the queue +
    # the sink's inbox (whole chunks up to the inbox limit)
    bound = queue_size + 3 * OUTBOX
    assert 0 < source.max_in_flight <= bound, (source.max_in_flight, bound)
    assert samples, "the job ended before any sample"
    for m in samples:
        for t in m.tasklets:
            assert t.queues_size <= t.queues_capacity, t
        assert m.tasklet("sink").queues_capacity in (queue_size, 0)
    assert any(m.tasklet("source").backpressure for m in samples)
    final = job.metrics()
    assert final.tasklet("source").emitted_count == n
    assert final.tasklet("sink").received_count == n


def test_backpressure_through_a_chain_with_parallelism(service):
    """source(2) -> map(3) -> slow sink(2), tiny queues: exact multiset at the end."""
    n = 4000
    items = list(range(n))
    shared: list = []
    dag = DAG()
    src = dag.new_vertex("src", lambda: ListSource(items, per_call=64), 2)
    inc = dag.new_vertex("inc", map_processor(lambda x: x + 1), 3)
    out = dag.new_vertex("out", lambda: RecordingSink(shared, max_per_call=3), 2)
    dag.edge(Edge.between(src, inc).queue_size(2))
    dag.edge(Edge.between(inc, out).queue_size(1))
    job = service.submit(dag)
    samples = _sample_until_done(job)
    job.join(timeout=30)
    assert Counter(x for _, x in shared) == Counter(x + 1 for x in items)
    for m in samples:
        for t in m.tasklets:
            assert t.queues_size <= t.queues_capacity
    by_vertex = job.metrics().by_vertex()
    assert by_vertex["inc"]["received_count"] == by_vertex["inc"]["emitted_count"] == n
    assert by_vertex["out"]["received_count"] == n


def test_blocking_outbox_never_refuses(threads):
    """A non-cooperative source offers everything in one call, ignoring nothing: offer is
    always True and offer_batch takes whole lists, even with a slow cooperative sink."""
    service = ExecutionService(cooperative_threads=threads, outbox_capacity=8)

    class BlockingSource(Processor):
        is_cooperative = False

        def __init__(self):
            self.results: list = []

        def complete(self) -> bool:
            for i in range(1000):
                self.results.append(self.outbox.offer(i))
            self.results.append(self.outbox.offer_batch(list(range(1000, 3000))))
            return True

    sources = Supplier(BlockingSource)
    sinks = Supplier(lambda: RecordingSink(max_per_call=5))
    job = service.submit(linear_dag(sources, sinks, 1, 1, lambda e: e.queue_size(4)))
    job.join(timeout=30)
    (source,), (sink,) = sources.created, sinks.created
    assert source.results == [True] * 1000 + [2000]
    assert sink.items == list(range(3000))


def test_memory_stays_bounded(threads):
    """4 MB of payload through a slow sink: traced peak memory stays far below buffering it."""
    service = ExecutionService(cooperative_threads=threads, outbox_capacity=OUTBOX)
    n, size = 1000, 4096

    class PayloadSource(Processor):
        def __init__(self):
            self.i = 0

        def complete(self) -> bool:
            while self.i < n:
                if not self.outbox.offer(bytes(size)):
                    return False
                self.i += 1
            return True

    class CountingSink(Processor):
        def __init__(self):
            self.count = 0
            self.bytes = 0

        def process(self, ordinal, inbox):
            item = inbox.remove()  # one item per call: a slow sink
            self.count += 1
            self.bytes += len(item)

    sinks = Supplier(CountingSink)
    dag = linear_dag(PayloadSource, sinks, 1, 1, lambda e: e.queue_size(8))
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        service.submit(dag).join(timeout=60)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    (sink,) = sinks.created
    assert (sink.count, sink.bytes) == (n, n * size)
    # everything buffered would be ~4 MB; in flight is at most ~8 + 3 * 16 items (~230 KB)
    assert peak - base < 1_000_000, peak - base
