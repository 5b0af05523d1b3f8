"""Every kind of the palette reads back and exports code that rebuilds an equal DAG: a vertex
of each kind, built by the builder from a sample of parameters, reads back as the same kind with
the same parameters, and its exported code rebuilds a DAG that reads back the same again."""

from __future__ import annotations

import asyncio
import runpy
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jetbench import DAG
from jetbench.notebook.builder import BuilderModel, Palette


async def fetch(service: dict, x: Any) -> Any:
    await asyncio.sleep(0)
    return service.get(x, x)


#: params of each kind that differ from its defaults, so the read-back has something to find;
#: a kind missing here fails the walk (add it when you add a kind)
SAMPLES: dict[str, dict[str, Any]] = {
    "items": {"items": "[3, 1, 2]"},
    "generator": {"rate_per_s": 500.0, "count": 7, "timestamped": True, "item_fn": "s * 2"},
    "files": {"glob_pattern": "{tmp}/*.txt", "encoding": "latin-1"},
    "test_stream": {"events": "[(0, 'a'), (5, 'b')]"},
    "spark_dataframe": {"df": "df", "columns": "", "as_": "tuple", "timestamp": ""},
    "spark_parquet": {"path": "{tmp}/t.parquet", "columns": "['word']", "as_": "value"},
    "spark_table": {"table": "walk_table", "as_": "dict"},
    "map": {"fn": "x * 2"},
    "filter": {"fn": "x % 2 == 0"},
    "flat_map": {"fn": "[x, x]"},
    "transform": {"steps": "map: x + 1\nfilter:\n    y = x % 3\n    return y != 0\nflat_map: [x, -x]",
                  "timestamped": True, "keep_timestamps": False},
    "map_using_service": {"service_factory": "{1: 10}", "fn": "service.get(x, x)", "timestamped": True},
    "map_using_service_async": {"service_factory": "dict()", "async_fn": "await fetch(service, x)", "max_concurrent": 3,
                                "preserve_order": False},
    "aggregate_by_key": {"key_fn": "x % 3", "op": "summing", "value": "x * 10"},
    "accumulate_by_key": {"key_fn": "x[0]", "op": "to_list"},
    "combine_by_key": {"op": "averaging", "value": "x"},
    "global_aggregate": {"op": "max_by", "value": "len(x)"},
    "global_accumulate": {"op": "counting"},
    "global_combine": {"op": "to_set"},
    "hash_join": {"left_key": "x % 3", "right_key": "x[0]", "how": "left", "timestamped": True},
    "co_group": {"left_key": "x[0]", "right_key": "x[1]"},
    "multi_hash_join": {"left_key1": "x % 3", "right_key1": "x[0]", "projection1": "x[1]", "left_key2": "x % 2",
                        "right_key2": "x", "how": "inner", "timestamped": True},
    "co_aggregate": {"key0": "x % 2", "op0": "summing", "value0": "x * 2", "key1": "x % 3", "op1": "to_list"},
    "rolling_aggregate": {"key_fn": "x % 2", "op": "summing", "value": "x", "timestamped": False},
    "distinct": {"key_fn": "x // 2"},
    "map_stateful": {"key_fn": "x % 3", "create_fn": "[0]", "fn": "state[0] += x\nreturn [key, state[0]]",
                     "mode": "flat_map", "ttl": "", "on_evict": "", "timestamped": False},
    "sort": {"key": "-x", "reverse": True},
    "insert_watermarks": {"ts_fn": "x * 100", "allowed_lag": 50.0, "throttle_frame": 200, "idle_timeout_ms": ""},
    "flat_map_stateful": {"key_fn": "x[0]", "create_fn": "[]", "fn": "k.state.append(x)\nk.timer = k.time + 100\nreturn [len(k.state)]",
                          "on_timer": "[k.key, len(k.state)]", "sorted_input": True, "order_key": "-x[1]"},
    "window": {"window": "session", "gap": 300, "key_fn": "x % 2", "op": "summing", "value": "x"},
    "collect": {},
    "to_dict": {},
    "callback": {"fn": "print(x)"},
    "files_sink": {"directory": "{tmp}/out", "encoding": "latin-1"},
    "latency": {"limit": 99},
    "pandas": {},
    "noop": {},
    "processor": {"cls": "jetbench.processors.to_dict_sink.ToDictSinkP"},  # a class, not to_dict_sink()
}
#: the builder's own kind for suppliers it cannot show: it has nothing to walk
NOT_WALKED = {"custom": "it keeps an object the palette cannot show; it is made by read-back, never built"}


def document(m: BuilderModel) -> list[tuple[str, str, dict[str, Any]]]:
    return [(v["name"], v["kind"], v["params"]) for v in m.vertices]


