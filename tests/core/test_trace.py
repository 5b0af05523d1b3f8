"""Tracing (issue 34, recording and export): every tasklet call and park of real jobs, on real threads."""

from __future__ import annotations

import json
import sys
import threading
import time

import pytest

from jetbench import DAG, Edge, ExecutionService, JetbenchError, Processor
from jetbench.core.clock import MockClock
from jetbench.core.idle import IdleConfig
from jetbench.core.trace import BYTES_PER_EVENT, FRAME_COLUMNS, RingReader, Trace, TraceError
from jetbench.processors import collect_sink, items_source, map_processor


class PacedSource(Processor):
    """Emits ``count`` items, one every ``every_s`` of real time: the workers idle in between."""

    def __init__(self, count: int, every_s: float):
        self.count = count
        self.every_s = every_s
        self.sent = 0
        self.next_at = 0.0

    def complete(self):
        now = time.monotonic()
        if now < self.next_at:
            return False
        if self.sent < self.count and self.outbox.offer(self.sent):
            self.sent += 1
            self.next_at = now + self.every_s
        return self.sent == self.count


class GatedSource(Processor):
    """Emits ``range(n)``, but holds back the second half until ``gate`` is set."""

    def __init__(self, n: int, gate: threading.Event):
        self.n = n
        self.gate = gate
        self.sent = 0

    def complete(self):
        limit = self.n if self.gate.is_set() else self.n // 2
        while self.sent < limit and self.outbox.offer(self.sent):
            self.sent += 1
        return self.sent == self.n


class EndlessSource(Processor):
    """Emits one item per call until the job is cancelled."""

    def complete(self):
        self.outbox.offer(0)
        return False


class SlowSink(Processor):
    """A non-cooperative sink that counts what it takes."""

    is_cooperative = False

    def __init__(self):
        self.taken = 0

    def process(self, ordinal, inbox):
        self.taken += len(inbox)
        inbox.clear()


def chain(n: int = 3000, parallelism: int = 2) -> DAG:
    dag = DAG()
    src = dag.new_vertex("src", items_source(range(n)), 1)
    inc = dag.new_vertex("inc", map_processor(lambda x: x + 1), parallelism)
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.between(src, inc)).edge(Edge.between(inc, out))
    return dag


def check_lane_order(trace: Trace) -> None:
    """Each lane's calls and parks follow one another; a park inside a call (the blocking outbox
    waiting for room) lies within the call recorded right after its parks."""
    for lane in trace.lanes:
        previous_end = None
        inside: list = []
        for e in lane.events:
            assert e.worker == lane.worker
            assert e.kind in ("call", "park")
            assert e.end_ns >= e.start_ns, e
            if e.kind == "park" and e.in_call:
                inside.append(e)
                continue
            if inside:
                assert e.kind == "call", (lane.worker, e)
                assert all(e.start_ns <= p.start_ns and p.end_ns <= e.end_ns for p in inside), (e, inside)
                inside = []
            if previous_end is not None:
                assert e.start_ns >= previous_end, (lane.worker, e)
            previous_end = e.end_ns
        assert not inside, inside


def test_a_traced_job_records_every_call_of_every_worker_in_order():
    service = ExecutionService(cooperative_threads=2, outbox_capacity=64, trace=True)
    job = service.submit(chain())
    assert sorted(job.join()) == list(range(1, 3001))
    trace = job.trace()
    assert trace.dropped == 0 and trace.dropped_note() is None
    assert [lane.worker for lane in trace.lanes] == [w.thread.name for w in job.workers]
    assert {lane.kind for lane in trace.lanes} == {"cooperative"}
    check_lane_order(trace)
    calls = [e for e in trace.events if e.kind == "call"]
    # every call the workers counted is in the trace, with the items the tasklets counted
    assert len(calls) == sum(t.calls for t in job.tasklets)
    assert sum(e.items_out for e in calls if e.vertex == "src") == 3000
    assert sum(e.items_in for e in calls if e.vertex == "inc") == 3000
    assert sum(e.items_in for e in calls if e.vertex == "out") == 3000
    assert sum(e.progress for e in calls) == sum(t.progress_calls for t in job.tasklets)
    # each tasklet's last call finishes it, and its state after is END
    for t in job.tasklets:
        last = [e for e in calls if e.tasklet == f"{t.vertex_name}#{t.index}"][-1]
        assert last.done and last.state == "END"
        assert last.worker == job.workers[t.worker_index].thread.name
    # a tasklet's calls happen on the worker it was dealt to (no stealing here)
    assert {e.state for e in calls} >= {"PROCESS", "END"}


