"""plot_metrics and metrics_frame: the views for when no live front end exists (nbclient, nbconvert)."""

from __future__ import annotations

import io

import pandas as pd
from matplotlib.figure import Figure

from jetbench import DAG, Edge, ExecutionService
from jetbench.notebook import Dashboard
from jetbench.notebook.plots import plot_metrics, series_from_records
from jetbench.processors import collect_sink, map_processor
from jetbench.processors.generator_source import generator_source


def paced_dag(rate: float = 5000, count: int = 1500) -> DAG:
    dag = DAG()
    src = dag.new_vertex("source", generator_source(rate, timestamped=False, count=count), local_parallelism=1)
    work = dag.new_vertex("work", map_processor(lambda x: x + 1), local_parallelism=2)
    out = dag.new_vertex("sink", collect_sink(), local_parallelism=1)
    dag.edge(Edge.between(src, work)).edge(Edge.between(work, out))
    return dag


def renders(fig: Figure) -> bool:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.tell() > 1000


def titles(fig: Figure) -> list[str]:
    return [ax.get_title() for ax in fig.axes]


def test_plot_from_the_service_sampler():
    job = ExecutionService(cooperative_threads=2, metrics_interval_s=0.05).submit(paced_dag())
    job.join()
    fig = job.plot_metrics()
    assert isinstance(fig, Figure) and renders(fig)
    assert titles(fig) == ["CPU % of one core", "items/s per vertex", "queue fill per edge",
                           "worker iterations/s"]
    cpu, rate, fill, _iter = fig.axes
    assert {line.get_label() for line in cpu.get_lines()} == {"job workers (sum)", "w0", "w1"}
    assert {line.get_label() for line in rate.get_lines()} == {"source", "work", "sink"}
    assert [line.get_label() for line in fill.get_lines()] == ["source → work #0", "work → sink #0"]
    assert len(cpu.get_lines()[0].get_xdata()) >= 4  # points over time


def test_series_from_records_turns_counters_into_rates():
    job = ExecutionService(metrics_interval_s=0.05).submit(paced_dag(rate=4000, count=1600))
    job.join()
    s = series_from_records(job.sampler.records)
    assert len(s.t) >= 4 and s.t == sorted(s.t)
    middle = s.rate["source"][1:-1]
    assert middle and 2000 < sum(middle) / len(middle) < 6000  # ~4000 items/s
    assert list(s.fill) == ["source → work #0", "work → sink #0"]
    assert all(len(vs) == len(s.t) and 0 <= v <= 1 for vs in s.fill.values() for v in vs)


def test_plot_from_a_dashboard_history_includes_process_cpu():
    job = ExecutionService().submit(paced_dag(count=1500))
    dash = Dashboard(job, interval_s=0.05)
    job.join()
    dash.join(2)
    for fig in (job.plot_metrics(), plot_metrics(dash)):
        assert renders(fig)
        labels = {line.get_label() for line in fig.axes[0].get_lines()}
        assert labels == {"process", "w0"}
        assert {line.get_label() for line in fig.axes[2].get_lines()} == {"source → work #0", "work → sink #0"}
        assert "dashboard history" in fig.get_suptitle()


def test_plot_of_an_unrecorded_job_is_one_snapshot():
    job = ExecutionService().submit(paced_dag(count=200))
    job.join()
    fig = job.plot_metrics()
    assert renders(fig) and titles(fig) == ["items per vertex", "CPU seconds per worker"]


def test_metrics_frame_snapshot_and_series():
    job = ExecutionService().submit(paced_dag(count=200))
    job.join()
    frame = job.metrics_frame()
    assert isinstance(frame, pd.DataFrame)
    assert frame["vertex"].tolist() == ["source", "work", "work", "sink"]
    assert frame.loc[frame.vertex == "sink", "received_count"].item() == 200
    edges = job.metrics_frame(kind="queue")  # one snapshot: a row per edge
    assert edges[["source", "destination", "ordinal"]].values.tolist() == [["source", "work", 0], ["work", "sink", 0]]

    job = ExecutionService(metrics_interval_s=0.05).submit(paced_dag(count=1000))
    job.join()
    series = job.metrics_frame()
    assert series["t"].nunique() >= 3 and len(series) == 4 * series["t"].nunique()
    workers = job.metrics_frame(kind="worker")
    assert {"cpu_time_s", "iteration_count", "worker_kind"} <= set(workers.columns)
    queues = job.metrics_frame(kind="queue")  # per-edge queue fill over time
    assert len(queues) == 2 * series["t"].nunique()
    assert {"t", "edge", "source", "destination", "ordinal", "size", "capacity", "fill"} <= set(queues.columns)
    last = queues[queues.t == queues.t.max()]
    assert last["edge"].tolist() == ["source → work #0", "work → sink #0"]
    assert last["capacity"].tolist() == [2 * 1024, 2 * 1024] and last["fill"].tolist() == [0.0, 0.0]
