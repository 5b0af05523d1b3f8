"""The dashboard's Python side without a browser: state, throttling, bounds, controls, threads."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading
import time

import pytest

from jetbench import DAG, Edge, ExecutionService, JobCancelled, JobError, Processor
from jetbench.core.clock import MockClock
from jetbench.core.job import JobStatus
from jetbench.core.job_config import JobConfig
from jetbench.core.metrics import InboundBarrier
from jetbench.notebook import Dashboard
from jetbench.notebook.dashboard_model import CPU_HISTORY, QUEUE_HISTORY, DashboardModel, Timeline
from jetbench.notebook.headless import recording_comms
from jetbench.processors import (
    aggregate_by_key,
    collect_sink,
    counting,
    items_source,
    map_processor,
    noop_sink,
)
from jetbench.processors.generator_source import generator_source


def paced_dag(rate: float = 4000, count: int | None = 2000, fail_at: int | None = None) -> DAG:
    """source (``rate`` items/s) -> map x2 -> collect: a job that runs ``count / rate`` s."""

    def check(x):
        if fail_at is not None and x >= fail_at:
            raise ValueError(f"bad item {x}")
        return x

    dag = DAG()
    src = dag.new_vertex("source", generator_source(rate, timestamped=False, count=count), local_parallelism=1)
    work = dag.new_vertex("work", map_processor(check), local_parallelism=2)
    out = dag.new_vertex("sink", collect_sink(), local_parallelism=1)
    dag.edge(Edge.between(src, work)).edge(Edge.between(work, out))
    return dag


def wide_dag(vertices: int, parallelism: int) -> DAG:
    dag = DAG()
    prev = dag.new_vertex("source", items_source(range(100)), local_parallelism=1)
    for i in range(vertices - 2):
        v = dag.new_vertex(f"map-{i}", map_processor(lambda x: x), local_parallelism=parallelism)
        dag.edge(Edge.between(prev, v))
        prev = v
    sink = dag.new_vertex("sink", noop_sink(), local_parallelism=1)
    dag.edge(Edge.between(prev, sink))
    return dag


def thread_names() -> set[str]:
    return {t.name for t in threading.enumerate()}


def send_from_front_end(dash: Dashboard, data: dict) -> None:
    """What ipywidgets does with a comm message from the browser."""
    dash._handle_msg({"content": {"data": data}, "buffers": []})


# ------------------------------------------------------------------------------ state


def test_state_while_running_and_frozen_final_state():
    service = ExecutionService(cooperative_threads=2)
    job = service.submit(paced_dag(rate=4000, count=2400), name="paced")
    dash = Dashboard(job, interval_s=0.05)
    assert dash.is_sampling and "jetbench.paced.dashboard" in thread_names()
    time.sleep(0.3)
    s = dash.state
    assert s["status"] == "running" and s["final"] is False and s["error"] is None
    assert s["job"] == "paced" and s["tasklet_count"] == 4 and s["vertex_count"] == 3
    assert [(r["vertex"], r["instance"]) for r in s["rows"]] == [
        ("source", "0"), ("work", "0"), ("work", "1"), ("sink", "0")
    ]
    assert {r["worker"] for r in s["rows"]} <= {"w0", "w1"}
    source = s["rows"][0]
    assert source["out"] > 0 and 1000 < source["rate"] < 10_000  # ~4000 items/s
    assert {"busy", "slow", "bp", "fill", "state"} <= source.keys()
    assert [w["name"] for w in s["workers"]] == ["w0", "w1"]
    assert all(w["iter_rate"] > 0 for w in s["workers"])
    running_tasklets = {w["name"]: w["tasklets"] for w in s["workers"]}
    assert sum(running_tasklets.values()) == 4 and min(running_tasklets.values()) >= 1
    cpu = s["cpu"]
    assert [x["name"] for x in cpu["series"]] == ["process", "w0", "w1"]
    assert len(cpu["t"]) >= 3 and all(len(x["values"]) == len(cpu["t"]) for x in cpu["series"])
    assert [q["edge"] for q in s["queues"]] == ["source → work #0", "work → sink #0"]
    q = s["queues"][1]
    assert (q["source"], q["destination"], q["ordinal"], q["capacity"]) == ("work", "sink", 0, 2 * 1024)
    assert 0 <= q["fill"] <= 1 and 1 <= len(q["hist"]) <= QUEUE_HISTORY
    assert s["idle"] == {"min_idle_us": 25.0, "max_idle_us": 500.0, "strategy": "backoff",
                         "strategies": ["backoff", "timer"]}
    seq_running = s["seq"]

    assert sorted(job.join()) == list(range(2400))
    dash.join(2)
    assert not dash.is_sampling
    final = dash.state
    assert final["final"] is True and final["status"] == "completed" and final["seq"] > seq_running
    assert final["elapsed_s"] == pytest.approx(job.elapsed, abs=0.01)
    assert {r["state"] for r in final["rows"]} == {"done"}
    # the workers let go of their tasklets as they finished: the table still says how many each ran
    assert {w["name"]: w["tasklets"] for w in final["workers"]} == running_tasklets
    assert all(stats.tasklet_count == 0 for stats in job.metrics().workers)
    assert final["rows"][-1]["in"] == 2400 and final["totals"]["sinks_in"] == 2400
    ticks = dash.ticks
    time.sleep(0.15)
    assert dash.ticks == ticks and dash.state == final  # frozen
    assert final["cpu_note"] is None  # sampled while it ran: the timeline is there


def test_dashboard_of_a_finished_job_is_final_at_once_without_a_thread():
    job = ExecutionService().submit(wide_dag(4, 1))
    job.join()
    dash = job.dashboard()  # through the registered view
    assert isinstance(dash, Dashboard)
    assert not dash.is_sampling and dash.ticks == 1
    assert f"jetbench.{job.name}.dashboard" not in thread_names()
    assert dash.state["final"] is True and dash.state["status"] == "completed"
    # an empty chart says why, and how to get one
    assert dash.state["cpu_note"].startswith("No CPU timeline: the job ran ")
    assert "and had ended before this dashboard was made" in dash.state["cpu_note"]
    assert "metrics_interval_s" in dash.state["cpu_note"]


def test_the_static_snapshot_holds_the_final_figures():
    job = ExecutionService().submit(wide_dag(4, 1))
    job.join()
    html = job.dashboard().snapshot_html()
    assert f"jetbench · {job.name}</b> · completed" in html
    totals = job.dashboard().state["totals"]
    assert f"sources emitted {totals['sources_out']:,}" in html and f"sinks received {totals['sinks_in']:,}" in html
    assert html.count("<tr>") == 1 + len({t.vertex for t in job.metrics().tasklets})  # a row per vertex


def test_failure_shows_error_and_vertex():
    job = ExecutionService().submit(paced_dag(rate=5000, count=None, fail_at=500), name="bad")
    dash = Dashboard(job, interval_s=0.05)
    with pytest.raises(JobError):
        job.join(5)
    dash.join(2)
    s = dash.state
    assert s["status"] == "failed" and s["final"] is True
    err = s["error"]
    assert err["vertex"] == "work" and err["instance"] in (0, 1) and err["type"] == "JobError"
    assert "bad item" in err["message"] and err["cause"].startswith("ValueError: bad item")


# ------------------------------------------------------------------------------ throttling, size


def test_one_message_per_tick_at_the_configured_rate():
    with recording_comms() as _comms:
        job = ExecutionService().submit(paced_dag(rate=2000, count=1600))  # ~0.8 s
        dash = Dashboard(job, interval_s=0.1)
    job.join()
    dash.join(2)
    comm = dash.comm
    # state updates only, one per tick (the first at creation, the last when the job ended)
    assert comm.updates == {"state": dash.ticks}
    assert comm.count == dash.ticks
    # the first tick at creation and the last when the job ended; in between never more than one
    # per interval (a loaded machine only makes them fewer, so no lower bound on the count)
    assert 2 <= dash.ticks <= job.elapsed / 0.1 + 3, (dash.ticks, job.elapsed)
    assert comm.max_bytes < 16_000


def test_interval_is_bounded():
    job = ExecutionService().submit(wide_dag(3, 1))
    job.join()
    with pytest.raises(ValueError, match="interval_s"):
        Dashboard(job, interval_s=0.001)


@pytest.mark.parametrize("vertices,parallelism", [(12, 8), (60, 2), (100, 6)])
def test_state_size_is_bounded_however_many_tasklets(vertices, parallelism):
    job = ExecutionService(cooperative_threads=2).submit(wide_dag(vertices, parallelism))
    job.join()
    clock = MockClock(step=0.1).monotonic  # ticks 0.1 s apart, without waiting for them
    model = DashboardModel(job, max_rows=40, clock=clock)
    snapshot = job.metrics()
    for i in range(2 * CPU_HISTORY + 10):  # long enough for every history to be full
        state = model.update(metrics=dataclasses.replace(snapshot, elapsed_s=0.1 * (i + 1)))
    tasklets = 2 + (vertices - 2) * parallelism
    assert state["tasklet_count"] == tasklets
    assert state["aggregated"] is True and len(state["rows"]) <= 40
    assert len(state["queues"]) == min(vertices - 1, 40) and state["queues_hidden"] == max(vertices - 1 - 40, 0)
    assert all(len(q["hist"]) == QUEUE_HISTORY for q in state["queues"])
    assert CPU_HISTORY <= len(state["cpu"]["t"]) <= 2 * CPU_HISTORY
    assert len(json.dumps(state)) < 64_000


def test_rows_aggregate_per_vertex_above_max_rows():
    job = ExecutionService(cooperative_threads=2).submit(wide_dag(5, 4))  # 1 + 3*4 + 1 = 14 tasklets
    job.join()
    per_tasklet = DashboardModel(job, max_rows=20).update(final=True)
    assert per_tasklet["aggregated"] is False and len(per_tasklet["rows"]) == 14
    per_vertex = DashboardModel(job, max_rows=10).update(final=True)
    assert per_vertex["aggregated"] is True
    rows = {r["vertex"]: r for r in per_vertex["rows"]}
    assert list(rows) == ["source", "map-0", "map-1", "map-2", "sink"]
    assert rows["map-1"]["n"] == 4 and rows["map-1"]["instance"] == "×4"
    assert rows["map-1"]["in"] == 100 and rows["map-1"]["out"] == 100
    assert rows["map-1"]["state"] == "done"
    assert sum(r["in"] for r in per_vertex["rows"]) == sum(r["in"] for r in per_tasklet["rows"])
    # more vertices than rows: the tail is folded into one row, counts preserved
    folded = DashboardModel(job, max_rows=3).update(final=True)
    assert [r["vertex"] for r in folded["rows"]] == ["source", "map-0", "… 3 more vertices"]
    assert folded["rows"][-1]["n"] == 9
    assert sum(r["in"] for r in folded["rows"]) == sum(r["in"] for r in per_tasklet["rows"])


def test_queue_rows_are_per_edge_and_show_which_edge_fills():
    """Two edges into one blocked sink: the busy edge fills, the short one does not, and the
    sparkline of each edge follows its own fill."""
    gate = threading.Event()

    class BlockedSink(Processor):
        is_cooperative = False

        def process(self, ordinal, inbox):
            gate.wait(10)
            inbox.clear()

    dag = DAG()
    busy = dag.new_vertex("busy", items_source(range(5000)), local_parallelism=1)
    short = dag.new_vertex("short", items_source(range(10)), local_parallelism=1)
    sink = dag.new_vertex("sink", BlockedSink, local_parallelism=1)
    dag.edge(Edge.from_(busy).to(sink, 0).queue_size(64))
    dag.edge(Edge.from_(short).to(sink, 1).priority(1).queue_size(64))  # drained after ordinal 0
    job = ExecutionService().submit(dag)
    clock = MockClock(step=0.1).monotonic
    model = DashboardModel(job, clock=clock)
    try:
        model.update()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            time.sleep(0.03)  # ticks >= 20 ms apart go into the history
            state = model.update()
            fills = {q["edge"]: q["fill"] for q in state["queues"]}
            if fills.get("busy → sink #0") == 1.0 and fills.get("short → sink #1", 0) > 0.1:
                break
        assert [(q["source"], q["destination"], q["ordinal"]) for q in state["queues"]] == [
            ("busy", "sink", 0), ("short", "sink", 1)
        ]
        busy_q, short_q = state["queues"]
        assert busy_q["fill"] == 1.0 and busy_q["size"] == busy_q["capacity"] == 64
        assert short_q["size"] == 11 and short_q["fill"] == round(11 / 64, 3)  # 10 items and DONE
        assert busy_q["hist"][-1] == 1.0 and short_q["hist"][-1] == short_q["fill"]
        assert len(busy_q["hist"]) == len(short_q["hist"]) == model.seq
        assert model.history[-1]["fill"] == {"busy → sink #0": 1.0, "short → sink #1": short_q["fill"]}
    finally:
        gate.set()
    job.join(10)
    final = model.update(final=True)
    assert [q["fill"] for q in final["queues"]] == [0.0, 0.0]


def test_cpu_timeline_spans_the_whole_run_with_bounded_points():
    tl = Timeline(["process", "w0"], size=10)
    for i in range(1000):
        tl.add(i * 0.1, {"process": 50.0, "w0": 25.0})
    state = tl.as_state()
    assert 10 <= len(state["t"]) <= 20
    assert state["t"][-1] > 90  # recent
    assert state["t"][0] < 10  # and early points survive, merged
    assert set(state["series"][0]["values"]) == {50.0}


# ------------------------------------------------------------------------------ controls


def test_idle_controls_apply_to_the_running_service():
    service = ExecutionService(cooperative_threads=2, min_idle_us=25, max_idle_us=500)
    job = service.submit(paced_dag(rate=2000, count=None))
    dash = Dashboard(job, interval_s=0.05)
    try:
        assert (dash.min_idle_us, dash.max_idle_us) == (25, 500)
        dash.min_idle_us = 1000  # from Python: max is raised to the min, as in Jet
        assert (service.idle.min_idle_us, service.idle.max_idle_us) == (1000, 1000)
        assert dash.max_idle_us == 1000
        assert dash.control_note == "max idle raised to 1000 µs: it is never below min idle"
        # from the browser: the same trait update ipywidgets receives over the comm
        send_from_front_end(dash, {"method": "update", "state": {"max_idle_us": 8000}, "buffer_paths": []})
        assert service.idle.max_idle_us == 8000
        send_from_front_end(dash, {"method": "custom", "content": {"cmd": "set_idle", "min_idle_us": 50}})
        assert (service.idle.min_idle_us, service.idle.max_idle_us) == (50, 8000)
        assert dash.control_note == ""  # the max stayed as it was
        # the running workers park with the service's (shared) config
        assert all(w.idler.config is service.idle for w in job.workers)
        # a bad value is refused, shown, and the traits show what is applied
        dash.min_idle_us = -5
        assert "min_idle_us" in dash.control_error and service.idle.min_idle_us == 50 and dash.min_idle_us == 50
        # and the next tick shows the applied bounds
        seq = dash.state["seq"]
        deadline = time.monotonic() + 2
        while dash.state["seq"] == seq and time.monotonic() < deadline:
            time.sleep(0.01)
        assert dash.state["idle"]["min_idle_us"] == 50 and dash.state["idle"]["max_idle_us"] == 8000
    finally:
        job.cancel()
        with pytest.raises(JobCancelled):
            job.join(5)
        dash.join(2)


def test_cancel_from_the_front_end_ends_job_and_threads():
    job = ExecutionService(cooperative_threads=2).submit(paced_dag(rate=2000, count=None), name="endless")
    dash = Dashboard(job, interval_s=0.05)
    time.sleep(0.1)
    send_from_front_end(dash, {"method": "custom", "content": {"cmd": "cancel"}})
    with pytest.raises(JobCancelled):
        job.join(5)
    dash.join(2)
    assert dash.state["status"] == "cancelled" and dash.state["final"] is True
    assert dash.state["error"]["type"] == "JobCancelled"
    assert not [t for t in threading.enumerate() if t.name.startswith("jetbench.endless")]


# ------------------------------------------------------------------------------ fault tolerance


def keyed_count_dag(rate: float, count: int) -> DAG:
    """source (``rate`` items/s) -> count per key (x2, partitioned) -> collect: state to snapshot."""
    dag = DAG()
    src = dag.new_vertex("source", generator_source(rate, timestamped=False, count=count), local_parallelism=1)
    agg = dag.new_vertex("count", aggregate_by_key(_mod7, counting()), local_parallelism=2)
    out = dag.new_vertex("sink", collect_sink(), local_parallelism=1)
    dag.edge(Edge.between(src, agg).partitioned(_mod7)).edge(Edge.between(agg, out))
    return dag


def _mod7(x: int) -> int:
    return x % 7


def _wait_until(predicate, timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _acks(comm) -> list[int]:
    return [m["data"]["content"]["ack"] for m in comm.messages
            if m["data"].get("method") == "custom" and "ack" in (m["data"].get("content") or {})]


def test_state_carries_the_snapshot_figures_of_an_exactly_once_job(tmp_path):
    config = JobConfig("exactly_once", snapshot_interval_ms=20, snapshot_store=tmp_path / "s.sqlite")
    job = ExecutionService(cooperative_threads=2).submit(keyed_count_dag(5000, 6000), name="ft", config=config)
    dash = Dashboard(job, interval_s=0.05)
    _wait_until(lambda: (dash.state.get("snapshots") or {}).get("taken", 0) >= 2, what="two snapshots in the state")
    s = dash.state
    ft = s["snapshots"]
    assert ft["guarantee"] == "exactly_once" and ft["failed"] == 0 and ft["restarts"] == 0
    assert ft["last_id"] >= 2 and ft["last_size_bytes"] > 0 and ft["last_duration_ms"] >= 0
    assert ft["last_age_s"] is not None and 0 <= ft["last_age_s"] < 5
    figures = job.metrics().snapshots
    assert figures is not None and figures.last_snapshot_id >= ft["last_id"]
    assert s["lifecycle"] == {"can_suspend": True, "can_resume": False}
    json.dumps(s, allow_nan=False)  # what the comm sends
    assert len(dict(job.join(30))) == 7
    dash.join(2)
    final = dash.state
    assert final["final"] and final["snapshots"]["guarantee"] == "exactly_once"
    assert final["lifecycle"] == {"can_suspend": False, "can_resume": False}


def test_a_job_without_a_guarantee_shows_no_snapshots_and_refuses_suspend():
    with recording_comms(keep=True):
        job = ExecutionService().submit(paced_dag(rate=2000, count=None), name="plain")
        dash = Dashboard(job, interval_s=0.05)
    assert dash.state["snapshots"] is None
    assert dash.state["lifecycle"] == {"can_suspend": False, "can_resume": False}
    try:
        send_from_front_end(dash, {"method": "custom", "content": {"cmd": "suspend", "id": 7}})
        assert "processing_guarantee" in dash.control_error and not job.is_done
        assert job.status.value == "running" and _acks(dash.comm) == [7]
    finally:
        job.cancel()
        with pytest.raises(JobCancelled):
            job.join(5)
        dash.join(2)


def test_suspend_and_resume_from_the_front_end(tmp_path):
    config = JobConfig("exactly_once", snapshot_interval_ms=20, snapshot_store=tmp_path / "s.sqlite")
    with recording_comms(keep=True):
        job = ExecutionService(cooperative_threads=2).submit(keyed_count_dag(6000, 9000), name="pausable",
                                                             config=config)
        dash = Dashboard(job, interval_s=0.05)
    try:
        _suspend_and_resume(job, dash, dash.comm)
    finally:
        job.cancel()  # after a failure only: a completed job ignores it
        dash.join(2)
    assert not [t for t in threading.enumerate() if t.name.startswith("jetbench.pausable")]


def _suspend_and_resume(job, dash, comm) -> None:
    _wait_until(lambda: job.last_snapshot is not None, what="a first snapshot")
    send_from_front_end(dash, {"method": "custom", "content": {"cmd": "suspend", "id": 1}})
    assert dash.control_error == "" and _acks(comm) == [1]
    assert job.status is JobStatus.SUSPENDED and not job.is_done
    assert not [t for t in threading.enumerate() if t.name.startswith("jetbench.pausable") and "dashboard" not in t.name]
    _wait_until(lambda: dash.state["status"] == "suspended", what="the suspended status in the state")
    s = dash.state
    assert s["final"] is False and s["lifecycle"] == {"can_suspend": False, "can_resume": True}
    assert {r["state"] for r in s["rows"]} == {"suspended"}
    taken = s["snapshots"]["taken"]
    assert taken >= 2 and s["snapshots"]["last_id"] == job.snapshot_statistics().last_snapshot_id
    # suspending again is refused with the reason, and acknowledged
    send_from_front_end(dash, {"method": "custom", "content": {"cmd": "suspend", "id": 2}})
    assert "suspended" in dash.control_error and _acks(comm) == [1, 2]
    time.sleep(0.15)  # the sampler goes on; nothing of the job runs meanwhile
    assert dash.is_sampling and dash.state["snapshots"]["taken"] == taken
    send_from_front_end(dash, {"method": "custom", "content": {"cmd": "resume", "id": 3}})
    assert dash.control_error == "" and _acks(comm) == [1, 2, 3]
    assert job.status is JobStatus.RUNNING
    _wait_until(lambda: dash.state["status"] == "running", what="the running status again")
    assert dash.state["lifecycle"] == {"can_suspend": True, "can_resume": False}
    assert dash.state["snapshots"]["restored_from"] == job.restored_from > 0
    result = dict(job.join(30))
    assert result == {k: len(range(k, 9000, 7)) for k in range(7)}  # exactly once through the suspension
    dash.join(2)
    assert dash.state["status"] == "completed" and dash.state["final"] is True


def test_stop_ends_the_sampler_while_the_job_goes_on():
    job = ExecutionService().submit(paced_dag(rate=2000, count=None))
    dash = Dashboard(job, interval_s=0.05)
    dash.close()
    assert not dash.is_sampling and not job.is_done
    job.cancel()
    with pytest.raises(JobCancelled):
        job.join(5)


def test_side_panel_shows_in_a_sidecar_only(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj._repr_mimebundle_()))
    job = ExecutionService().submit(wide_dag(3, 1))
    job.join()
    dash = job.dashboard(side=True)
    assert type(dash.sidecar).__name__ == "Sidecar"
    assert "application/vnd.jupyter.widget-view+json" in shown[0][0]  # the widget, in the panel
    assert dash._repr_mimebundle_() == {
        "text/plain": f"jetbench dashboard of job {job.name!r} (in the side panel)"
    }


# ------------------------------------------------------------------------------ layering, assets


def test_engine_and_plots_do_not_import_widget_libraries():
    code = (
        "import sys, jetbench, jetbench.core, jetbench.pipeline, jetbench.processors, jetbench.frames, "
        "jetbench.notebook, jetbench.notebook.plots, jetbench.notebook.dashboard_model\n"
        "bad = sorted(m for m in ('ipywidgets', 'anywidget') if m in sys.modules)\n"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_front_end_assets_come_from_the_package_or_the_checkout(tmp_path, monkeypatch):
    from jetbench.notebook import _assets

    src = tmp_path / "src"
    built = tmp_path / "built"
    src.mkdir()
    built.mkdir()
    monkeypatch.setattr(_assets, "SOURCES", src)
    monkeypatch.setattr(_assets, "BUILT", built)
    with pytest.raises(FileNotFoundError, match="build_widgets.sh"):
        _assets.asset_path("dashboard.js")
    (src / "dashboard.js").write_text("source")
    assert _assets.asset_text("dashboard.js") == "source"  # dev checkout, nothing built
    (built / "dashboard.js").write_text("built")
    assert _assets.asset_text("dashboard.js") == "built"
    assert "export default" in Dashboard._esm and ".jetbench-dashboard" in Dashboard._css


def test_sampler_spaces_ticks_out_to_stay_within_its_cpu_budget():
    job = ExecutionService().submit(paced_dag(rate=2000, count=None))
    dash = Dashboard(job, interval_s=0.05, cpu_budget=1e-4)  # any tick is over this budget
    try:
        deadline = time.monotonic() + 2
        while dash.effective_interval_s == 0.05 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert dash.effective_interval_s > 0.05
    finally:
        job.cancel()
        with pytest.raises(JobCancelled):
            job.join(5)
        dash.join(2)


def test_strategy_control_goes_to_a_service_that_can_switch():
    service = ExecutionService()
    job = service.submit(paced_dag(rate=2000, count=None))
    dash = Dashboard(job, interval_s=0.05)
    try:
        assert dash.state["idle"]["strategy"] == "backoff"
        if not hasattr(service, "set_idle_strategy"):  # today's engine: shown, not switchable
            assert "strategies" not in dash.state["idle"]
            send_from_front_end(dash, {"method": "custom", "content": {"cmd": "set_strategy", "strategy": "timer"}})
            assert "cannot change its idle strategy" in dash.control_error
        switched = []
        service.set_idle_strategy = switched.append  # an engine that can (see the report to the core)
        deadline = time.monotonic() + 2
        while "strategies" not in dash.state["idle"] and time.monotonic() < deadline:
            time.sleep(0.01)  # the next tick shows the selector
        assert "backoff" in dash.state["idle"]["strategies"]
        send_from_front_end(dash, {"method": "custom", "content": {"cmd": "set_strategy", "strategy": "timer"}})
        assert switched == ["timer"] and dash.control_error == ""
    finally:
        job.cancel()
        with pytest.raises(JobCancelled):
            job.join(5)
        dash.join(2)


def test_bench_dashboard_prints_ratio_and_sampler_cpu():
    # enough items for the job to outlast a few of the sampler's 10 Hz ticks (200k items now run
    # in about 25 ms, under one tick, which left the sampler's CPU at 0)
    done = subprocess.run(
        [sys.executable, "-m", "jetbench", "bench", "dashboard", "--items", "3000000", "--repeat", "1", "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["benchmark"] == "dashboard" and report["results_equal"] is True
    assert report["ratio"] == pytest.approx(report["jetbench_items_per_s"] / report["baseline_items_per_s"])
    assert 0 < report["sampler_cpu_percent"] < 50 and report["hz"] == 10


def test_state_shows_where_the_barrier_in_flight_is_per_edge_and_tasklet():
    """Snapshot 4 in flight (the counters a sampler would read, set by hand): the edge into the
    count has its barrier held on one instance and still queued for the other, the sink's edge
    has none yet; the rows say where each tasklet is, folded per vertex above ``max_rows``."""
    job = ExecutionService().submit(keyed_count_dag(50_000, 200))
    job.join(10)
    m = job.metrics()
    where = {("source", 0): ("saved", 4, ()), ("count", 0): ("saving", 4, (InboundBarrier(0, 4, 0, 1, 0),)),
             ("count", 1): ("awaiting barrier", 4, (InboundBarrier(0, 4, 1, 0, 0),)),
             ("sink", 0): ("awaiting barrier", 4, (InboundBarrier(0, 4, 0, 0, 0),))}
    tasklets = tuple(dataclasses.replace(t, snapshot_state=where[t.vertex, t.index][0], snapshot_id=4,
                                         inbound_barriers=where[t.vertex, t.index][2]) for t in m.tasklets)
    in_flight = dataclasses.replace(m, tasklets=tasklets)
    assert in_flight.barrier_in_flight() == 4
    state = DashboardModel(job).update(metrics=in_flight)
    assert state["barrier_in_flight"] == 4
    assert {q["edge"]: q["barrier"] for q in state["queues"]} == {
        "source → count #0": {"id": 4, "state": "held", "in_queue": 1, "held": 1, "passed": 0},
        "count → sink #0": None}
    assert [(r["vertex"], r["snap"], r["snap_id"]) for r in state["rows"]] == [
        ("source", "saved", 4), ("count", "saving", 4), ("count", "awaiting barrier", 4),
        ("sink", "awaiting barrier", 4)]
    json.dumps(state, allow_nan=False)
    folded = DashboardModel(job, max_rows=3).update(metrics=in_flight)
    assert [(r["vertex"], r["snap"]) for r in folded["rows"]] == [
        ("source", "saved"), ("count", "saving awaiting barrier"), ("sink", "awaiting barrier")]
    # once the count has forwarded it, the source's edge reads passed; the final state shows none
    passed = dataclasses.replace(in_flight, tasklets=tuple(
        dataclasses.replace(t, snapshot_state="saved", inbound_barriers=(InboundBarrier(0, 4, 0, 0, 1),))
        if t.vertex == "count" else t for t in tasklets))
    assert [q.barrier for q in passed.by_edge()] == ["passed", ""]
    final = DashboardModel(job).update(final=True)
    assert final["barrier_in_flight"] == 0 and all(q["barrier"] is None for q in final["queues"])
    assert all(r["snap"] == "" for r in final["rows"])
