"""The catalogue of built-in palette kinds: for each processor the builder offers, its `Kind`
(parameters, how it builds a supplier and how it is written as code), with the helpers the
entries share (aggregate operations, windows, Spark sources, kind-specific checks).

Read back (a supplier in a DAG built in code, to a kind and its parameters) is the other half of
each entry: `supplier_readback.read_supplier`.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from typing import Any

from .code_text import eval_expr, parse_steps, resolve_class
from .kind import BuilderError, Check, Kind, Param

#: aggregate operations offered by the aggregate and window kinds; those marked True take the
#: ``value`` function (``summing(value)``)
OPS = {"counting": False, "summing": True, "averaging": True, "min_by": True, "max_by": True,
       "to_list": False, "to_set": False}
#: the operations that take a value function
VALUE_OPS = tuple(name for name, takes in OPS.items() if takes)


def _op(name: str, value_fn: Callable[[Any], Any] | None) -> Any:
    from ... import aggregate

    if name not in OPS:
        raise BuilderError(f"unknown aggregate operation {name!r}; one of {sorted(OPS)}")
    op = getattr(aggregate, name)
    return op(value_fn) if OPS[name] and value_fn is not None else op()


def _op_code(name: str, value: str | None) -> str:
    return f"aggregate.{name}({(value or '') if OPS.get(name) else ''})"


def _window_def(p: dict[str, Any]) -> Any:
    from ...processors.window_definition import session, sliding, tumbling

    kind = p.get("window")
    if kind == "tumbling":
        return tumbling(p["size"])
    if kind == "sliding":
        return sliding(p["size"], p["slide"])
    if kind == "session":
        return session(p["gap"])
    raise BuilderError(f"unknown window kind {kind!r}")


def _window_code(p: dict[str, Any]) -> str:
    if p.get("window") == "sliding":
        return f"window.sliding({p['size']}, {p['slide']})"
    if p.get("window") == "session":
        return f"window.session({p['gap']})"
    return f"window.tumbling({p['size']})"


def _none(value: Any) -> Any:
    """An optional parameter's value: "" means not given."""
    return None if value == "" else value


_P = "from jetbench.processors import "
_AGG = "from jetbench import aggregate"
_WIN = "from jetbench import window"
_SPARK = "from jetbench.spark.dataframe_sources import "

KEY = Param("key", "code", "x", help="grouping key: an expression in x, or a function body")
OP = Param("op", "choice", "counting", choices=tuple(OPS), help="aggregate operation")
VALUE = Param("value", "code", "x", when=("op", VALUE_OPS),
              help="value summed / averaged / compared (for summing, averaging, min_by, max_by)")
TIMESTAMPED = Param("timestamped", "bool", False, help="items are (ts, item) pairs: work on the item, keep ts")
SERVICE = Param("service", "code", "dict()", args=(),
                help="makes the service, once per instance: an expression, or a function body")
AS = Param("as_", "choice", "dict", choices=("dict", "tuple", "row", "value"),
           help="items as dicts, tuples, pyspark Rows, or the value of a single column")
COLUMNS = Param("columns", "expr", "", optional=True, help="the columns to read, e.g. ['line'] (empty: all)")
TIMESTAMP = Param("timestamp", "str", "", optional=True,
                  help="a column with event time: items become (ts, item) pairs (empty: none)")


def _value(p: dict[str, Any], f: dict[str, Any]) -> Any:
    return f.get("value") if p.get("op") in VALUE_OPS else None


def _aggregate_kind(name: str, label: str, keyed: bool, description: str, **extra: Any) -> Kind:
    """The kind of the aggregate supplier function ``jetbench.processors.<name>([key,] op)``;
    its code is the same call."""
    from ... import processors

    fn = getattr(processors, name)

    def build(p: dict[str, Any], f: dict[str, Any], ns: dict[str, Any]) -> Any:
        op = _op(p["op"], _value(p, f))
        return fn(f["key"], op) if keyed else fn(op)

    def code(p: dict[str, Any], f: dict[str, Any]) -> tuple[str, set[str]]:
        op = _op_code(p["op"], _value(p, f))
        return (f"{name}({f['key']}, {op})" if keyed else f"{name}({op})"), {_P + name, _AGG}

    return Kind(name, label, "aggregate", True, True, (KEY, OP, VALUE) if keyed else (OP, VALUE), build, code,
                description, **extra)


