"""End-to-end jobs through `jetbench.sources` / `jetbench.sinks` descriptors, on hand-built DAGs."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest

from jetbench import DAG, Edge, JetbenchError, JobCancelled, JobError, sinks, sources
from jetbench.pipeline.connectors import Sink, Source
from jetbench.processors import map_processor


def linear_dag(source: Source, sink: Sink, *middle) -> DAG:
    """source -> middle suppliers... -> sink, unicast edges, the descriptors' parallelism."""
    dag = DAG()
    prev = dag.new_vertex("source", source.supplier, source.local_parallelism)
    for i, supplier in enumerate(middle):
        v = dag.new_vertex(f"step-{i}", supplier)
        dag.edge(Edge.between(prev, v))
        prev = v
    dag.edge(Edge.between(prev, dag.new_vertex("sink", sink.supplier, sink.local_parallelism)))
    return dag


# -- descriptors ------------------------------------------------------------------------------


def test_descriptors():
    assert sources.items([1], name="nums").name == "nums"
    gen = sources.generator(100)
    assert (gen.timestamped, gen.streaming) == (True, True)
    gen = sources.generator(100, timestamped=False, count=5)
    assert (gen.timestamped, gen.streaming) == (False, False)
    ts = sources.test_stream([(1, "a")])
    assert (ts.local_parallelism, ts.timestamped, ts.streaming) == (1, True, False)
    lat = sinks.latency()
    assert (lat.accepts_timestamped, lat.requires_timestamped) == (True, True)
    for sink in (sinks.collect(), sinks.to_dict(), sinks.callback(print), sinks.pandas(), sinks.noop()):
        assert isinstance(sink, Sink) and not sink.accepts_timestamped


# -- sources ----------------------------------------------------------------------------------


def test_items_to_collect(service):
    assert sorted(service.run(linear_dag(sources.items(range(1000)), sinks.collect()), timeout=10)) == list(range(1000))


def test_test_stream_keeps_order(service):
    events = [(ts, f"e{ts}") for ts in (5, 1, 9, 3, 7)] * 300
    result = service.run(linear_dag(sources.test_stream(events), sinks.collect()), timeout=10)
    assert result == events


def test_files_round_trip(service, tmp_path, threads):
    src_dir, out_dir = tmp_path / "in", tmp_path / "out"
    src_dir.mkdir()
    expected = []
    for f in range(5):
        lines = [f"file {f} line {i}" for i in range(f * 700)]
        (src_dir / f"{f}.txt").write_text("".join(line + "\n" for line in lines))
        expected += lines
    job = service.submit(linear_dag(sources.files(str(src_dir / "*.txt")), sinks.files(out_dir)))
    job.join(timeout=10)
    parts = sorted(p.name for p in out_dir.iterdir())
    assert parts == [f"part-{k:05d}" for k in range(threads)]
    written = [line for p in parts for line in (out_dir / p).read_text().splitlines()]
    assert sorted(written) == sorted(expected)
    blocking = [w for w in job.metrics().workers if w.kind == "blocking"]
    assert len(blocking) == 2 * threads  # the files source and sink run on their own threads
    # ... and back through the files source
    again = service.run(linear_dag(sources.files(str(out_dir / "part-*")), sinks.collect()), timeout=10)
    assert sorted(again) == sorted(expected)


def test_files_source_without_match(tmp_path):
    with pytest.raises(JetbenchError, match="no file matches"):
        sources.files(str(tmp_path / "nothing-here-*.csv"))


