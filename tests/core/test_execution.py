"""ExecutionService: idle control, work stealing, thread naming, metrics and the sampler."""

from __future__ import annotations

import re
import threading
import time
from collections import Counter

import pytest
from engine_helpers import ListSource, RecordingSink, Supplier, linear_dag, wait_until

from jetbench import DAG, Edge, ExecutionService, JobStatus, Processor
from jetbench.core import JobMetrics, MetricsSampler, TaskletStatistics
from jetbench.core.tasklet import TaskletState
from jetbench.processors import (
    accumulate_by_key,
    collect_sink,
    combine_by_key,
    counting,
    filter_processor,
    items_source,
    map_processor,
)


class GatedSource(Processor):
    """Emits nothing (complete() returns False) until ``gate`` is set or ``max_s`` passes,
    then emits ``items``."""

    def __init__(self, gate: threading.Event, items=(), max_s: float = 5.0):
        self.gate = gate
        self.items = list(items)
        self.max_s = max_s

    def init(self, outbox, context):
        super().init(outbox, context)
        self.deadline = time.monotonic() + self.max_s

    def complete(self):
        if not self.gate.is_set() and time.monotonic() < self.deadline:
            return False
        while self.items:
            if not self.outbox.offer(self.items[0]):
                return False
            self.items.pop(0)
        return True


def _cooperative(m):
    return [w for w in m.workers if w.kind == "cooperative"]


# -- idling -----------------------------------------------------------------------------------------


def test_set_idle_while_running(service, threads):
    gate = threading.Event()
    job = service.submit(linear_dag(lambda: GatedSource(gate), RecordingSink, 1, threads))
    try:
        assert (service.idle.min_idle_us, service.idle.max_idle_us) == (25, 500)
        assert all(w.idler.config is service.idle for w in job.workers)
        time.sleep(0.05)
        service.set_idle(min_idle_us=5000, max_idle_us=5000)
        assert (service.idle.min_idle_us, service.idle.max_idle_us) == (5000, 5000)
        time.sleep(0.03)  # parks begun under the old bounds are over
        before = {w.index: w for w in _cooperative(job.metrics())}
        time.sleep(0.15)
        after = {w.index: w for w in _cooperative(job.metrics())}
        for index, w in after.items():
            idles = w.idle_count - before[index].idle_count
            parked = w.parked_ms - before[index].parked_ms
            assert idles > 0
            assert parked == pytest.approx(5.0 * idles)  # every park now asks for 5 ms
            assert idles <= 0.15 / 0.005 + 2
        service.set_idle(max_idle_us=100)  # below the min: raised to the min, as in Jet
        assert (service.idle.min_idle_us, service.idle.max_idle_us) == (5000, 5000)
        service.set_idle(min_idle_us=10, max_idle_us=200)
        assert (service.idle.min_idle_us, service.idle.max_idle_us) == (10, 200)
    finally:
        gate.set()
    job.join(timeout=10)
    assert job.status is JobStatus.COMPLETED


def test_set_idle_rejects_bad_values():
    from jetbench import JetbenchError

    service = ExecutionService()
    for bad in (-1, "5", True):
        with pytest.raises(JetbenchError):
            service.set_idle(min_idle_us=bad)
    assert (service.idle.min_idle_us, service.idle.max_idle_us) == (25, 500)


def test_idle_backoff_accumulates_idle_count_and_parked_time(service):
    """A source that emits nothing for ~0.2 s makes its worker back off and park.

    Only what no machine load can change is asserted: how many rounds fit in 0.2 s depends on
    the scheduler, but every park asks for at least the minimum, consecutive idle rounds ask for
    more (backoff), and the parks asked for never add up to more than the time that passed."""
    gate = threading.Event()
    timer = threading.Timer(0.2, gate.set)
    timer.start()
    try:
        job = service.submit(linear_dag(lambda: GatedSource(gate, range(10)), collect_sink(), 1, 1))
        assert sorted(job.join(timeout=10)) == list(range(10))
    finally:
        timer.cancel()
    m = job.metrics()
    source_worker = m.tasklet("source").worker
    w = next(w for w in m.workers if w.index == source_worker and w.kind == "cooperative")
    assert w.idle_count >= 2  # the gate stays shut for 0.2 s: the worker idled more than once
    assert 0 < w.parked_ms <= m.elapsed_s * 1000
    # backoff: consecutive idle rounds park longer than the 25 us minimum each
    assert w.parked_ms > w.idle_count * 0.025
    assert w.iteration_count >= w.idle_count
    assert not w.alive