def _spark_as(p: dict[str, Any]) -> Any:
    return {"dict": dict, "tuple": tuple}.get(p["as_"], p["as_"])


def _spark_args(p: dict[str, Any]) -> str:
    cols = (p.get("columns") or "").strip() or "None"
    ts = f", timestamp={p['timestamp']!r}" if p.get("timestamp") else ""
    as_ = p["as_"] if p["as_"] in ("dict", "tuple") else repr(p["as_"])
    return f"{cols}, {as_}{ts}"


def _columns(p: dict[str, Any], ns: dict[str, Any], what: str) -> Any:
    text = (p.get("columns") or "").strip()
    return eval_expr(text, ns, f"{what}.columns") if text else None


@functools.cache
def spark_available() -> bool:
    """True if pyspark (and pyarrow) import. Importing them starts no Spark: a session is only
    made when a Spark vertex is built (run or ``builder.dag``), never for the palette."""
    if importlib.util.find_spec("pyspark") is None or importlib.util.find_spec("pyarrow") is None:
        return False
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except Exception:  # a broken install: leave the Spark kinds out
        return False
    return True


@functools.cache
def pandas_available() -> bool:
    return importlib.util.find_spec("pandas") is not None


# -- kind-specific checks


def _single_instance(what: str) -> Check:
    def check(v: dict[str, Any], inbound: list, outbound: list) -> list[tuple[str, str]]:
        if v["parallelism"] != 1:
            lp = "the default" if v["parallelism"] is None else v["parallelism"]
            return [(f"{what} gives one result per instance: run it with local parallelism 1 (now {lp})", "warning")]
        return []

    return check


def _check_hash_join(v: dict[str, Any], inbound: list, outbound: list) -> list[tuple[str, str]]:
    found = []
    probe = [e for e in inbound if e["target_ordinal"] == 0]
    build = [e for e in inbound if e["target_ordinal"] == 1]
    for e in build:
        if e["routing"] != "broadcast" and v["parallelism"] != 1:
            found.append(("the build side (input 1) should be broadcast: every instance needs all of it", "warning"))
        if any(isinstance(p["priority"], int) and isinstance(e["priority"], int) and e["priority"] >= p["priority"]
               for p in probe):
            found.append(("the build side (input 1) should have a lower priority value than the probe side "
                          "(input 0), so it is loaded first", "warning"))
    return found


def _check_co_group(v: dict[str, Any], inbound: list, outbound: list) -> list[tuple[str, str]]:
    if v["parallelism"] == 1:
        return []
    return [(f"input {e['target_ordinal']} should be partitioned by its key: equal keys must meet in one instance",
             "warning") for e in inbound if e["routing"] != "partitioned"]


def _join_edge(p: dict[str, Any], ordinal: int) -> dict[str, Any]:
    return {"routing": "broadcast", "priority": -1} if ordinal == 1 else {}


def _co_group_edge(p: dict[str, Any], ordinal: int) -> dict[str, Any]:
    key = p.get("left_key" if ordinal == 0 else "right_key")
    return {"routing": "partitioned", "key": key} if ordinal in (0, 1) and key else {}


def _transform(p: dict[str, Any], f: dict[str, Any]) -> Any:
    from ...processors.transform import Transform

    steps = parse_steps(p["steps"] or "")
    return Transform(tuple((kind, fn) for (kind, _), fn in zip(steps, f["steps"], strict=True)), p["timestamped"],
                     p["keep_timestamps"])


def _transform_code(p: dict[str, Any], f: dict[str, Any]) -> tuple[str, set[str]]:
    steps = parse_steps(p["steps"] or "")
    flags = []
    if p["timestamped"]:
        flags.append("timestamped=True")
    if not p["keep_timestamps"]:
        flags.append("keep_timestamps=False")
    chain = "".join(f".{kind}({fn})" for (kind, _), fn in zip(steps, f["steps"], strict=True))
    return f"transform_processor(Transform({', '.join(flags)}){chain})", {_P + "Transform, transform_processor"}


