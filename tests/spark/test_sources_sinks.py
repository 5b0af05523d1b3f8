"""Spark-backed sources and sinks, on the local executor and under SparkRunner."""

from __future__ import annotations

import collections
import dataclasses
import datetime
import time

import pytest

import jetbench
from jetbench import DAG, Edge, JetbenchError, Pipeline, WindowResult, aggregate, sinks, sources
from jetbench.processors import collect_sink
from jetbench.spark import dataframe_sinks as spark_sinks
from jetbench.spark import dataframe_sources as spark_sources
from jetbench.spark._arrow import ArrowDecoder, item_to_record
from jetbench.window import tumbling

from .conftest import ship_by_value

ship_by_value(__name__)

ROWS = [(i, f"k{i % 4}", i * 0.5) for i in range(5000)]


@pytest.fixture(scope="module")
def frame(spark):
    """5000 rows over 4 Spark partitions, in ``n`` order."""
    return spark.createDataFrame(ROWS, "n long, key string, x double").repartitionByRange(4, "n").cache()


def collect(source, **config):
    p = Pipeline()
    p.read_from(source).write_to(sinks.collect())
    return jetbench.run(p, timeout=60, **config)


@pytest.mark.parametrize("as_,expected", [
    (tuple, ROWS),
    (dict, [{"n": n, "key": k, "x": x} for n, k, x in ROWS]),
    ("row", ROWS),
    ("tuple", ROWS),
])
def test_dataframe_source_item_kinds_in_partition_order(frame, as_, expected):
    items = collect(spark_sources.dataframe(frame, as_=as_))
    assert items == expected
    if as_ == "row":
        assert items[0].key == "k0" and items[0].asDict() == {"n": 0, "key": "k0", "x": 0.0}


def test_dataframe_source_columns_and_value(frame):
    assert collect(spark_sources.dataframe(frame, columns=["key", "n"], as_=tuple))[:2] == [("k0", 0), ("k1", 1)]
    assert collect(spark_sources.dataframe(frame, columns="n", as_="value")) == [n for n, _, _ in ROWS]
    with pytest.raises(JetbenchError, match="one column"):
        spark_sources.dataframe(frame, as_="value")
    with pytest.raises(JetbenchError, match="as_"):
        spark_sources.dataframe(frame, as_=list)


def test_dataframe_source_is_partitioned_and_non_cooperative(frame):
    source = spark_sources.dataframe(frame, as_=tuple, local_parallelism=3)
    p = Pipeline()
    p.read_from(source).write_to(sinks.collect())
    job = jetbench.ExecutionService(cooperative_threads=2).submit(p)
    assert sorted(job.join(timeout=60)) == ROWS
    instances = [t for t in job.metrics().tasklets if t.vertex == source.name]
    assert len(instances) == 3 and not any(t.cooperative for t in instances)
    assert sum(t.emitted_count for t in instances) == len(ROWS)
    assert all(t.emitted_count for t in instances)  # 4 partitions over 3 instances: each has some


def test_dataframe_source_as_dag_vertex_supplier(frame):
    dag = DAG()
    src = dag.new_vertex("frame", spark_sources.dataframe(frame, columns=["n"], as_="value").supplier)
    dag.edge(Edge.between(src, dag.new_vertex("out", collect_sink())))
    assert jetbench.run(dag, timeout=60) == [n for n, _, _ in ROWS]


def test_timestamp_column_makes_a_timestamped_source(spark):
    df = spark.createDataFrame([(datetime.datetime(2024, 1, 1, 0, 0, s, tzinfo=datetime.UTC), s) for s in range(10)],
                               "at timestamp, s long")
    base = int(datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC).timestamp() * 1000)
    source = spark_sources.dataframe(df, as_=tuple, timestamp="at")
    assert source.timestamped
    p = Pipeline()
    p.read_from(source).window(tumbling(5000)).aggregate(aggregate.summing(lambda row: row[1])) \
        .write_to(sinks.collect())
    expected = {WindowResult(base, base + 5000, None, 10), WindowResult(base + 5000, base + 10_000, None, 35)}
    assert set(jetbench.run(p, timeout=60)) == expected
    assert set(jetbench.run(p, runner="spark")) == expected
    numeric = spark_sources.dataframe(df, columns=["s"], as_="value", timestamp="s")
    dag = DAG()  # straight from the source processor: (ts, item) pairs
    dag.edge(Edge.between(dag.new_vertex("src", numeric.supplier), dag.new_vertex("out", collect_sink())))
    assert jetbench.run(dag, timeout=60) == [(s, s) for s in range(10)]
    assert collect(numeric) == list(range(10))  # a pipeline sink gets plain items
    with pytest.raises(JetbenchError, match="timestamp column"):
        spark_sources.dataframe(df, columns=["s"], timestamp="at")