def test_parks_record_the_strategy_the_time_asked_and_the_time_slept():
    service = ExecutionService(cooperative_threads=1, min_idle_us=50, max_idle_us=400, trace=True)
    dag = DAG()
    src = dag.new_vertex("paced", lambda: PacedSource(5, 0.01), 1)
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.between(src, out))
    job = service.submit(dag)
    assert sorted(job.join()) == [0, 1, 2, 3, 4]
    trace = job.trace()
    check_lane_order(trace)
    parks = [e for e in trace.events if e.kind == "park"]
    assert parks, "the worker idled between paced items"
    config = IdleConfig(50, 400)
    for p in parks:
        assert p.strategy == "backoff"
        assert p.idle_round >= 1
        assert p.asked_ns == config.park_ns(p.idle_round)  # the backoff from the floor, doubling
        assert p.duration_ns >= p.asked_ns  # a sleep lasts at least what it asked for
        assert p.woken is False  # Jet's backoff cannot be woken
    assert {p.asked_ns for p in parks} >= {50_000, 100_000, 200_000, 400_000}
    # the parks come between rounds: each is followed by a call, never by another call's overlap
    assert len(parks) == job.workers[0].idler.parks


def test_a_dedicated_thread_records_the_parks_a_producer_cut_short():
    # the sink's thread parks until a producer's offer wakes it, for up to 60 s: every park it
    # records ends woken, however slowly a loaded host schedules it (no time is compared)
    service = ExecutionService(cooperative_threads=1, trace=True, noncooperative_max_idle_us=60_000_000)
    dag = DAG()
    src = dag.new_vertex("paced", lambda: PacedSource(20, 0.01), 1)
    sink = dag.new_vertex("sink", SlowSink, 1)
    dag.edge(Edge.between(src, sink))
    job = service.submit(dag)
    job.join(timeout=60)
    trace = job.trace()
    check_lane_order(trace)
    blocking = [lane for lane in trace.lanes if lane.kind == "blocking"]
    assert len(blocking) == 1
    events = blocking[0].events
    parks = [e for e in events if e.kind == "park"]
    assert parks and {p.strategy for p in parks} == {"timer"}
    # each park was cut short by an offer (20 items and the DONE item: at most 21 wakes), and
    # the idler counted each of them
    assert all(p.woken for p in parks) and len(parks) <= 21
    assert len(parks) == job.workers[-1].idler.woken
    # every park comes after a call and is followed by one (a woken thread calls its tasklet
    # next), and the calls took in every item
    kinds = [e.kind for e in events]
    assert kinds[0] == "call" and kinds[-1] == "call"
    assert all(kinds[k + 1] == "call" for k, kind in enumerate(kinds[:-1]) if kind == "park")
    calls = [e for e in events if e.kind == "call"]
    assert sum(e.items_in for e in calls) == 20


def test_the_ring_keeps_the_newest_events_and_counts_the_dropped():
    service = ExecutionService(cooperative_threads=1, outbox_capacity=16, trace=True, trace_capacity=50)
    job = service.submit(chain(2000, 1))
    job.join()
    worker = job.workers[0]
    trace = job.trace()
    (lane,) = trace.lanes
    assert len(lane.events) == 50 and lane.capacity == 50
    assert lane.dropped == worker.trace_written - 50 > 0
    assert trace.dropped == lane.dropped
    # the newest kept: the last events are the tasklets finishing
    assert lane.events[-1].kind == "call" and lane.events[-1].done
    note = trace.dropped_note()
    assert f"{lane.dropped:,} on {lane.worker} (ring of 50)" in note and "trace_capacity" in note
    assert "dropped" in repr(trace)
    check_lane_order(trace)


