"""Read back: which palette kind, with which parameters, a supplier found in a DAG built in code
is, so that it opens in the builder as an editable vertex. One branch per built-in kind (the
other half of each entry of `builtin_kinds`); functions become code text through
`function_readback.function_code`, values through `_literal_code`.

A supplier none of the branches knows gives None; one whose functions or values cannot be shown
as text raises `Unreadable` saying why. `dag_import` makes either a "custom" vertex that keeps
the object.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from .builtin_kinds import OPS
from .code_text import class_path, steps_text
from .function_readback import Unreadable, function_code
from .palette import Palette


def read_supplier(supplier: Any, ns: dict[str, Any], palette: Palette) -> tuple[str, dict[str, Any]] | None:
    """``(palette kind id, params)`` for a supplier of a built-in kind, None for one the palette
    has no kind for; raises `Unreadable` (saying why) for one whose functions or values cannot
    be shown as text in namespace ``ns``."""
    from ...core.processor import Processor
    from ...processors.aggregation import AggregateSupplier
    from ...processors.callback_sink import CallbackSink
    from ...processors.co_group import CoGroup
    from ...processors.collect_sink import CollectSink
    from ...processors.files_sink import FilesSink
    from ...processors.files_source import FilesSource
    from ...processors.generator_source import GeneratorSource
    from ...processors.hash_join import HashJoin
    from ...processors.insert_watermarks import InsertWatermarks
    from ...processors.items_source import ItemsSource
    from ...processors.latency_sink import LatencySink
    from ...processors.map_using_service import MapUsingService
    from ...processors.map_using_service_async import MapUsingServiceAsync
    from ...processors.noop_sink import NoopSinkP
    from ...processors.pandas_sink import PandasSink
    from ...processors.test_stream_source import TestStreamSource
    from ...processors.to_dict_sink import ToDictSink
    from ...processors.transform import TransformSupplier
    from ...processors.window_aggregate import WindowAggregate


    def code(fn: Any, what: str, args: tuple[str, ...] = ("x",), asynchronous: bool = False) -> str:
        try:
            return function_code(fn, args, ns, asynchronous)
        except Unreadable as exc:
            raise Unreadable(f"{what}: {exc}") from None

    def optional(fn: Any, what: str, args: tuple[str, ...] = ("x",)) -> str:
        return "" if fn is None else code(fn, what, args)

    def literal(value: Any, what: str) -> str:
        text = _literal_code(value)
        if text is None:
            raise Unreadable(f"its {what} are a {type(value).__name__}, not a literal the builder can show")
        return text

    if isinstance(supplier, ItemsSource):
        return "items", {"items": literal(supplier.items, "items")}
    if isinstance(supplier, TestStreamSource):
        return "test_stream", {"events": literal(list(supplier.events), "events")}
    if isinstance(supplier, TransformSupplier):
        t = supplier.transform
        steps = [(step, code(fn, f"step {i + 1} ({step})")) for i, (step, fn) in enumerate(t.steps)]
        if len(steps) == 1 and not t.timestamped:
            return steps[0][0], {"fn": steps[0][1]}
        return "transform", {"steps": steps_text(steps), "timestamped": t.timestamped,
                             "keep_timestamps": t.keep_timestamps}
    if isinstance(supplier, GeneratorSource):
        return "generator", {"rate_per_s": float(supplier.rate_per_s), "count": supplier.count,
                             "timestamped": bool(supplier.timestamped),
                             "item_fn": optional(supplier.item_fn, "item_fn", ("s",))}
    if isinstance(supplier, FilesSource):
        return "files", {"pattern": supplier.glob_pattern, "encoding": supplier.encoding}
    if isinstance(supplier, InsertWatermarks):
        idle = supplier.idle_timeout_ms
        return "insert_watermarks", {"ts": optional(supplier.ts_fn, "ts"), "allowed_lag": supplier.allowed_lag,
                                     "throttle_frame": supplier.throttle_frame,
                                     "idle_timeout_ms": "" if idle is None else idle}
    if isinstance(supplier, AggregateSupplier):
        kind_id = {"accumulate_by_key": "accumulate_by_key", "aggregate_by_key": "aggregate_by_key",
                   "combine_by_key": "combine_by_key", "accumulate": "global_accumulate",
                   "combine": "global_combine", "aggregate": "global_aggregate"}.get(supplier.label)
        if kind_id is None:
            return None
        params = _read_op(supplier.op, code)
        if kind_id in ("accumulate_by_key", "aggregate_by_key"):
            params["key"] = code(supplier.key_fn, "key")
        return kind_id, params
    if isinstance(supplier, WindowAggregate):
        wd = supplier.window_def
        params = _read_op(supplier.op, code)
        params["key"] = optional(supplier.key_fn, "key")
        if wd.kind == "session":
            params.update(window="session", gap=wd.gap)
        else:
            params.update(window="tumbling" if wd.is_tumbling else "sliding", size=wd.size, slide=wd.slide)
        return "window", params
    if isinstance(supplier, HashJoin):
        return "hash_join", {"left_key": code(supplier.left_key, "left_key"),
                             "right_key": code(supplier.right_key, "right_key"), "how": supplier.how,
                             "timestamped": bool(supplier.timestamped)}
    if isinstance(supplier, CoGroup):
        return "co_group", {"left_key": code(supplier.left_key, "left_key"),
                            "right_key": code(supplier.right_key, "right_key")}
    if isinstance(supplier, MapUsingServiceAsync):
        return "map_using_service_async", {
            "service": code(supplier.service_factory, "service", ()),
            "fn": code(supplier.fn, "fn", ("service", "x"), asynchronous=True),
            "max_concurrent": supplier.max_concurrent, "preserve_order": bool(supplier.preserve_order),
            "timestamped": bool(supplier.timestamped)}
    if isinstance(supplier, MapUsingService):
        return "map_using_service", {"service": code(supplier.service_factory, "service", ()),
                                     "fn": code(supplier.fn, "fn", ("service", "x")),
                                     "timestamped": bool(supplier.timestamped)}
    if isinstance(supplier, CollectSink):
        return "collect", {}
    if isinstance(supplier, ToDictSink):
        return "to_dict", {}
    if isinstance(supplier, PandasSink):
        return "pandas", {}
    if isinstance(supplier, CallbackSink):
        return "callback", {"fn": code(supplier.fn, "fn")}
    if isinstance(supplier, FilesSink):
        return "files_sink", {"directory": supplier.directory, "encoding": supplier.encoding}
    if isinstance(supplier, LatencySink):
        return "latency", {"limit": supplier.limit}
    if supplier is NoopSinkP:
        return "noop", {}
    if type(supplier).__module__ == "jetbench.spark.dataframe_sources":
        return _read_spark(supplier, ns)
    if isinstance(supplier, type) and issubclass(supplier, Processor):
        path = class_path(supplier)
        for k in palette.kinds():
            if k.preset.get("cls") == path:
                return k.id, {"cls": path}
        return "processor", {"cls": path}
    return None


def _read_spark(supplier: Any, ns: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    from ...spark.dataframe_sources import DataFrameSource, ParquetSource

    decoder = supplier.decoder
    common = {"as_": decoder.kind, "timestamp": decoder.timestamp or ""}
    if isinstance(supplier, ParquetSource):
        names = list(decoder.names)
        columns = "" if names == list(supplier.schema.names) else repr(names)
        return "spark_parquet", {"path": supplier.path, "columns": columns, "engine": "arrow", **common}
    if isinstance(supplier, DataFrameSource):
        name = next((k for k, value in ns.items() if value is supplier.df and k.isidentifier()
                     and not k.startswith("_")), None)
        if name is None:
            raise Unreadable("a Spark DataFrame object: bind it to a name in the notebook to edit it here")
        return "spark_dataframe", {"df": name, "columns": "", **common}
    return None


def _read_op(op: Any, code: Callable[..., str]) -> dict[str, Any]:
    """The ``op`` / ``value`` params of an aggregate operation made by the library."""
    recipe = getattr(op, "recipe", None)
    if recipe is None:
        raise Unreadable("its aggregate operation is hand-made; the palette offers " + ", ".join(OPS))
    name, args = recipe
    if name not in OPS:
        raise Unreadable(f"its aggregate operation {name} is not one the palette offers ({', '.join(OPS)})")
    params: dict[str, Any] = {"op": name}
    if OPS[name]:
        params["value"] = code(args[0], "value")
    return params


def _literal_code(value: Any) -> str | None:
    """Source text that evaluates to ``value``: a range, or a literal (checked by `ast.literal_eval`)."""
    if isinstance(value, range):
        return repr(value)
    if isinstance(value, list | tuple | str | bytes | dict | set | frozenset):
        text = repr(value)
        if len(text) > 10_000:
            return None
        try:
            if ast.literal_eval(text) == value:
                return text
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    return None