def test_files_source_with_bad_encoding_fails_the_job(service, tmp_path):
    (tmp_path / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    dag = linear_dag(sources.files(str(tmp_path / "*.txt")), sinks.collect())
    with pytest.raises(JobError, match="UnicodeDecodeError"):
        service.run(dag, timeout=10)
    assert service.run(linear_dag(sources.files(str(tmp_path / "*.txt"), encoding="latin-1"),
                                  sinks.collect()), timeout=10) == ["café"]


def test_generator_keeps_its_rate_and_lets_the_worker_idle(service):
    dag = linear_dag(sources.generator(2000, timestamped=False, count=1000), sinks.collect())
    start = time.monotonic()
    job = service.submit(dag)
    result = job.join(timeout=10)
    elapsed = time.monotonic() - start
    assert sorted(result) == list(range(1000))
    # item i is due i / 2000 s after the start and never emitted before: the last one (999)
    # cannot be out before 0.4995 s (a loaded machine can only make it later)
    assert elapsed >= 999 / 2000
    assert job.metrics().workers[0].idle_count > 0


def test_generator_item_fn_and_timestamps(service):
    before = time.time_ns() / 1e6
    dag = linear_dag(sources.generator(1e6, item_fn=lambda s: s * s, count=500), sinks.collect())
    result = service.run(dag, timeout=10)
    after = time.time_ns() / 1e6
    assert sorted(item for _, item in result) == [s * s for s in range(500)]
    assert all(before <= ts <= after for ts, _ in result)


def test_unbounded_generator_runs_until_cancelled(service):
    seen = []
    job = service.submit(linear_dag(sources.generator(5000, timestamped=False), sinks.callback(seen.append)))
    deadline = time.monotonic() + 5
    while len(seen) < 200 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not job.is_done
    job.cancel()
    with pytest.raises(JobCancelled):
        job.join(timeout=5)
    assert len(seen) >= 200


# -- sinks ------------------------------------------------------------------------------------


def test_to_dict(service):
    pairs = [(i % 10, i) for i in range(100)]
    dag = linear_dag(sources.items(pairs), sinks.to_dict())
    for v in dag.vertices:
        v.local_parallelism = 1  # one instance: "last wins" is well defined
    assert service.run(dag, timeout=10) == {k: 90 + k for k in range(10)}


def test_to_dict_distinct_keys_over_instances(service):
    result = service.run(linear_dag(sources.items([(i, str(i)) for i in range(500)]), sinks.to_dict()), timeout=10)
    assert result == {i: str(i) for i in range(500)}


def test_callback(service):
    seen = []
    lock = threading.Lock()

    def record(item):
        with lock:
            seen.append(item)

    assert service.run(linear_dag(sources.items(range(300)), sinks.callback(record)), timeout=10) is None
    assert sorted(seen) == list(range(300))


def test_callback_exception_fails_the_job(service):
    def boom(item):
        if item == 7:
            raise ValueError("no sevens")

    with pytest.raises(JobError, match="no sevens"):
        service.run(linear_dag(sources.items(range(20)), sinks.callback(boom)), timeout=10)


@dataclasses.dataclass
class Trade:
    symbol: str
    price: float


def test_pandas(service):
    trades = [Trade("A" if i % 2 else "B", float(i)) for i in range(200)]
    df = service.run(linear_dag(sources.items(trades), sinks.pandas()), timeout=10)
    assert list(df.columns) == ["symbol", "price"]
    assert len(df) == 200
    assert df.groupby("symbol")["price"].sum().to_dict() == {"A": 10000.0, "B": 9900.0}


def test_noop(service):
    assert service.run(linear_dag(sources.items(range(5000)), sinks.noop()), timeout=10) is None


def test_latency_of_generated_items(service):
    dag = linear_dag(sources.generator(20_000, count=2000), sinks.latency(), map_processor(lambda e: e))
    result = service.run(dag, timeout=10)
    assert result["count"] == 2000
    keys = ["p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms"]
    values = [result[k] for k in keys]
    assert all(v >= 0 for v in values) and result["mean_ms"] >= 0
    assert values == sorted(values)
    assert result["max_ms"] < 5000


def test_latency_over_a_test_stream(service):
    now = time.time_ns() / 1e6
    events = [(now - 1000, "old"), (now, "new")]
    result = service.run(linear_dag(sources.test_stream(events), sinks.latency()), timeout=10)
    assert result["count"] == 2
    assert result["max_ms"] >= 1000 > result["p50_ms"] >= 0