def test_replay_loads_first_then_emits_at_the_rate_with_creation_timestamps(frame):
    rate = 10_000
    source = spark_sources.dataframe(frame, columns=["n"], as_="value", replay=spark_sources.replay(rate))
    assert source.timestamped and not source.streaming
    assert len(source.supplier) == len(ROWS)  # loaded when the source was made, not in the run
    p = Pipeline()
    p.read_from(source).write_to(sinks.latency())
    started = time.monotonic()
    latency = jetbench.run(p, timeout=60)
    elapsed = time.monotonic() - started
    assert latency["count"] == len(ROWS)
    assert elapsed >= 0.9 * len(ROWS) / rate  # paced by the wall clock
    assert 0 <= latency["p50_ms"] < 1000  # creation timestamps: each item stamped as it is emitted
    assert sorted(collect(source)) == [n for n, _, _ in ROWS]
    with pytest.raises(JetbenchError, match="rate_per_s"):
        spark_sources.replay(0)
    with pytest.raises(JetbenchError, match="creation timestamps"):
        spark_sources.dataframe(frame, replay=10, timestamp="n")


def test_replay_items_are_timestamped_at_creation(frame):
    source = spark_sources.dataframe(frame, columns=["n"], as_="value", replay=50_000)
    processor = source.supplier()
    assert processor.timestamped and processor.count == len(ROWS)


@pytest.fixture(scope="module")
def parquet_dir(spark, tmp_path_factory):
    path = tmp_path_factory.mktemp("parquet") / "rows.parquet"
    spark.createDataFrame(ROWS, "n long, key string, x double").repartition(3).write.parquet(str(path))
    return str(path)


def test_parquet_source_engines_agree(parquet_dir):
    arrow = spark_sources.parquet(parquet_dir, as_=tuple)
    via_spark = spark_sources.parquet(parquet_dir, as_=tuple, engine="spark")
    assert arrow.supplier.part_count() == 3
    assert sorted(collect(arrow)) == sorted(collect(via_spark)) == ROWS
    assert sorted(collect(arrow, cooperative_threads=2)) == ROWS
    assert sorted(collect(spark_sources.parquet(parquet_dir, columns=["x"], as_="value"))) == [x for _, _, x in ROWS]
    with pytest.raises(JetbenchError, match="no column 'nope'"):
        spark_sources.parquet(parquet_dir, columns=["nope"])
    with pytest.raises(JetbenchError, match="engine"):
        spark_sources.parquet(parquet_dir, engine="duckdb")


def test_parquet_and_dataframe_sources_under_spark_runner(runner, frame, parquet_dir):
    for source in (spark_sources.parquet(parquet_dir, as_=dict), spark_sources.dataframe(frame, as_=dict)):
        p = Pipeline()
        p.read_from(source).group_by(lambda row: row["key"]).aggregate(aggregate.summing(lambda row: row["n"])) \
            .write_to(sinks.collect())
        expected = collections.Counter()
        for n, k, _ in ROWS:
            expected[k] += n
        assert dict(runner.run(p)) == dict(jetbench.run(p)) == expected


def test_dataframe_source_meets_another_input_under_spark_runner(runner, frame):
    """A DataFrame source merged with an items source: the stage has two inputs (a shuffle)."""
    p = Pipeline()
    left = p.read_from(spark_sources.dataframe(frame, columns=["n"], as_="value"))
    right = p.read_from(sources.items([-1, -2, -3]))
    left.merge(right).filter(lambda n: n < 10).write_to(sinks.collect())
    assert sorted(runner.run(p)) == sorted(jetbench.run(p)) == [-3, -2, -1, *range(10)]