def test_memory_per_event_is_within_the_stated_bound():
    service = ExecutionService(cooperative_threads=1, outbox_capacity=8, trace=True, trace_capacity=4000)
    job = service.submit(chain(20_000, 1))
    job.join()
    ring = job.workers[0].trace_events
    assert len(ring) == 4000
    shared = {id(t) for t in job.tasklets}  # the tasklets exist anyway; steps are shared bound methods
    seen: set[int] = set()
    size = sys.getsizeof(ring)
    for entry in ring:
        size += sys.getsizeof(entry)
        for part in entry:
            if id(part) in shared or id(part) in seen or callable(part) or part is None:
                continue
            seen.add(id(part))
            size += sys.getsizeof(part)
    assert size / len(ring) <= BYTES_PER_EVENT


def test_export_is_chrome_trace_event_json(tmp_path):
    service = ExecutionService(cooperative_threads=2, min_idle_us=10, max_idle_us=100, trace=True)
    dag = DAG()
    src = dag.new_vertex("paced", lambda: PacedSource(5, 0.002), 1)
    inc = dag.new_vertex("inc", map_processor(lambda x: x + 1), 2)
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.between(src, inc)).edge(Edge.between(inc, out))
    job = service.submit(dag)
    job.join()
    trace = job.trace()
    path = trace.export(tmp_path / "job.json")
    doc = json.loads((tmp_path / "job.json").read_text())
    assert path == str(tmp_path / "job.json")
    events = doc["traceEvents"]
    assert {e["pid"] for e in events} == {1}
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert sorted(names.values()) == sorted(lane.worker for lane in trace.lanes)
    assert any(e["ph"] == "M" and e["name"] == "process_name" for e in events)
    timed = [e for e in events if e["ph"] != "M"]
    assert {e["ph"] for e in timed} == {"X"}  # complete events only: nothing to balance
    for e in timed:
        assert {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"} <= e.keys()
        assert isinstance(e["ts"], int | float) and e["ts"] >= 0 and e["dur"] >= 0
        assert e["tid"] in names
    assert len(timed) == len(trace.events)
    parks = [e for e in timed if e["cat"] == "park"]
    assert parks and all({"asked_us", "slept_us", "strategy", "woken"} <= e["args"].keys() for e in parks)
    calls = [e for e in timed if e["cat"].startswith("call")]
    assert {e["name"] for e in calls} == {"paced#0", "inc#0", "inc#1", "out#0"}
    # per thread, in time order as recorded (Perfetto draws each thread's slices as one lane)
    for tid in names:
        ts = [e["ts"] for e in timed if e["tid"] == tid]
        assert ts == sorted(ts)
    assert doc["otherData"]["dropped"] == {lane.worker: 0 for lane in trace.lanes}


def test_export_to_a_path_that_cannot_be_written_says_so(tmp_path):
    job = ExecutionService(trace=True).submit(chain(10, 1))
    job.join()
    bad = tmp_path / "no-such-dir" / "job.json"
    with pytest.raises(TraceError, match=r"trace.export\(.*no-such-dir.*\): cannot write the trace there"):
        job.trace().export(bad)


def test_frame_has_a_row_per_event_and_the_stated_columns():
    job = ExecutionService(trace=True).submit(chain(100, 1))
    job.join()
    trace = job.trace()
    frame = trace.frame()
    assert tuple(frame.columns) == FRAME_COLUMNS
    assert len(frame) == len(trace.events)
    calls = frame[frame.kind == "call"]
    assert calls.groupby("vertex").items_out.sum()["src"] == 100
    assert (frame.duration_ns == frame.end_ns - frame.start_ns).all()


def test_no_trace_by_default_and_asking_for_one_says_how_to_get_it():
    job = ExecutionService().submit(chain(100, 1))
    job.join()
    assert all(w.trace_events is None for w in job.workers)
    with pytest.raises(TraceError, match=r"recorded no trace: submit it on ExecutionService\(trace=True\)"):
        job.trace()
    with pytest.raises(TraceError, match=r"has ended \(completed\): job.trace\(seconds=...\) records a window"):
        job.trace(seconds=1)


@pytest.mark.parametrize("kwargs", [{"trace": 1}, {"trace": True, "trace_capacity": 0},
                                    {"trace": True, "trace_capacity": 2.5}])
def test_bad_trace_arguments_are_refused(kwargs):
    with pytest.raises(JetbenchError, match="trace"):
        ExecutionService(**kwargs)


def test_a_window_of_a_running_job():
    service = ExecutionService(cooperative_threads=1)
    dag = DAG()
    src = dag.new_vertex("endless", EndlessSource, 1)
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.between(src, out))
    job = service.submit(dag)
    try:
        with pytest.raises(JetbenchError, match="seconds > 0"):
            job.trace(seconds=0)
        trace = job.trace(seconds=0.05, capacity=100_000)
        assert all(w.trace_events is None for w in job.workers)  # recording stopped after the window
        calls = [e for e in trace.events if e.kind == "call"]
        assert {e.tasklet for e in calls} == {"endless#0", "out#0"}
        check_lane_order(trace)
    finally:
        job.cancel()
        with pytest.raises(JetbenchError):
            job.join(timeout=10)


