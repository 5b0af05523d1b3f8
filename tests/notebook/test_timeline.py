"""The timeline's Python side without a browser (issue 34): what it sends for a window, bounded;
live over a running job, still for a finished one; barrier marks; the dashboard's Timeline tab;
bad input. The drawing itself is tested in tests/browser/test_timeline_browser.py."""

from __future__ import annotations

import json
import threading
import time

import pytest

from jetbench import DAG, Edge, ExecutionService, JetbenchError, JobCancelled, Processor
from jetbench.core.job_config import JobConfig
from jetbench.core.trace import Lane, Trace, TraceError, TraceEvent
from jetbench.notebook import Dashboard
from jetbench.notebook.timeline import Timeline
from jetbench.notebook.timeline_model import SLOW, LaneBuffer, TimelineModel, buffers_of
from jetbench.processors import collect_sink, items_source, map_processor
from jetbench.processors.generator_source import generator_source


class Endless(Processor):
    """Emits one item per call until the job is cancelled."""

    def complete(self):
        self.outbox.offer(0)
        return False


def endless_dag() -> DAG:
    dag = DAG()
    src = dag.new_vertex("endless", Endless, 1)
    out = dag.new_vertex("out", map_processor(lambda x: x), 1)
    dag.edge(Edge.between(src, out))
    return dag


def call(worker: str, start: int, end: int, tasklet: str = "v#0", progress: bool = True,
         state: str = "PROCESS") -> TraceEvent:
    return TraceEvent(worker, "call", start, end, tasklet=tasklet, vertex=tasklet.split("#")[0], progress=progress,
                      done=False, items_in=1, items_out=1, state=state)


def park(worker: str, start: int, end: int) -> TraceEvent:
    return TraceEvent(worker, "park", start, end, strategy="backoff", asked_ns=end - start, idle_round=1,
                      woken=False)


def busy_lane(worker: str, n: int, call_ns: int = 50_000, park_ns: int = 50_000) -> list[TraceEvent]:
    """``n`` rounds of ten tasklets' calls, every fourth without progress, a park after each round."""
    events = []
    t = 0
    for r in range(n):
        for k in range(10):
            events.append(call(worker, t, t + call_ns, f"v{k}#0", progress=(r + k) % 4 != 0))
            t += call_ns
        events.append(park(worker, t, t + park_ns))
        t += park_ns
    return events


def test_a_window_with_few_events_sends_each_and_a_busy_one_sends_bounded_aggregates():
    # 10 tasklets x 2 workers x 5.5 s of 50 us calls: 100,000 events per worker
    lanes = []
    last: dict[str, str] = {}
    for w in ("w0", "w1"):
        lane = LaneBuffer(w, "cooperative")
        lane.add(busy_lane(w, 10_000), last)
        lanes.append(lane)
    model = TimelineModel("busy", slow_ns=1_000_000, max_events=1500, buckets=600)
    whole = model.state(lanes, (0, 5_500_000_000), origin_ns=0)
    assert [lane["mode"] for lane in whole["lanes"]] == ["buckets", "buckets"]
    assert all(len(lane["buckets"]) <= 600 for lane in whole["lanes"])
    assert len(json.dumps(whole)) < 200_000  # bounded, however long the recording
    rows = whole["lanes"][0]["buckets"]
    # what the aggregates hold adds up: every call and park of the lane, busy ~ 10/11 of the time
    assert sum(r[1] for r in rows) == 100_000 and sum(r[6] for r in rows) == 10_000
    busy = sum(r[3] for r in rows)
    assert busy == pytest.approx(100_000 * 50, rel=1e-6)  # us
    assert sum(r[4] for r in rows) == pytest.approx(25_000 * 50, rel=1e-6)  # calls without progress
    assert sorted(whole["vertices"]) == [f"v{k}" for k in range(10)]
    # zoomed in to 1 ms: each call and park, in time order
    near = model.state(lanes, (1_000_000, 2_000_000), origin_ns=0)
    lane0 = near["lanes"][0]
    assert lane0["mode"] == "events" and lane0["count"] == len(lane0["calls"]) + len(lane0["parks"])
    starts = [c[0] for c in lane0["calls"]]
    assert starts == sorted(starts) and starts[0] <= 1000 and starts[-1] >= 1900
    assert any(not c[3] & 1 for c in lane0["calls"]) and any(c[3] & 1 for c in lane0["calls"])
    assert all(p[1] == 50.0 for p in lane0["parks"])


