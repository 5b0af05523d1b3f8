"""A kind's parameters are declared once (`jetbench.processors.kind_params`): the supplier, its
checks, the pipeline stage and the builder's kind all come from the one dataclass, under one
name per parameter."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil

import pytest

import jetbench.processors as processors_package
from jetbench import Pipeline, run, sinks, sources
from jetbench.core.errors import JetbenchError
from jetbench.pipeline.errors import PipelineError
from jetbench.processors.aggregate_operation import counting
from jetbench.processors.builder_kind import LiteralReader
from jetbench.processors.hash_join import HashJoinP, hash_join
from jetbench.processors.kind_params import KindParamError, KindParams, op_names
from jetbench.processors.planning import StageSpec
from jetbench.processors.supplier import made_by


def declarations() -> list[type[KindParams]]:
    found = []
    for info in pkgutil.iter_modules(processors_package.__path__):
        module = importlib.import_module(f"jetbench.processors.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (issubclass(cls, KindParams) and cls.__module__ == module.__name__ and dataclasses.is_dataclass(cls)
                    and cls.function):  # not a base the kinds share
                found.append(cls)
    return found


DECLARATIONS = declarations()


def test_the_kinds_are_declared():
    names = {cls.function for cls in DECLARATIONS}
    assert names >= {"hash_join", "co_group", "map_using_service", "map_using_service_async", "callback_sink",
                     "files_sink", "files_source", "items_source", "event_stream_source", "generator_source",
                     "latency_sink", "insert_watermarks", "flat_map_stateful", "window_aggregate",
                     "aggregate_by_key", "accumulate_by_key", "combine_by_key", "global_aggregate",
                     "global_accumulate", "global_combine"}


@pytest.mark.parametrize("cls", DECLARATIONS, ids=lambda c: c.__name__)
def test_a_declaration_is_its_kind_s_supplier_function_and_its_builder_names_are_its_fields(cls):
    module = importlib.import_module(cls.__module__)
    assert getattr(module, cls.function) is cls  # the public supplier function is the declaration
    frozen = cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert frozen and not cls.__dataclass_params__.eq  # type: ignore[attr-defined]
    kinds = [k for k in getattr(module, "BUILDER_KINDS", ()) if k.build == cls.build]
    for kind in kinds:
        shown = {p.name for p in kind.params}
        fields = {f.name for f in dataclasses.fields(cls)}
        # one name per parameter: each builder parameter is a field, but an aggregate operation's
        # and a window's, which the builder shows as a choice and its numbers or function
        # (an operation field named otherwise, ``op1``, shows ``op1`` and ``value1``: `op_names`)
        values = {op_names(f.name)[1] for f in dataclasses.fields(cls) if f.name.startswith("op")}
        assert shown - fields <= {"op", "value", "window", "size", "slide", "gap", "early"} | values, (cls, shown - fields)
    if issubclass(cls, StageSpec):
        assert cls.kind != StageSpec.kind  # a stage names its kind


def test_hash_join_is_one_declaration_on_every_face():
    j = hash_join(len, abs, how="left")
    assert made_by(j, HashJoinP) and isinstance(j, StageSpec)
    assert j.params == {"left_key": len, "right_key": abs, "how": "left", "timestamped": False}
    assert isinstance(j(), HashJoinP) and j().how == "left"
    kind = next(k for k in importlib.import_module("jetbench.processors.hash_join").BUILDER_KINDS if k.id == "hash_join")
    assert [p.name for p in kind.params] == ["left_key", "right_key", "how", "timestamped"]
    assert kind.params[2].choices == ("inner", "left")
    code, imports = kind.code({"how": "left", "timestamped": False}, {"left_key": "len", "right_key": "abs"})
    assert (code, imports) == ("hash_join(len, abs, how='left')", {"from jetbench.processors.hash_join import hash_join"})
    built = kind.build({"how": "inner", "timestamped": True}, {"left_key": len, "right_key": abs}, {})
    assert built.params == {"left_key": len, "right_key": abs, "how": "inner", "timestamped": True}


@pytest.mark.parametrize("args, kwargs, message", [
    ((None, abs), {}, "hash_join: left_key must be callable, got None"),
    ((len, abs), {"how": "outer"}, "hash_join: how must be one of ('inner', 'left'), got 'outer'"),
])
def test_each_check_is_written_once_and_names_the_kind_and_the_parameter(args, kwargs, message):
    with pytest.raises(KindParamError) as info:
        hash_join(*args, **kwargs)
    assert str(info.value) == message and isinstance(info.value, JetbenchError)


def test_the_number_checks():
    from jetbench.processors.generator_source import generator_source
    from jetbench.processors.insert_watermarks import insert_watermarks

    for bad in (0, -1, True, "5", float("nan")):
        with pytest.raises(KindParamError, match=r"generator_source: rate_per_s must be a number > 0"):
            generator_source(bad)
    with pytest.raises(KindParamError, match="rate_per_s must be finite"):
        generator_source(float("inf"))
    with pytest.raises(KindParamError, match=r"count must be an int >= 0 or None, got 2.5"):
        generator_source(10, count=2.5)
    with pytest.raises(KindParamError, match=r"throttle_frame must be an int > 0, got 0"):
        insert_watermarks(None, throttle_frame=0)
    assert generator_source(10, count=None).count is None and insert_watermarks(None, idle_timeout_ms=None)


def test_a_stage_names_itself_in_a_refused_argument_and_a_declaration_is_a_stage():
    p = Pipeline()
    people = p.read_from(sources.items([(1, "ann")]))
    orders = p.read_from(sources.items([("tea", 1), ("pen", 2)]), )
    with pytest.raises(PipelineError, match=r"stage 'items-\d': hash_join: how must be one of"):
        orders.hash_join(people, lambda o: o[1], lambda person: person[0], how="outer")
    with pytest.raises(PipelineError, match="max_concurrent must be an int >= 1"):
        orders.map_using_service_async(dict, len, max_concurrent=0)
    # the supplier is the stage: stage.apply(...) plans it as Stage.hash_join does
    orders.apply(hash_join(lambda o: o[1], lambda person: person[0]), people).write_to(sinks.collect())
    assert run(p) == [(("tea", 1), (1, "ann"))]


def test_read_back_gives_the_builder_parameters_of_a_declared_supplier():
    from jetbench.processors.aggregation import BUILDER_KINDS as AGGREGATIONS
    from jetbench.processors.latency_sink import BUILDER_KINDS as LATENCY
    from jetbench.processors.latency_sink import latency_sink

    (latency,) = LATENCY
    assert latency.read(latency_sink(limit=7), LiteralReader()) == {"limit": 7}
    assert latency.read(hash_join(len, abs), LiteralReader()) is None
    combine = next(k for k in AGGREGATIONS if k.id == "global_combine")
    from jetbench.processors.aggregation import global_combine

    assert combine.read(global_combine(counting()), LiteralReader()) == {"op": "counting"}
    assert combine.code({"op": "counting"}, {"value": None}) == (
        "global_combine(aggregate.counting())",
        {"from jetbench.processors.aggregation import global_combine", "from jetbench import aggregate"})