def test_a_mock_clock_run_traces_the_same_every_time():
    def run():
        clock = MockClock(start=5.0)
        service = ExecutionService(cooperative_threads=1, outbox_capacity=32, trace=True, clock=clock)
        dag = DAG()
        src = dag.new_vertex("src", items_source(range(500)), 1)
        inc = dag.new_vertex("inc", map_processor(lambda x: x + 1), 2)
        out = dag.new_vertex("out", collect_sink(), 1)
        dag.edge(Edge.between(src, inc)).edge(Edge.between(inc, out))
        job = service.submit(dag)
        job.join()
        return [(e.kind, e.start_ns, e.end_ns, e.tasklet, e.progress, e.items_in, e.items_out, e.state,
                 e.asked_ns) for e in job.trace().events]

    first = run()
    assert first == run() == run()
    assert first[0][1] == 5_000_000_000


def test_only_the_worker_thread_appends_and_a_reader_copy_is_consistent():
    """A reader copying the rings while the workers record (a sampler's view) never sees a torn ring."""
    service = ExecutionService(cooperative_threads=2, trace=True, trace_capacity=500)
    job = service.submit(chain(50_000, 2))
    seen = []
    stop = threading.Event()

    def read():
        while not stop.is_set() and not job.is_done:
            trace = job.trace()
            seen.append(len(trace.events))
            check_lane_order(trace)

    reader = threading.Thread(target=read)
    reader.start()
    job.join()
    stop.set()
    reader.join()
    assert seen and all(n <= 1000 for n in seen)


def test_snapshot_phases_show_as_the_states_calls_move_to(tmp_path):
    from jetbench.core.job_config import JobConfig

    config = JobConfig("exactly_once", snapshot_interval_ms=5, snapshot_store=tmp_path / "s.sqlite")
    service = ExecutionService(cooperative_threads=2, outbox_capacity=16, trace=True)
    dag = DAG()
    src = dag.new_vertex("paced", lambda: PacedSource(30, 0.002), 1)
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.between(src, out))
    job = service.submit(dag, config=config)
    assert sorted(job.join(timeout=60)) == list(range(30))
    states = {e.state for e in job.trace().events if e.kind == "call"}
    assert {"SAVE_SNAPSHOT", "EMIT_BARRIER"} <= states


