"""The generic `ProcessorSupplier` and the built-in suppliers built on it."""

from __future__ import annotations

import pickle

import pytest

from jetbench import DAG, Edge, ExecutionService, JetbenchError
from jetbench.core.plan import merge_parts
from jetbench.processors import (
    ProcessorSupplier,
    accumulate_by_key,
    aggregate_by_key,
    collect_sink,
    combine_by_key,
    counting,
    global_accumulate,
    global_aggregate,
    global_combine,
    items_source,
    map_processor,
    supplier,
)
from jetbench.processors.aggregate_operation import summing
from jetbench.processors.aggregation import AccumulateByKeyP, CombineByKeyP
from jetbench.processors.callback_sink import callback_sink
from jetbench.processors.co_group import co_group
from jetbench.processors.files_sink import files_sink
from jetbench.processors.generator_source import generator_source
from jetbench.processors.hash_join import hash_join
from jetbench.processors.insert_watermarks import insert_watermarks
from jetbench.processors.latency_sink import latency_sink
from jetbench.processors.map_using_service import map_using_service
from jetbench.processors.map_using_service_async import map_using_service_async
from jetbench.processors.pandas_sink import pandas_sink
from jetbench.processors.to_dict_sink import ToDictSinkP, to_dict_sink


def _key(x):
    return x % 3


def test_params_by_name_with_defaults_call_and_attributes():
    s = ProcessorSupplier(AccumulateByKeyP, _key, counting(), finish=True, label="agg")
    assert s.params == {"key_fn": _key, "op": counting(), "finish": True, "values_only": False, "emit_empty": False}
    assert s.key_fn is _key and s.op is counting() and repr(s) == "agg"
    a, b = s(), s()
    assert isinstance(a, AccumulateByKeyP) and a is not b and a.key_fn is _key
    # the params are what the call uses
    s.params["key_fn"] = abs
    assert s().key_fn is abs
    with pytest.raises(AttributeError):
        _ = s.nothing_like_this


def test_bad_arguments_fail_when_the_supplier_is_made():
    with pytest.raises(JetbenchError, match="agg: missing a required argument: 'op'"):
        ProcessorSupplier(AccumulateByKeyP, _key, label="agg")
    with pytest.raises(JetbenchError, match="unexpected keyword"):
        supplier(ToDictSinkP, bogus=1)
    with pytest.raises(JetbenchError, match="processor class or factory"):
        ProcessorSupplier(42)


def test_merge_results_and_a_job_with_generic_suppliers():
    def make(*items, scale=1):
        from jetbench.processors.items_source import ItemsSourceP

        return ItemsSourceP([x * scale for x in items])

    s = supplier(make, 1, 2, 3, scale=10)
    assert s.params == {"items": (1, 2, 3), "scale": 10}
    dag = DAG()
    src = dag.new_vertex("src", s, 1)
    out = dag.new_vertex("out", supplier(ToDictSinkP, merge_results=merge_parts), 2)
    pairs = dag.new_vertex("pairs", map_processor(lambda x: (x, -x)))
    dag.edge(Edge.between(src, pairs)).edge(Edge.between(pairs, out))
    assert ExecutionService().run(dag) == {10: -10, 20: -20, 30: -30}


def test_built_in_suppliers_expose_their_parameters():
    op = summing(len)
    assert aggregate_by_key(_key, op).params["finish"] is True
    assert (accumulate_by_key(_key, op).label, accumulate_by_key(_key, op).key_fn) == ("accumulate_by_key", _key)
    assert combine_by_key(op).op is op and combine_by_key(op).processor is CombineByKeyP
    assert [s.label for s in (global_accumulate(op), global_combine(op), global_aggregate(op))] == [
        "global_accumulate", "global_combine", "global_aggregate"]
    assert global_combine(op).params["values_only"] is True
    j = hash_join(_key, abs, "left")
    assert (j.left_key, j.right_key, j.how, j.timestamped, repr(j)) == (_key, abs, "left", False, "hash_join(how='left')")
    assert (co_group(_key, abs).left_key, repr(co_group(_key, abs))) == (_key, "co_group()")
    m = map_using_service(dict, _key)
    assert (m.service_factory, m.fn, repr(m)) == (dict, _key, "map_using_service(_key)")
    a = map_using_service_async(dict, _key, max_concurrent=3)
    assert (a.async_fn, a.params["async_fn"], a.max_concurrent, a.preserve_order) == (_key, _key, 3, True)
    g = generator_source(50.0, _key, False, 7)
    assert (g.rate_per_s, g.item_fn, g.timestamped, g.count) == (50.0, _key, False, 7)
    w = insert_watermarks(_key, 5, 100)
    assert (w.ts_fn, w.allowed_lag, w.throttle_frame, w.idle_timeout_ms) == (_key, 5, 100, 60_000)
    assert items_source("ab").items == "ab" and map_processor(_key).transform.steps == (("map", _key),)
    assert files_sink("out").directory == "out" and callback_sink(print).fn is print and latency_sink(5).limit == 5
    assert to_dict_sink().merge_results([{"a": 1}, {"b": 2}]) == {"a": 1, "b": 2}
    assert collect_sink().merge_results([[1], [2]]) == [1, 2] and pandas_sink().merge_results([[1], [2]]).shape == (2, 1)
    assert counting().recipe == ("counting", ()) and op.recipe == ("summing", (len,))


def test_suppliers_pickle_with_their_parameters():
    for s in (aggregate_by_key(_key, counting()), hash_join(_key, _key), to_dict_sink(), generator_source(10.0, count=3),
              insert_watermarks(None)):
        copy = pickle.loads(pickle.dumps(s))
        assert type(copy) is type(s) and repr(copy) == repr(s)
        assert list(copy.params) == list(s.params) and type(copy()) is type(s())
    assert pickle.loads(pickle.dumps(to_dict_sink())).merge_results is merge_parts