def walk(kind_id: str, tmp: str, ns: dict[str, Any], params: dict[str, Any] | None = None) -> None:
    """Build a vertex of ``kind_id`` from its sample (or ``params``), read the DAG back, export it as
    code, run the code and read that DAG back: the kind and its parameters survive every step."""
    given = SAMPLES[kind_id] if params is None else params
    sample = {k: v.replace("{tmp}", tmp) if isinstance(v, str) else v for k, v in given.items()}
    made = BuilderModel(namespace=ns)
    vertex = made.add_vertex(kind_id, name="v", params=sample)
    kind = made.palette.kind(kind_id)
    assert kind is not None
    if kind.inputs:  # feed each input from a source of its own
        for ordinal in range(max(1, len(kind.in_ports))):
            made.connect(made.add_vertex("items", name=f"in{ordinal}"), vertex, target_ordinal=ordinal)
    errors = [p for p in made.problems() if p.level == "error"]
    assert errors == [], (kind_id, errors)
    expected = document(made)
    assert all(made.vertices[0]["params"][k] == v for k, v in sample.items()), (kind_id, made.vertices[0]["params"])

    back = BuilderModel(namespace=ns)
    back.load_dag(made.to_dag())
    assert document(back) == expected, (kind_id, document(back))

    code = back.to_code()
    assert "custom_suppliers" not in code, (kind_id, code)
    script = Path(tmp) / f"walk_{kind_id}.py"
    script.write_text(code)  # run as a user runs it: from a file, so its functions have source
    rebuilt: DAG = runpy.run_path(str(script), init_globals=ns)["dag"]
    again = BuilderModel(namespace=ns)
    again.load_dag(rebuilt)
    assert document(again) == expected, (kind_id, code, document(again))


NEEDS_SESSION = {"spark_dataframe", "spark_table"}
KINDS = [k.id for k in Palette().kinds()]


def test_every_kind_of_the_palette_has_a_sample_to_walk():
    assert set(KINDS) - set(SAMPLES) - set(NOT_WALKED) == set()
    assert set(KINDS) >= NEEDS_SESSION  # pyspark is a dependency: the Spark kinds are offered


@pytest.mark.parametrize("kind_id", [k for k in KINDS if k not in NOT_WALKED and k not in NEEDS_SESSION])
def test_a_kind_reads_back_and_its_code_rebuilds_it(kind_id, tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    pq.write_table(pa.table({"word": ["a", "b"], "n": [1, 2]}), tmp_path / "t.parquet")
    walk(kind_id, str(tmp_path), {"fetch": fetch})


@pytest.mark.slow
@pytest.mark.parametrize("kind_id", sorted(NEEDS_SESSION))
def test_a_spark_kind_reads_back_and_its_code_rebuilds_it(kind_id, tmp_path):
    from jetbench.spark import session

    spark = session()
    df = spark.createDataFrame([("a", 1), ("b", 2)], ["word", "n"])
    df.createOrReplaceTempView("walk_table")
    walk(kind_id, str(tmp_path), {"df": df})


def test_flat_map_stateful_with_a_batch_form_walks(tmp_path):
    """``fn_all`` (the batch form of ``fn``, unsorted input only) survives read-back and code: a
    vertex read back from a DAG keeps its fast path."""
    params = {"key_fn": "x % 3", "create_fn": "[0]",
              "fn": "k.state[0] += 1\nreturn [k.state[0]]",
              "fn_all": "out = []\nfor ts, x in pairs:\n    k.state[0] += 1\n    out.append((ts, k.state[0]))\nreturn out",
              "sorted_input": False}
    walk("flat_map_stateful", str(tmp_path), {}, params)


def test_a_document_naming_a_parameter_as_it_was_named_before_loads():
    """A parameter renamed to its name on every face (``service`` -> ``service_factory``,
    ``key`` -> ``key_fn``, ...) still loads under its former name: added, updated, or read
    from a saved document."""
    m = BuilderModel()
    v = m.add_vertex("map_using_service", name="svc", params={"service": "{1: 10}"})
    assert m.vertex(v)["params"]["service_factory"] == "{1: 10}" and "service" not in m.vertex(v)["params"]
    m.update_vertex(v, params={"service": "{2: 20}"})
    assert m.vertex(v)["params"]["service_factory"] == "{2: 20}" and "service" not in m.vertex(v)["params"]
    saved = m.to_json()
    saved["vertices"][0]["params"] = {"service": "{3: 30}", "fn": "service.get(x, x)", "timestamped": False}
    again = BuilderModel()
    again.load_json(saved)
    assert again.vertices[0]["params"]["service_factory"] == "{3: 30}"
    agg = again.add_vertex("accumulate_by_key", params={"key": "x % 2", "op": "counting"})
    assert again.vertex(agg)["params"]["key_fn"] == "x % 2"


def test_a_global_co_aggregation_walks(tmp_path):
    """``co_aggregate`` without keys (one group: Jet's aggregate2 of two stages) survives
    read-back and code as well."""
    walk("co_aggregate", str(tmp_path), {}, {"key0": "", "op0": "counting", "key1": "", "op1": "max_by", "value1": "x"})


def test_a_multi_hash_join_of_one_build_side_walks(tmp_path):
    """``multi_hash_join`` without build side 2 (Jet's innerHashJoin with a projection) survives
    read-back and code as well."""
    walk("multi_hash_join", str(tmp_path), {}, {"left_key1": "x", "right_key1": "x[0]", "projection1": "x[1]",
                                                "left_key2": "", "right_key2": "", "how": "inner"})
