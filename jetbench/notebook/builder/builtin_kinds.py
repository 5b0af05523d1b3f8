"""The catalogue of built-in palette kinds, gathered from where each kind is declared.

Each processor module of `jetbench.processors` declares its kinds in ``BUILDER_KINDS`` beside
its processor (how the builder shows, builds, reads back and writes it as code: see
`jetbench.processors.builder_kind`); so do the Spark sources (`jetbench.spark.dataframe_sources`,
offered when pyspark imports). A new processor module with ``BUILDER_KINDS`` appears in the
palette with no change here. The builder adds two kinds of its own: a `Processor` subclass
given by name, and the "custom" vertex that keeps a supplier the palette cannot show.

>>> ids = [k.id for k in builtin_kinds()]
>>> ids[:3], "hash_join" in ids, ids[-2:]
(['items', 'generator', 'files'], True, ['processor', 'custom'])
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
from typing import Any

from ... import processors
from ...processors.builder_kind import BuilderError, Kind, Param
from .code_text import resolve_class

#: modules outside `jetbench.processors` that declare kinds, offered when pyspark imports
SPARK_KIND_MODULES = ("jetbench.spark.dataframe_sources",)

#: where the built-in kinds stand within their category in the palette (the rest follow, by module)
PALETTE_ORDER = ("items", "generator", "files", "test_stream", "spark_dataframe", "spark_parquet", "spark_table",
                 "map", "filter", "flat_map", "transform", "map_using_service", "map_using_service_async", "map_stateful",
                 "aggregate_by_key", "accumulate_by_key", "combine_by_key", "global_aggregate",
                 "global_accumulate", "global_combine", "rolling_aggregate", "distinct", "sort", "hash_join", "co_group", "insert_watermarks", "window",
                 "collect", "to_dict", "callback", "files_sink", "latency", "pandas", "noop")


@functools.cache
def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@functools.cache
def spark_available() -> bool:
    """True if pyspark (and pyarrow) import. Importing them starts no Spark: a session is only
    made when a Spark vertex is built (run or ``builder.dag``), never for the palette."""
    if not (_installed("pyspark") and _installed("pyarrow")):
        return False
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except Exception:  # a broken install: leave the Spark kinds out
        return False
    return True


def declared_kinds() -> list[Kind]:
    """Every kind a module declares in ``BUILDER_KINDS`` whose ``requires`` are installed."""
    names = sorted(f"{processors.__name__}.{m.name}" for m in pkgutil.iter_modules(processors.__path__))
    if spark_available():
        names += SPARK_KIND_MODULES
    kinds = []
    for name in names:
        for kind in getattr(importlib.import_module(name), "BUILDER_KINDS", ()):
            if all(_installed(module) for module in kind.requires):
                kinds.append(kind)
    rank = {kind_id: i for i, kind_id in enumerate(PALETTE_ORDER)}
    return sorted(kinds, key=lambda k: rank.get(k.id, len(rank)))


def builtin_kinds() -> list[Kind]:
    """The kinds every palette starts with: the declared ones, then the builder's own two."""
    return [*declared_kinds(), PROCESSOR_KIND, CUSTOM_KIND]


def _processor_code(p: dict[str, Any], f: dict[str, Any]) -> tuple[str, set[str]]:
    path = p["cls"].strip()
    module, _, name = path.rpartition(".")
    if module:
        return name, {f"from {module} import {name}"}
    return path, set()


def _no_build(p: dict[str, Any], f: dict[str, Any], ns: dict[str, Any]) -> Any:
    raise BuilderError("a custom supplier must be attached with set_supplier()")


#: a `Processor` subclass (a class is a supplier: called once per instance)
PROCESSOR_KIND = Kind(
    id="processor", label="processor class", category="custom", inputs=True, outputs=True,
    params=(Param("cls", "str", "", help="a Processor subclass: a name in the notebook or module.Class"),),
    build=lambda p, f, ns: resolve_class(p["cls"], ns), code=_processor_code, description="any Processor subclass")

#: a supplier from code the palette does not know, kept as the object itself
CUSTOM_KIND = Kind(
    id="custom", label="custom supplier", category="custom", inputs=True, outputs=True,
    params=(Param("label", "str", "", optional=True, help="what the supplier was (kept from the DAG it came from)"),
     Param("reason", "str", "", optional=True, help="why it is not shown as an editable kind")),
    build=_no_build, code=lambda p, f: ("custom_suppliers[{name!r}]", set()),
    description="a supplier from code the palette does not know; kept as the object itself")