def test_slow_calls_are_flagged_on_cooperative_lanes_only():
    events = [call("w", 0, 500_000), call("w", 500_000, 3_000_000)]
    model = TimelineModel("slow", slow_ns=1_000_000)
    flags = {}
    for kind in ("cooperative", "blocking"):
        lane = LaneBuffer("w", kind)
        lane.add(events, {})
        flags[kind] = [c[3] & SLOW for c in model.state([lane], (0, 3_000_000), 0)["lanes"][0]["calls"]]
    assert flags == {"cooperative": [0, SLOW], "blocking": [0, 0]}


def test_a_barrier_mark_where_a_tasklet_left_emit_barrier():
    events = [call("w", 0, 10, "a#0", state="SAVE_SNAPSHOT"), call("w", 10, 20, "a#0", state="EMIT_BARRIER"),
              call("w", 20, 30, "b#0", state="EMIT_BARRIER"), call("w", 30, 40, "a#0", state="EMIT_BARRIER"),
              call("w", 40, 50, "a#0", state="PROCESS"), call("w", 50, 60, "b#0", state="PROCESS")]
    lane = LaneBuffer("w", "cooperative")
    lane.add(events, {})
    assert lane.marks == [(50, "a#0"), (60, "b#0")]
    lane.trim(55)
    assert lane.marks == [(60, "b#0")]


def test_a_traced_exactly_once_job_shows_its_barriers(tmp_path):
    config = JobConfig("exactly_once", snapshot_interval_ms=5, snapshot_store=tmp_path / "s.sqlite")
    service = ExecutionService(cooperative_threads=2, outbox_capacity=16, trace=True)

    dag = DAG()
    src = dag.new_vertex("paced", generator_source(500, timestamped=False, count=30), 1)
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.between(src, out))
    job = service.submit(dag, config=config)
    assert sorted(job.join(timeout=60)) == list(range(30))
    taken = len(job.snapshot_history)
    trace = job.trace()
    marks = [m for lane in buffers_of(trace) for m in lane.marks]
    # every snapshot's barrier left the source (a finished instance takes no more)
    assert {name for _, name in marks} >= {"paced#0"}
    assert 1 <= len([m for m in marks if m[1] == "paced#0"]) <= taken + 1
    state = Timeline(trace).state  # the whole trace holds a few hundred events: each is sent, marks too
    assert sum(len(lane["marks"]) for lane in state["lanes"]) == len(marks)


def test_timeline_of_a_trace_is_still_and_answers_zoom_and_fit():
    service = ExecutionService(cooperative_threads=2, outbox_capacity=32, trace=True)
    dag = DAG()
    src = dag.new_vertex("src", items_source(range(3000)), 1)
    inc = dag.new_vertex("inc", map_processor(lambda x: x + 1), 2)
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.between(src, inc)).edge(Edge.between(inc, out))
    job = service.submit(dag)
    job.join()
    trace = job.trace()
    view = trace.timeline()
    assert isinstance(view, Timeline)
    s = view.state
    assert s["live"] is False and s["final"] is True and s["job"] == job.name
    assert [lane["worker"] for lane in s["lanes"]] == [lane.worker for lane in trace.lanes]
    assert s["window"][0] == 0.0 and s["window"] == s["extent"]
    events = sum(len(lane.events) for lane in trace.lanes)
    drawn = sum(lane["count"] for lane in s["lanes"])
    assert drawn == events
    # the browser zooms into the first tenth, then fits again
    t0, t1 = s["extent"]
    view._on_msg(view, {"cmd": "view", "t0": t0, "t1": t0 + (t1 - t0) / 10}, [])
    zoomed = view.state
    assert zoomed["window"] == pytest.approx([t0, t0 + (t1 - t0) / 10], abs=0.01)
    assert sum(lane["count"] for lane in zoomed["lanes"]) < drawn
    view._on_msg(view, {"cmd": "fit"}, [])
    assert view.state["window"] == s["window"]
    view._on_msg(view, {"cmd": "view", "t0": "x"}, [])  # garbage from a front end changes nothing
    assert view.state["window"] == s["window"]


def test_job_timeline_after_the_end_draws_the_whole_recording():
    job = ExecutionService(trace=True).submit(endless_dag_of(200))
    job.join()
    view = job.timeline()
    assert view.state["live"] is False and view.state["status"] == "completed"
    calls = sum(len(lane["calls"]) for lane in view.state["lanes"])
    assert calls == sum(t.calls for t in job.tasklets)


def endless_dag_of(n: int) -> DAG:
    dag = DAG()
    src = dag.new_vertex("src", items_source(range(n)), 1)
    out = dag.new_vertex("out", collect_sink(), 1)
    dag.edge(Edge.between(src, out))
    return dag


