"""`benchmarks/nexmark_cycles.py`: a Nexmark query's estimated cycles, engine against loop, from
callgrind's cache and branch simulation; the estimate itself, reading a profile's totals, and
one real run under valgrind on a few thousand events."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from benchmark_scripts import BENCHMARKS, load_benchmark

SCRIPT = BENCHMARKS / "nexmark_cycles.py"
cycles = load_benchmark("nexmark_cycles")

PROFILE = """\
# callgrind format
version: 1
creator: callgrind-3.19.0
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim
fn=(1) main
1 5 0 0 0 0 0 0 0 0 0 0 0 0
totals: 1000000 400000 200000 100 2000 3000 1 20 30 50000 4000 9000 1000
"""


def test_totals_are_read_by_event_name_and_weighed_as_kcachegrind_does():
    t = cycles.totals(PROFILE)
    assert t["Ir"] == 1_000_000 and t["D1mw"] == 3000 and t["Bim"] == 1000
    # Ir + 10 x (100 + 2000 + 3000) + 100 x (1 + 20 + 30) + 10 x (4000 + 1000)
    assert cycles.estimated_cycles(t) == 1_000_000 + 51_000 + 5_100 + 50_000


ANNOTATED = """\
--------------------------------------------------------------------------------
Ir          I1mr  D1mr      D1mw  ILmr DLmr DLmw Bc Bcm     Bi Bim  file:function
--------------------------------------------------------------------------------
2,000 (50.0%) 1 (10.0%) 20 (5.0%) . . 2 (1.0%) . . 30 (3.0%) . .  ceval.c:_PyEval_EvalFrameDefault'2 [/lib/libpython3.11.so]
1,000 (25.0%) . 10 (2.5%) 5 (1.0%) . . . . . . 4 (1.0%)  /src/Objects/dictobject.c:_Py_dict_lookup [/lib/libpython3.11.so]
  500 (12.5%) . . . . . . . . . .  ceval.c:_PyEval_EvalFrameDefault [/lib/libpython3.11.so]
"""


def test_functions_are_read_with_every_event_and_weighed_as_the_totals_are():
    from instructions import function_events

    events = function_events(ANNOTATED)
    assert events["ceval.c:_PyEval_EvalFrameDefault"] == {
        "Ir": 2500, "I1mr": 1, "D1mr": 20, "D1mw": 0, "ILmr": 0, "DLmr": 2, "DLmw": 0, "Bc": 0, "Bcm": 30, "Bi": 0,
        "Bim": 0}
    assert events["dictobject.c:_Py_dict_lookup"]["Bim"] == 4
    # 2500 + 10 x 21 + 100 x 2 + 10 x 30 = 3210; 1000 + 10 x 15 + 10 x 4 = 1190
    assert [cycles.estimated_cycles(c) for c in events.values()] == [3210, 1190]


def test_a_profile_without_totals_is_refused():
    with pytest.raises(SystemExit, match="no totals"):
        cycles.totals("events: Ir\n")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed (scripts/setup.sh installs it)")
def test_a_real_run_counts_both_sides():
    from jetbench.core.compiled import build_info

    if build_info().kind != "compiled":
        pytest.skip("the engine side is counted from the compiled worker loop (pure build loaded)")
    done = subprocess.run([sys.executable, str(SCRIPT), "--queries", "1", "--events", "2000"],
                          capture_output=True, text=True, timeout=600, cwd=SCRIPT.parent.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {line.split()[1]: line.split() for line in done.stdout.splitlines() if line.split()[:1] == ["Q1"]}
    assert float(rows["loop"][-1]) > 0 and float(rows["engine"][-1]) > 0
    assert "Q1 loop/engine" in done.stdout