def builtin_kinds() -> list[Kind]:
    """The kinds every palette starts with (the Spark sources only if pyspark imports, pandas
    only if pandas does)."""
    from ...processors import (
        collect_sink,
        filter_processor,
        flat_map_processor,
        items_source,
        map_processor,
        noop_sink,
        transform_processor,
    )
    from ...processors.callback_sink import CallbackSink
    from ...processors.co_group import co_group
    from ...processors.files_sink import FilesSink
    from ...processors.files_source import FilesSource
    from ...processors.generator_source import GeneratorSource
    from ...processors.hash_join import hash_join
    from ...processors.insert_watermarks import insert_watermarks
    from ...processors.latency_sink import LATENCY_SAMPLE_LIMIT, LatencySink
    from ...processors.map_using_service import map_using_service
    from ...processors.map_using_service_async import map_using_service_async
    from ...processors.pandas_sink import PandasSink
    from ...processors.test_stream_source import TestStreamSource
    from ...processors.to_dict_sink import ToDictSink
    from ...processors.window_aggregate import window_aggregate

    kinds = [
        Kind("items", "items", "source", False, True,
             (Param("items", "expr", "range(10)", help="a Python expression giving the items (evaluated at run)"),),
             lambda p, f, ns: items_source(eval_expr(p["items"], ns, "items")),
             lambda p, f: (f"items_source({p['items'].strip()})", {_P + "items_source"}),
             "emits the items of an iterable"),
        Kind("generator", "generator", "source", False, True,
             (Param("rate_per_s", "float", 1000.0, minimum=0, strict=True, help="items per second over all instances"),
              Param("count", "int", 1000, optional=True, minimum=0, help="total items (empty: never ends)"),
              Param("timestamped", "bool", False, help="emit (ts, item) pairs"),
              Param("item_fn", "code", "", args=("s",), optional=True, help="item for sequence number s (empty: s)")),
             lambda p, f, ns: GeneratorSource(p["rate_per_s"], f.get("item_fn"), p["timestamped"], _none(p["count"])),
             lambda p, f: (f"GeneratorSource({p['rate_per_s']!r}, {f.get('item_fn')}, {p['timestamped']!r}, "
                           f"{_none(p['count'])!r})", {"from jetbench.processors.generator_source import GeneratorSource"}),
             "items at a rate on the wall clock"),
        Kind("files", "files", "source", False, True,
             (Param("pattern", "str", "data/*.txt", help="glob of the files to read (lines)"),
              Param("encoding", "str", "utf-8")),
             lambda p, f, ns: FilesSource(p["pattern"], p["encoding"]),
             lambda p, f: (f"FilesSource({p['pattern']!r}, {p['encoding']!r})", {"from jetbench.processors.files_source import FilesSource"}),
             "the lines of files matching a glob"),
        Kind("test_stream", "test stream", "source", False, True,
             (Param("events", "expr", "[(0, 'a'), (400, 'b'), (1200, 'c')]",
                    help="(timestamp ms, item) pairs, emitted in this order (evaluated at run)"),),
             lambda p, f, ns: TestStreamSource(eval_expr(p["events"], ns, "events")),
             lambda p, f: (f"TestStreamSource({p['events'].strip()})", {"from jetbench.processors.test_stream_source import TestStreamSource"}),
             "scripted (ts, item) events from one instance; follow with insert watermarks"),
        Kind("map", "map", "transform", True, True,
             (Param("fn", "code", "x", help="the new item: an expression in x, or a function body"),),
             lambda p, f, ns: map_processor(f["fn"]),
             lambda p, f: (f"map_processor({f['fn']})", {_P + "map_processor"}), "one item out per item in"),
        Kind("filter", "filter", "transform", True, True,
             (Param("fn", "code", "True", help="keep the item when true: an expression in x, or a function body"),),
             lambda p, f, ns: filter_processor(f["fn"]),
             lambda p, f: (f"filter_processor({f['fn']})", {_P + "filter_processor"}), "keeps matching items"),
        Kind("flat_map", "flat_map", "transform", True, True,
             (Param("fn", "code", "[x]", help="an iterable of items: an expression in x, or a function body"),),
             lambda p, f, ns: flat_map_processor(f["fn"]),
             lambda p, f: (f"flat_map_processor({f['fn']})", {_P + "flat_map_processor"}),
             "any number of items out per item in"),
        Kind("transform", "fused transform", "transform", True, True,
             (Param("steps", "steps", "map: x", help="one step a line: 'map: x + 1', 'filter: x > 0', "
                                                     "'flat_map: x.split()' (a body indented below 'map:')"),
              Param("timestamped", "bool", False, help="input items are (ts, item) pairs: steps see the item"),
              Param("keep_timestamps", "bool", True, help="timestamped input: emit (ts, item) pairs (else items)")),
             lambda p, f, ns: transform_processor(_transform(p, f)), _transform_code,
             "a chain of map/filter/flat_map run as one vertex (what the planner fuses); no steps: merge inputs"),
        Kind("map_using_service", "map using service", "transform", True, True,
             (SERVICE,
              Param("fn", "code", "x", args=("service", "x"), help="the new item, from the service and x (may block)"),
              TIMESTAMPED),
             lambda p, f, ns: map_using_service(f["service"], f["fn"], p["timestamped"]),
             lambda p, f: (f"map_using_service({f['service']}, {f['fn']}, {p['timestamped']!r})",
                           {"from jetbench.processors.map_using_service import map_using_service"}),
             "fn(service, x) on a thread of its own (blocking calls allowed)"),
        Kind("map_using_service_async", "map using async service", "transform", True, True,
             (SERVICE,
              Param("fn", "code", "x", args=("service", "x"), asynchronous=True,
                    help="the body of an async function of service and x (use await), or an expression"),
              Param("max_concurrent", "int", 16, minimum=1, help="calls in flight per instance"),
              Param("preserve_order", "bool", True, help="results in input order (else as they finish)"),
              TIMESTAMPED),
             lambda p, f, ns: map_using_service_async(f["service"], f["fn"], p["max_concurrent"], p["preserve_order"],
                                                      p["timestamped"]),
             lambda p, f: (f"map_using_service_async({f['service']}, {f['fn']}, {p['max_concurrent']!r}, "
                           f"{p['preserve_order']!r}, {p['timestamped']!r})",
                           {"from jetbench.processors.map_using_service_async import map_using_service_async"}),
             "await fn(service, x), several calls in flight, on an asyncio loop"),
        _aggregate_kind("aggregate_by_key", "aggregate by key", True, "emits (key, result) when the input completes"),
        _aggregate_kind("accumulate_by_key", "accumulate by key", True, "stage 1 of two: emits (key, accumulator)"),
        _aggregate_kind("combine_by_key", "combine by key", False, "stage 2 of two: combines (key, accumulator) pairs"),
        _aggregate_kind("global_aggregate", "aggregate (global)", False,
                        "one result over all items, when the input completes", parallelism=1,
                        check=_single_instance("a global aggregate")),
        _aggregate_kind("global_accumulate", "accumulate (global)", False,
                        "stage 1 of two: emits (None, accumulator) per instance"),
        _aggregate_kind("global_combine", "combine (global)", False,
                        "stage 2 of two: combines the accumulators into the one result", parallelism=1,
                        check=_single_instance("a global combine")),
        Kind("hash_join", "hash join", "join", True, True,
             (Param("left_key", "code", "x", help="key of a probe item (input 0)"),
              Param("right_key", "code", "x", help="key of a build item (input 1)"),
              Param("how", "choice", "inner", choices=("inner", "left"), help="left: also (item, None) without match"),
              Param("timestamped", "bool", False, help="probe items are (ts, item) pairs")),
             lambda p, f, ns: hash_join(f["left_key"], f["right_key"], p["how"], p["timestamped"]),
             lambda p, f: (f"hash_join({f['left_key']}, {f['right_key']}, {p['how']!r}, {p['timestamped']!r})",
                           {"from jetbench.processors.hash_join import hash_join"}),
             "emits (probe item, build item) per key match; the build side is loaded first",
             in_ports=("probe", "build"), edge_defaults=_join_edge, check=_check_hash_join),
        Kind("co_group", "co-group", "join", True, True,
             (Param("left_key", "code", "x", help="key of an item of input 0"),
              Param("right_key", "code", "x", help="key of an item of input 1")),
             lambda p, f, ns: co_group(f["left_key"], f["right_key"]),
             lambda p, f: (f"co_group({f['left_key']}, {f['right_key']})",
                           {"from jetbench.processors.co_group import co_group"}),
             "emits (key, [left items], [right items]) when both inputs complete",
             in_ports=("left", "right"), edge_defaults=_co_group_edge, check=_check_co_group),
        Kind("insert_watermarks", "insert watermarks", "window", True, True,
             (Param("ts", "code", "", optional=True, help="event time (ms) of x (empty: x is a (ts, item) pair)"),
              Param("allowed_lag", "float", 0.0, minimum=0, help="ms"),
              Param("throttle_frame", "int", 1000, minimum=0, strict=True, help="ms"),
              Param("idle_timeout_ms", "float", 60_000.0, optional=True,
                    help="ms without items before the input counts as idle (empty: never)")),
             lambda p, f, ns: insert_watermarks(f.get("ts"), p["allowed_lag"], p["throttle_frame"],
                                                _none(p.get("idle_timeout_ms"))),
             lambda p, f: (f"insert_watermarks({f.get('ts')}, {p['allowed_lag']!r}, {p['throttle_frame']!r}"
                           + ("" if p.get("idle_timeout_ms") == 60_000 else f", {_none(p.get('idle_timeout_ms'))!r}")
                           + ")", {"from jetbench.processors.insert_watermarks import insert_watermarks"}),
             "timestamps items and emits watermarks"),
        Kind("window", "window aggregate", "window", True, True,
             (Param("window", "choice", "tumbling", choices=("tumbling", "sliding", "session")),
              Param("size", "int", 1000, minimum=0, strict=True, when=("window", ("tumbling", "sliding")), help="ms"),
              Param("slide", "int", 1000, minimum=0, strict=True, when=("window", ("sliding",)), help="ms (sliding)"),
              Param("gap", "int", 1000, minimum=0, strict=True, when=("window", ("session",)), help="ms (session)"),
              Param("key", "code", "", optional=True, help="grouping key (empty: one global window)"), OP, VALUE),
             lambda p, f, ns: window_aggregate(f.get("key"), _op(p["op"], _value(p, f)), _window_def(p)),
             lambda p, f: (f"window_aggregate({f.get('key')}, {_op_code(p['op'], _value(p, f))}, {_window_code(p)})",
                           {"from jetbench.processors.window_aggregate import window_aggregate", _AGG, _WIN}),
             "aggregates (ts, item) pairs per window"),
        Kind("collect", "collect", "sink", True, False, (),
             lambda p, f, ns: collect_sink(), lambda p, f: ("collect_sink()", {_P + "collect_sink"}),
             "the job's result is the list of items"),
        Kind("to_dict", "to dict", "sink", True, False, (),
             lambda p, f, ns: ToDictSink(), lambda p, f: ("ToDictSink()", {"from jetbench.processors.to_dict_sink import ToDictSink"}),
             "(key, value) items; the job's result is a dict"),
        Kind("callback", "callback", "sink", True, False,
             (Param("fn", "code", "print(x)", help="called with every item (its result is ignored)"),),
             lambda p, f, ns: CallbackSink(f["fn"]), lambda p, f: (f"CallbackSink({f['fn']})", {"from jetbench.processors.callback_sink import CallbackSink"}),
             "calls a function for every item"),
        Kind("files_sink", "write files", "sink", True, False,
             (Param("directory", "str", "out", help="instance k writes directory/part-0000k, a line per item"),
              Param("encoding", "str", "utf-8")),
             lambda p, f, ns: FilesSink(p["directory"], p["encoding"]),
             lambda p, f: (f"FilesSink({p['directory']!r}, {p['encoding']!r})", {"from jetbench.processors.files_sink import FilesSink"}),
             "writes str(item) lines to files"),
        Kind("latency", "latency", "sink", True, False,
             (Param("limit", "int", LATENCY_SAMPLE_LIMIT, minimum=1, help="samples kept for the percentiles"),),
             lambda p, f, ns: LatencySink(p["limit"]),
             lambda p, f: ("LatencySink()" if p["limit"] == LATENCY_SAMPLE_LIMIT else f"LatencySink({p['limit']!r})",
                           {"from jetbench.processors.latency_sink import LatencySink"}),
             "(ts, item) items; the job's result is end-to-end latency percentiles"),
        Kind("noop", "discard", "sink", True, False, (),
             lambda p, f, ns: noop_sink(), lambda p, f: ("noop_sink()", {_P + "noop_sink"}), "discards items"),
        Kind("processor", "processor class", "custom", True, True,
             (Param("cls", "str", "", help="a Processor subclass: a name in the notebook or module.Class"),),
             lambda p, f, ns: resolve_class(p["cls"], ns), _processor_code,
             "any Processor subclass"),
        Kind("custom", "custom supplier", "custom", True, True,
             (Param("label", "str", "", optional=True, help="what the supplier was (kept from the DAG it came from)"),
              Param("reason", "str", "", optional=True, help="why it is not shown as an editable kind")),
             _no_build, lambda p, f: ("custom_suppliers[{name!r}]", set()),
             "a supplier from code the palette does not know; kept as the object itself"),
    ]
    if pandas_available():
        kinds.insert(-3, Kind("pandas", "pandas DataFrame", "sink", True, False, (),
                              lambda p, f, ns: PandasSink(), lambda p, f: ("PandasSink()", {"from jetbench.processors.pandas_sink import PandasSink"}),
                              "the job's result is a pandas DataFrame of the items"))
    if spark_available():
        kinds[4:4] = _spark_kinds()
    return kinds


