"""`benchmarks/instructions.py --breakdown`: reading ``callgrind_annotate`` output into
instructions per function, and the table of the functions the engine pays above its loop
(the profiles themselves need valgrind and minutes: not run here)."""

from __future__ import annotations

from benchmark_scripts import load_benchmark

instructions = load_benchmark("instructions")

ANNOTATED = """\
--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
1,753,567,436 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                    file:function
--------------------------------------------------------------------------------
461,474,035 (26.32%)  /tmp/build/Python-3.11.7/Python/ceval.c:_PyEval_EvalFrameDefault'2 [/lib/libpython3.11.so.1.0]
 61,766,027 ( 3.52%)  /tmp/build/Python-3.11.7/Objects/dictobject.c:_Py_dict_lookup [/lib/libpython3.11.so.1.0]
      1,000 ( 0.00%)  /tmp/build/Python-3.11.7/Python/ceval.c:_PyEval_EvalFrameDefault [/lib/libpython3.11.so.1.0]
        465 ( 0.00%)  ./malloc/./malloc/malloc.c:tcache_init.part.0 [/usr/lib/x86_64-linux-gnu/libc.so.6]
         12 ( 0.00%)  __native__engine.c:CPyDef_worker___CooperativeWorker___run

-- Auto-annotated source: /build/mypyc/jetbench/core/__native__engine.c
572,991,915 (32.68%)  => /build/__native__engine.c:CPyDef_transform___TransformP___process (1,176x)
"""


def test_function_costs_reads_each_function_once_recursion_levels_added():
    costs = instructions.function_costs(ANNOTATED)
    assert costs == {
        "ceval.c:_PyEval_EvalFrameDefault": 461_475_035,
        "dictobject.c:_Py_dict_lookup": 61_766_027,
        "malloc.c:tcache_init.part.0": 465,
        "__native__engine.c:CPyDef_worker___CooperativeWorker___run": 12,
    }


def test_function_costs_of_nothing():
    assert instructions.function_costs("") == {}
    assert instructions.function_costs("1,000 (100.0%)  PROGRAM TOTALS\n") == {}


def test_breakdown_orders_by_what_the_engine_pays_above_the_loop():
    engine = {"ceval": 2000.0, "count_elements": 40.0, "map_next": 60.0, "same": 5.0}
    loop = {"ceval": 1700.0, "dict_get": 25.0, "same": 5.0}
    lines = instructions.breakdown(engine, loop, rows=4)
    assert lines[1].split() == ["375.0", "2105.0", "1730.0", "(all)"]
    named = [line.split()[-1] for line in lines[2:]]
    assert named == ["ceval", "map_next", "count_elements", "dict_get"]  # "same" differs by 0: left out
    assert lines[-1].split()[:3] == ["-25.0", "0.0", "25.0"]