def test_with_work_stealing_every_call_is_on_the_lane_of_the_worker_that_made_it():
    service = ExecutionService(cooperative_threads=2, outbox_capacity=32, work_stealing=True, trace=True)
    dag = DAG()
    for k in range(3):
        src = dag.new_vertex(f"src{k}", items_source(range(2000 if k else 10)), 1)
        out = dag.new_vertex(f"out{k}", collect_sink(), 1)
        dag.edge(Edge.between(src, out))
    job = service.submit(dag)
    job.join()
    trace = job.trace()
    check_lane_order(trace)
    calls = [e for e in trace.events if e.kind == "call"]
    assert len(calls) == sum(t.calls for t in job.tasklets)
    assert sum(e.items_in for e in calls if e.vertex.startswith("out")) == 4010


def test_a_ring_reader_hands_out_each_event_once_while_the_job_records():
    """A live view reads a running job's rings again and again: each read gives what was
    recorded since the one before, so together they are the whole recording, each event once."""
    service = ExecutionService(cooperative_threads=1, outbox_capacity=8, trace=True)
    gate = threading.Event()
    dag = DAG()
    src = dag.new_vertex("src", lambda: GatedSource(20_000, gate), 1)
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.between(src, out))
    job = service.submit(dag)
    reader = RingReader(job.workers[0])
    got: list = []
    # the source holds back half its items until the gate opens: the job is still recording
    # while these reads give the first events
    while not got:
        got += reader.read()
    assert not job.is_done
    gate.set()
    while not job.is_done:
        got += reader.read()
    job.join()
    got += reader.read()
    assert reader.read() == []
    assert reader.lost == 0
    ring = job.workers[0].trace_events
    assert len(got) == job.workers[0].trace_written == len(ring)
    whole = job.trace().lanes[0].events
    assert got == list(whole)


class Flood(Processor):
    """Non-cooperative: offers ``n`` items in one call; its blocking outbox waits for room."""

    is_cooperative = False

    def __init__(self, n: int):
        self.n = n

    def complete(self):
        for i in range(self.n):
            self.outbox.offer(i)
        return True


class OneAtATime(Processor):
    """One item per call, 2 ms each: a producer waiting for room backs off for more than one
    round (its first parks are 25 and 50 us), on either build and at any load."""

    def process(self, ordinal, inbox):
        for x in inbox.take(1):
            time.sleep(0.002)
            self.outbox.offer(x)


def test_the_blocking_outbox_wait_is_recorded_as_parks_inside_the_call(tmp_path):
    service = ExecutionService(cooperative_threads=1, outbox_capacity=4, trace=True)
    dag = DAG()
    flood = dag.new_vertex("flood", lambda: Flood(200), 1)
    slow = dag.new_vertex("slow", OneAtATime, 1)
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.between(flood, slow).queue_size(4)).edge(Edge.between(slow, out))
    job = service.submit(dag)
    assert sorted(job.join(timeout=60)) == list(range(200))
    trace = job.trace()
    check_lane_order(trace)  # every wait lies within its call
    (blocking,) = [lane for lane in trace.lanes if lane.kind == "blocking"]
    waits = [e for e in blocking.events if e.kind == "park" and e.in_call]
    assert waits and all(w.strategy == job.workers[-1].idler.name for w in waits)
    # the wait backs off round by round from the floor, as Jet's blocking worker does
    assert {w.idle_round for w in waits} >= {1, 2}
    assert all(w.asked_ns == service.noncooperative_idle.park_ns(w.idle_round) for w in waits)
    assert trace.frame().in_call.sum() == len(waits)
    # exported nested in their call, in time order per thread
    doc = json.loads((tmp_path / "t.json").read_text()) if trace.export(tmp_path / "t.json") else None
    outbox = [e for e in doc["traceEvents"] if e.get("cat") == "park,outbox"]
    assert len(outbox) == len(waits) and all(e["name"].startswith("waits for room") for e in outbox)
    for tid in {e["tid"] for e in doc["traceEvents"] if e["ph"] == "X"}:
        ts = [e["ts"] for e in doc["traceEvents"] if e["ph"] == "X" and e["tid"] == tid]
        assert ts == sorted(ts)