def _spark_kinds() -> list[Kind]:
    """The Spark sources: their build and code import ``jetbench.spark`` only when used."""

    def dataframe(p: dict[str, Any], f: dict[str, Any], ns: dict[str, Any]) -> Any:
        from ...spark.dataframe_sources import dataframe

        df = eval_expr(p["df"], ns, "df")
        return dataframe(df, _columns(p, ns, "df"), _spark_as(p), timestamp=p["timestamp"] or None).supplier

    def parquet(p: dict[str, Any], f: dict[str, Any], ns: dict[str, Any]) -> Any:
        from ...spark.dataframe_sources import parquet

        return parquet(p["path"], _columns(p, ns, "parquet"), _spark_as(p), engine=p["engine"],
                       timestamp=p["timestamp"] or None).supplier

    def table(p: dict[str, Any], f: dict[str, Any], ns: dict[str, Any]) -> Any:
        from ...spark.dataframe_sources import table

        return table(p["table"], _columns(p, ns, "table"), _spark_as(p), timestamp=p["timestamp"] or None).supplier

    return [
        Kind("spark_dataframe", "Spark DataFrame", "source", False, True,
             (Param("df", "expr", "df", help="a Spark DataFrame: a name or expression in the notebook"),
              COLUMNS, AS, TIMESTAMP),
             dataframe,
             lambda p, f: (f"dataframe({p['df'].strip()}, {_spark_args(p)}).supplier", {_SPARK + "dataframe"}),
             "the rows of a Spark DataFrame, read partition by partition"),
        Kind("spark_parquet", "parquet files", "source", False, True,
             (Param("path", "str", "data.parquet", help="a parquet file or directory"), COLUMNS, AS,
              Param("engine", "choice", "arrow", choices=("arrow", "spark"),
                    help="arrow: read row groups with pyarrow; spark: through spark.read.parquet"),
              TIMESTAMP),
             parquet,
             lambda p, f: (f"parquet({p['path']!r}, {_spark_args(p)}"
                           + ("" if p["engine"] == "arrow" else f", engine={p['engine']!r}") + ").supplier",
                           {_SPARK + "parquet"}),
             "the rows of parquet files (no Spark session needed with engine=arrow)"),
        Kind("spark_table", "Spark table", "source", False, True,
             (Param("table", "str", "my_table", help="a table of the Spark session"), COLUMNS, AS, TIMESTAMP),
             table,
             lambda p, f: (f"table({p['table']!r}, {_spark_args(p)}).supplier", {_SPARK + "table"}),
             "the rows of a table of the Spark session"),
    ]


def _no_build(p: dict[str, Any], f: dict[str, Any], ns: dict[str, Any]) -> Any:
    raise BuilderError("a custom supplier must be attached with set_supplier()")


def _processor_code(p: dict[str, Any], f: dict[str, Any]) -> tuple[str, set[str]]:
    path = p["cls"].strip()
    module, _, name = path.rpartition(".")
    if module:
        return name, {f"from {module} import {name}"}
    return path, set()