def test_timeline_of_an_ended_job_without_a_recording_says_how_to_get_one():
    job = ExecutionService().submit(endless_dag_of(10))
    job.join()
    with pytest.raises(TraceError, match=r"^job.timeline\(\): job .* has ended \(completed\) without recording "
                                         r"a trace.*ExecutionService\(trace=True\).*while it runs"):
        job.timeline()


def test_bad_arguments_are_refused_naming_them():
    trace = Trace("t", [Lane("w", "cooperative", (), 10, 0)])
    for kwargs, name in (({"window_s": 0}, "window_s"), ({"interval_s": "fast"}, "interval_s"),
                         ({"slow_ms": -1}, "slow_ms")):
        with pytest.raises(JetbenchError, match=name):
            Timeline(trace, **kwargs)
    assert Timeline(trace).state["lanes"][0]["count"] == 0  # an empty recording draws empty lanes


def test_a_live_timeline_records_a_running_job_and_turns_still_when_it_ends():
    job = ExecutionService(cooperative_threads=1).submit(endless_dag())
    try:
        view = job.timeline(window_s=0.5, interval_s=0.05)
        assert all(w.trace_events is not None for w in job.workers)  # it started recording
        assert view.state["live"] is True and view.state["follow"] is True
        deadline = time.monotonic() + 30
        while not any(lane["count"] for lane in view.state["lanes"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        live = view.state
        assert any(lane["count"] for lane in live["lanes"])
        span = live["window"][1] - live["window"][0]
        assert span == pytest.approx(500_000, abs=1)  # the sliding window, in us
        # the browser pans away: the view stops following until Live is pressed
        view._on_msg(view, {"cmd": "view", "t0": 0, "t1": 1000}, [])
        assert view.state["follow"] is False and view.state["window"] == [0.0, 1000.0]
        view._on_msg(view, {"cmd": "follow"}, [])
        assert view.state["follow"] is True
    finally:
        job.cancel()
        with pytest.raises(JobCancelled):
            job.join(timeout=30)
    view.join(30)
    assert not view._thread.is_alive()
    final = view.state
    assert final["live"] is False and final["final"] is True and final["status"] == "cancelled"
    assert final["window"] == final["extent"]
    assert not [t for t in threading.enumerate() if t.name.startswith(f"jetbench.{job.name}.")]


def test_a_live_timeline_stops_the_recording_it_started_when_closed():
    job = ExecutionService(cooperative_threads=1).submit(endless_dag())
    try:
        view = Timeline(job, interval_s=0.05)
        assert all(w.trace_events is not None for w in job.workers)
        view.close()
        assert all(w.trace_events is None for w in job.workers)
    finally:
        job.cancel()
        with pytest.raises(JobCancelled):
            job.join(timeout=30)


def test_the_dashboards_timeline_tab():
    job = ExecutionService(cooperative_threads=1).submit(endless_dag())
    try:
        dash = Dashboard(job, interval_s=0.05)
        assert dash.timeline == {}  # nothing until the tab is opened
        dash._on_msg(dash, {"cmd": "tab", "tab": "timeline"}, [])
        assert dash.timeline["live"] is True and dash.timeline["lanes"]
        dash._on_msg(dash, {"cmd": "timeline", "sub": {"cmd": "view", "t0": 0, "t1": 2000}}, [])
        assert dash.timeline["window"] == [0.0, 2000.0] and dash.timeline["follow"] is False
    finally:
        job.cancel()
        with pytest.raises(JobCancelled):
            job.join(timeout=30)
    dash.join(30)
    assert dash.timeline["live"] is False


def test_the_dashboards_timeline_tab_of_an_ended_job_without_a_recording_says_why():
    job = ExecutionService().submit(endless_dag_of(10))
    job.join()
    dash = Dashboard(job)
    dash._on_msg(dash, {"cmd": "tab", "tab": "timeline"}, [])
    assert "without recording a trace" in dash.timeline["error"]


def test_a_step_draws_in_call_order():
    from jetbench.core.clock import MockClock

    job = ExecutionService(step=True, clock=MockClock()).submit(endless_dag_of(5))
    report = job.step()
    assert {e.duration_ns for e in report.trace.events} == {0}  # the mock clock stood still
    view = report.timeline()
    (lane,) = view.state["lanes"]
    assert [(c[0], c[1]) for c in lane["calls"]] == [(0.0, 10.0), (10.0, 10.0)]
    assert [view.state["tasklets"][c[4]] for c in lane["calls"]] == ["src#0", "out#0"]
    assert sorted(job.join(timeout=30)) == [0, 1, 2, 3, 4]