def test_idle_config_backoff_sequence():
    from jetbench.core import BackoffIdler, IdleConfig

    cfg = IdleConfig(25, 500)
    assert [cfg.park_ns(n) // 1000 for n in range(1, 8)] == [25, 50, 100, 200, 400, 500, 500]
    assert cfg.park_ns(1000) == 500_000
    idler = BackoffIdler(IdleConfig(0, 0))
    idler.idle(1)
    idler.idle(2)
    assert (idler.parks, idler.parked_ns) == (2, 0)


# -- work stealing ------------------------------------------------------------------------------------


def _wordcount_like_dag(n_sources: int, items: list) -> DAG:
    dag = DAG()
    sink = dag.new_vertex("sink", collect_sink(), 1)
    combine = dag.new_vertex("combine", combine_by_key(counting()), 2)
    acc = dag.new_vertex("acc", accumulate_by_key(lambda x: x % 10, counting()), 2)
    dag.edge(Edge.between(acc, combine).partitioned(lambda kv: kv[0]))
    dag.edge(Edge.between(combine, sink))
    for k in range(n_sources):
        # short sources and long ones, so some workers run dry early and steal
        src = dag.new_vertex(f"src{k}", items_source(items if k % 2 else items[:10]), 1)
        sq = dag.new_vertex(f"sq{k}", map_processor(lambda x: x * x), 1)
        odd = dag.new_vertex(f"odd{k}", filter_processor(lambda x: x % 2), 1)
        dag.edge(Edge.between(src, sq).queue_size(16)).edge(Edge.between(sq, odd).queue_size(16))
        dag.edge(Edge.from_(odd).to(acc, k))
    return dag


def _expected_counts(n_sources: int, items: list) -> dict:
    c: Counter = Counter()
    for k in range(n_sources):
        for x in items if k % 2 else items[:10]:
            y = x * x
            if y % 2:
                c[y % 10] += 1
    return dict(c)


@pytest.mark.parametrize("stealing", [True, False], ids=["stealing", "no-stealing"])
def test_work_stealing_runs_multi_vertex_dag_correctly(threads, stealing):
    service = ExecutionService(cooperative_threads=threads, work_stealing=stealing)
    items = list(range(5000))
    dag = _wordcount_like_dag(6, items)
    job = service.submit(dag)
    result = job.join(timeout=30)
    assert dict(result) == _expected_counts(6, items)
    coop = [w for w in job.workers if w.kind == "cooperative"]
    if stealing and threads > 1:
        assert all(w.stealing is coop[0].stealing is not None for w in coop)
        assert coop[0].stealing.steals >= 0
    else:
        assert all(w.stealing is None for w in coop)


def test_work_stealing_moves_tasklets_to_idle_worker(threads):
    """Worker 1 gets only quick tasklets; when it finishes one it steals from worker 0.
    (With one thread there is nobody to steal: stealing stays off.)"""
    service = ExecutionService(cooperative_threads=threads, work_stealing=True)
    gate = threading.Event()
    dag = DAG()
    # tasklets are dealt round-robin in vertex order: even positions -> worker 0
    for k in range(4):
        slow = dag.new_vertex(f"slow{k}", lambda: GatedSource(gate, range(100)), 1)
        quick = dag.new_vertex(f"quick{k}", lambda: ListSource(range(5)), 1)
        sink_slow = dag.new_vertex(f"sink_slow{k}", RecordingSink, 1)
        sink_quick = dag.new_vertex(f"sink_quick{k}", RecordingSink, 1)
        dag.edge(Edge.between(slow, sink_slow)).edge(Edge.between(quick, sink_quick))
    job = service.submit(dag)
    if threads == 1:
        assert job.workers[0].stealing is None
        gate.set()
        job.join(timeout=10)
        return
    try:
        stealing = job.workers[0].stealing

        def moved():
            return [
                t
                for t in job.metrics().tasklets
                if t.vertex.startswith(("slow", "sink_slow")) and t.worker == 1
            ]

        assert wait_until(lambda: stealing.steals > 0 and moved(), timeout=5), "nothing stolen"
    finally:
        gate.set()
    job.join(timeout=10)
    assert job.status is JobStatus.COMPLETED


# -- threads ---------------------------------------------------------------------------------------------


class ThreadRecorder(Processor):
    def __init__(self, cooperative: bool, names: list):
        self.is_cooperative = cooperative
        self.names = names

    def init(self, outbox, context):
        super().init(outbox, context)
        self.names.append(("init", context.global_index, threading.current_thread().name))

    def process(self, ordinal, inbox):
        self.names.append(("process", self.context.global_index, threading.current_thread().name))
        inbox.clear()

    def complete(self):
        self.names.append(("complete", self.context.global_index, threading.current_thread().name))
        return True

    def close(self):
        self.names.append(("close", self.context.global_index, threading.current_thread().name))


def test_non_cooperative_tasklet_runs_on_blocking_thread(service, threads):
    blocking_names: list = []
    coop_names: list = []
    dag = DAG()
    src = dag.new_vertex("src", lambda: ListSource(range(100)), 1)
    block = dag.new_vertex("block", lambda: ThreadRecorder(False, blocking_names), 2)
    coop = dag.new_vertex("coop", lambda: ThreadRecorder(True, coop_names), 1)
    dag.edge(Edge.between(src, block)).edge(Edge.from_(src, 1).to(coop))
    job = service.submit(dag)
    job.join(timeout=10)
    pattern = re.compile(rf"^jetbench\.{re.escape(job.name)}\.blocking-(\d+)$")
    per_instance: dict[int, set] = {}
    for _, index, name in blocking_names:
        assert pattern.match(name), name
        per_instance.setdefault(index, set()).add(name)
    # each non-cooperative instance has one dedicated thread for its whole life
    assert all(len(names) == 1 for names in per_instance.values())
    assert len({next(iter(n)) for n in per_instance.values()}) == 2
    coop_pattern = re.compile(rf"^jetbench\.{re.escape(job.name)}\.cooperative-(\d+)$")
    assert all(
        coop_pattern.match(name) and int(coop_pattern.match(name)[1]) < threads
        for _, _, name in coop_names
    )
    m = job.metrics()
    assert [t.cooperative for t in m.tasklets if t.vertex == "block"] == [False, False]
    assert all(t.worker < 0 for t in m.tasklets if t.vertex == "block")
    assert sorted(w.kind for w in m.workers).count("blocking") == 2


def test_tasklets_dealt_round_robin_across_jobs(threads):
    service = ExecutionService(cooperative_threads=threads)
    workers = []
    for _ in range(4):
        dag = DAG()
        dag.new_vertex("only", lambda: ListSource([]), 1)
        job = service.submit(dag)
        job.join(timeout=10)
        workers.append(job.metrics().tasklet("only").worker)
    assert workers == [k % threads for k in range(4)]


def test_default_parallelism_is_thread_count(service, threads):
    sinks = Supplier(RecordingSink)
    service.submit(linear_dag(lambda: ListSource(range(10)), sinks, None, None)).join(timeout=10)
    assert len(sinks.created) == threads
    assert {p.context.local_parallelism for p in sinks.created} == {threads}


def test_concurrent_jobs_on_one_service(service):
    jobs = []
    for k in range(4):
        dag = DAG()
        src = dag.new_vertex("src", items_source(range(k * 1000, (k + 1) * 1000)))
        inc = dag.new_vertex("inc", map_processor(lambda x: x + 1))
        out = dag.new_vertex("out", collect_sink())
        dag.edge(Edge.between(src, inc)).edge(Edge.between(inc, out))
        jobs.append(service.submit(dag))
    for k, job in enumerate(jobs):
        assert sorted(job.join(timeout=20)) == list(range(k * 1000 + 1, (k + 1) * 1000 + 1))
    assert len({job.name for job in jobs}) == 4


# -- metrics ----------------------------------------------------------------------------------------------


def test_metrics_counts_add_up(service):
    n = 10_000
    dag = DAG()
    src = dag.new_vertex("src", items_source(range(n)))
    mp = dag.new_vertex("map", map_processor(lambda x: x + 1))
    out = dag.new_vertex("sink", collect_sink())
    dag.edge(Edge.between(src, mp)).edge(Edge.between(mp, out))
    job = service.submit(dag)
    assert len(job.join(timeout=20)) == n
    m = job.metrics()
    totals = m.by_vertex()
    assert totals["src"] == {"received_count": 0, "emitted_count": n, "queues_size": 0}
    assert totals["map"] == {"received_count": n, "emitted_count": n, "queues_size": 0}
    assert totals["sink"]["received_count"] == n and totals["sink"]["emitted_count"] == 0
    batches = sum(t.received_batches for t in m.tasklets if t.vertex == "map")
    assert 1 <= batches <= n // 50  # items travel in chunks, not one by one
    for t in m.tasklets:
        assert t.state == TaskletState.END.name
        assert t.calls >= t.progress_calls >= 1
        assert t.busy_ms >= 0 and t.queues_size == 0
        if t.vertex != "src":
            assert t.queues_capacity == 0  # every inbound stream is exhausted
    assert m.status == "completed" and m.job == job.name and m.elapsed_s > 0
    assert all(not w.alive and w.iteration_count > 0 for w in m.workers)
    assert sum(w.tasklet_count for w in m.workers) == 0  # all tasklets dismissed
    table = m.table()
    assert "map#0" in table and "src#0" in table and "worker cooperative 0" in table
    with pytest.raises(KeyError, match="nope"):
        m.tasklet("nope")


def test_metrics_while_running_show_queue_capacity(service):
    gate = threading.Event()
    job = service.submit(
        linear_dag(lambda: GatedSource(gate), RecordingSink, 1, 1, lambda e: e.queue_size(50))
    )
    try:
        m = job.metrics()
        assert m.status == "running"
        sink = m.tasklet("sink")
        assert sink.queues_capacity == 50 and sink.queues_size == 0
    finally:
        gate.set()
    job.join(timeout=10)


def test_queue_depth_per_edge(service):
    """Two edges into one sink: the lower-priority edge fills while the gated one is drained
    first; per-edge figures show it (summed over instances), the per-vertex total cannot."""
    gate = threading.Event()
    dag = DAG()
    gated = dag.new_vertex("gated", lambda: GatedSource(gate, range(10)), 1)
    fast = dag.new_vertex("fast", items_source(range(1000)), 1)
    sink = dag.new_vertex("sink", RecordingSink, 2)
    dag.edge(Edge.from_(gated).to(sink, 0).queue_size(32))
    dag.edge(Edge.from_(fast).to(sink, 1).priority(1).queue_size(8))
    job = service.submit(dag)
    try:
        assert job.edges == (("gated", "sink", 0), ("fast", "sink", 1))
        assert wait_until(lambda: job.metrics().by_edge()[1].size == 16)
        m = job.metrics()
        assert [t.inbound_queues for t in m.tasklets if t.vertex == "sink"] == [((0, 0, 32), (1, 8, 8))] * 2
        gated_q, fast_q = m.by_edge()
        assert (fast_q.edge, fast_q.source, fast_q.destination, fast_q.ordinal) == ("fast → sink #1", "fast", "sink", 1)
        assert (fast_q.size, fast_q.capacity, fast_q.fill) == (16, 16, 1.0)
        assert (gated_q.edge, gated_q.size, gated_q.capacity, gated_q.fill) == ("gated → sink #0", 0, 64, 0.0)
        assert m.by_vertex()["sink"]["queues_size"] == 0  # only the streams drained now count there
        sampler = MetricsSampler(job)
        sampler.sample()
        queue_recs = [r for r in sampler.records if r["kind"] == "queue"]
        assert [(r["edge"], r["size"], r["capacity"], r["fill"]) for r in queue_recs] == [
            ("gated → sink #0", 0, 64, 0.0), ("fast → sink #1", 16, 16, 1.0)
        ]
    finally:
        gate.set()
    job.join(timeout=10)
    final = job.metrics().by_edge()
    assert [(q.size, q.capacity) for q in final] == [(0, 64), (0, 16)]  # edges stay listed, empty


def test_by_edge_without_known_edges_names_the_destination():
    stats = dict(worker=0, cooperative=True, state="PROCESS", received_count=0, received_batches=0,
                 emitted_count=0, queues_size=0, queues_capacity=0, calls=0, progress_calls=0,
                 busy_ms=0.0, slow_calls=0, max_call_ms=0.0, backpressure=False)
    tasklets = tuple(TaskletStatistics("b", i, inbound_queues=((0, 3, 4),), **stats) for i in range(2))
    (q,) = JobMetrics("j", "running", 1.0, tasklets, ()).by_edge()
    assert (q.edge, q.source, q.size, q.capacity, q.fill) == ("→ b #0", "", 6, 8, 0.75)


def test_slow_calls_counted_for_cooperative_sleeper(service):
    class Sleeper(Processor):
        def __init__(self, cooperative: bool):
            self.is_cooperative = cooperative
            self.calls = 0

        def complete(self):
            time.sleep(0.003)
            self.calls += 1
            return self.calls >= 10

    dag = DAG()
    dag.new_vertex("coop", lambda: Sleeper(True), 1)
    dag.new_vertex("blocking", lambda: Sleeper(False), 1)
    job = service.submit(dag)
    job.join(timeout=10)
    m = job.metrics()
    coop, blocking = m.tasklet("coop"), m.tasklet("blocking")
    assert coop.slow_calls >= 10
    assert coop.max_call_ms >= 3.0
    assert coop.busy_ms >= 30
    assert blocking.slow_calls == 0  # only cooperative calls can be "slow"
    assert blocking.busy_ms >= 30


@pytest.mark.serial  # timing: failed beside other tests at load ~23 (scripts/test.sh runs it alone)
def test_slow_call_threshold_is_configurable(threads):
    class Sleeper(Processor):
        def __init__(self):
            self.calls = 0

        def complete(self):
            time.sleep(0.003)
            self.calls += 1
            return self.calls >= 5

    service = ExecutionService(cooperative_threads=threads, slow_call_ms=50)
    dag = DAG()
    dag.new_vertex("coop", Sleeper, 1)
    job = service.submit(dag)
    job.join(timeout=10)
    assert job.metrics().tasklet("coop").slow_calls == 0


@pytest.mark.serial  # timing: failed beside other tests at load ~23 (scripts/test.sh runs it alone)
def test_metrics_sampler_collects_records_over_time(service):
    class Paced(Processor):
        """Emits one item every ~10 ms for ~0.25 s."""

        def init(self, outbox, context):
            super().init(outbox, context)
            self.next = time.monotonic()
            self.end = self.next + 0.25
            self.i = 0

        def complete(self):
            now = time.monotonic()
            if now >= self.next:
                if not self.outbox.offer(self.i):
                    return False
                self.i += 1
                self.next = now + 0.01
            return now >= self.end

    job = service.submit(linear_dag(Paced, collect_sink(), 1, 1))
    sampler = MetricsSampler(job, interval_s=0.02).start()
    result = job.join(timeout=10)
    assert wait_until(lambda: not sampler.running, timeout=2)  # it stops by itself
    records = sampler.stop()
    assert len(result) > 5
    tasklet_recs = [r for r in records if r["kind"] == "tasklet"]
    worker_recs = [r for r in records if r["kind"] == "worker"]
    assert tasklet_recs and worker_recs
    times = sorted({r["t"] for r in records})
    assert len(times) >= 2  # while running, then once at the end (how many fit depends on load)
    assert [r["t"] for r in records] == sorted(r["t"] for r in records)
    sink_series = [r["received_count"] for r in tasklet_recs if r["vertex"] == "sink"]
    assert sink_series == sorted(sink_series)  # counters only grow
    assert sink_series[0] < sink_series[-1] == len(result)
    assert {"vertex", "index", "state", "queues_size", "emitted_count"} <= set(tasklet_recs[0])
    assert {"idle_count", "parked_ms", "iteration_count", "worker_kind"} <= set(worker_recs[0])
    assert {r["worker_kind"] for r in worker_recs} == {"cooperative"}
    assert tasklet_recs[-1]["state"] == "END"


def test_metrics_sampler_stop_while_running(service):
    gate = threading.Event()
    job = service.submit(linear_dag(lambda: GatedSource(gate), RecordingSink, 1, 1))
    sampler = MetricsSampler(job, interval_s=0.01).start()
    time.sleep(0.05)
    records = sampler.stop()
    assert records and all(r["t"] >= 0 for r in records)
    n = len(records)
    time.sleep(0.03)
    assert len(sampler.records) == n  # stopped: no more samples
    gate.set()
    job.join(timeout=10)
    sampler.sample()  # a manual sample still works after the job ended
    assert len(sampler.records) > n


def test_done_listener_and_elapsed(service):
    calls: list = []
    gate = threading.Event()
    job = service.submit(linear_dag(lambda: GatedSource(gate), RecordingSink, 1, 1))
    job.add_done_listener(calls.append)
    assert calls == [] and job.status is JobStatus.RUNNING and job.result is None
    gate.set()
    job.join(timeout=10)
    assert calls == [job]
    job.add_done_listener(calls.append)  # after the end: called at once
    assert calls == [job, job]
    e1 = job.elapsed
    time.sleep(0.01)
    assert job.elapsed == e1  # frozen at the end
    assert "completed" in repr(job)


def test_metrics_history_is_recorded_when_asked(threads):
    from jetbench import DAG, Edge, ExecutionService
    from jetbench.processors import collect_sink, items_source, map_processor

    dag = DAG()
    src = dag.new_vertex("src", items_source(range(50_000)))
    m = dag.new_vertex("m", map_processor(lambda x: x))
    out = dag.new_vertex("out", collect_sink())
    dag.edge(Edge.between(src, m)).edge(Edge.between(m, out))
    job = ExecutionService(cooperative_threads=threads, metrics_interval_s=0.005).submit(dag)
    job.join(timeout=30)
    assert job.service is not None
    frame = job.metrics_frame()
    assert set(frame["vertex"]) == {"src", "m", "out"}
    last = frame[frame["t"] == frame["t"].max()]
    assert last[last["vertex"] == "out"]["received_count"].sum() == 50_000
    assert (job.metrics_frame(kind="worker")["worker_kind"] == "cooperative").all()