def test_table_source(spark, frame):
    frame.write.mode("overwrite").saveAsTable("rows_table")
    assert sorted(collect(spark_sources.table("rows_table", as_=tuple))) == ROWS


# -- sinks ----------------------------------------------------------------------------------------


@dataclasses.dataclass
class Point:
    x: int
    y: str


def test_items_become_records():
    row = WindowResult(0, 10, "k", 3)
    assert item_to_record(row) == {"start": 0, "end": 10, "key": "k", "value": 3}
    assert item_to_record({"a": 1}) == {"a": 1}
    assert item_to_record((1, "b")) == {"_1": 1, "_2": "b"}
    assert item_to_record(Point(1, "p")) == {"x": 1, "y": "p"}
    assert item_to_record(7) == {"value": 7}
    assert ArrowDecoder(("a",), "value").decode_table.__name__ == "decode_table"


def sink_pipeline(sink, items):
    p = Pipeline()
    p.read_from(sources.items(items)).write_to(sink)
    return p


@pytest.mark.parametrize("runner_name", ["local", "spark"])
def test_dataframe_sink(runner_name):
    items = [{"a": i, "b": str(i)} for i in range(200)]
    df = jetbench.run(sink_pipeline(spark_sinks.dataframe(), items), runner=runner_name)
    assert df.columns == ["a", "b"]
    assert sorted(tuple(r) for r in df.collect()) == sorted((i, str(i)) for i in range(200))
    points = jetbench.run(sink_pipeline(spark_sinks.dataframe("x int, y string"), [Point(i, "p") for i in range(5)]),
                          runner=runner_name)
    assert points.schema.simpleString() == "struct<x:int,y:string>" and points.count() == 5
    empty = jetbench.run(sink_pipeline(spark_sinks.dataframe(), []), runner=runner_name)
    assert empty.count() == 0


@pytest.mark.parametrize("runner_name", ["local", "spark"])
def test_parquet_sink_round_trip(tmp_path, runner_name):
    path = tmp_path / "out.parquet"
    items = [(i, f"w{i}") for i in range(300)]
    df = jetbench.run(sink_pipeline(spark_sinks.parquet(path), items), runner=runner_name)
    assert df.count() == 300
    assert sorted(collect(spark_sources.parquet(path, as_=tuple))) == items
    jetbench.run(sink_pipeline(spark_sinks.parquet(path, mode="append"), items[:10]), runner=runner_name)
    assert len(collect(spark_sources.parquet(path, as_=tuple))) == 310


@pytest.mark.parametrize("runner_name", ["local", "spark"])
def test_table_sink_round_trip(spark, runner_name):
    name = f"words_{runner_name}"
    p = Pipeline()
    p.read_from(sources.items(["a b", "b c c"])).flat_map(str.split).group_by(lambda w: w) \
        .aggregate(aggregate.counting()).write_to(spark_sinks.table(name))
    df = jetbench.run(p, runner=runner_name)
    assert sorted(tuple(r) for r in df.collect()) == [("a", 1), ("b", 2), ("c", 2)]
    assert sorted(tuple(r) for r in spark.table(name).collect()) == [("a", 1), ("b", 2), ("c", 2)]


def test_window_results_to_a_dataframe(runner):
    p = Pipeline()
    p.read_from(sources.test_stream([(1, "a"), (2, "b"), (12, "a")])).group_by(lambda k: k) \
        .window(tumbling(10)).aggregate(aggregate.counting()).write_to(spark_sinks.dataframe())
    for df in (jetbench.run(p), runner.run(p)):
        assert df.columns == ["start", "end", "key", "value"]
        assert sorted(tuple(r) for r in df.collect()) == [(0, 10, "a", 1), (0, 10, "b", 1), (10, 20, "a", 1)]


def test_bad_sink_mode():
    with pytest.raises(JetbenchError, match="mode"):
        spark_sinks.parquet("/tmp/x", mode="sometimes")
