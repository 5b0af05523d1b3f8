#!/usr/bin/env bash
# mypyc against Cython on the same engine sources (issue 17 §3: "if Cython's pure-Python mode
# measures clearly better than mypyc for the same sources, use it and say why with figures").
#
#   bash benchmarks/cython_compare.sh [WORKDIR]     # default WORKDIR: /tmp/jetbench-cython
#
# Makes two copies of this checkout's committed tree (HEAD) in WORKDIR: `mypyc/`, compiled by
# setup.py as scripts/setup.sh does, and `cython/`, the same modules
# (jetbench.core.compiled.COMPILED_MODULES) compiled by cythonize from the same .py files, with no
# Cython-specific annotations. Cython is pip-installed into WORKDIR/cython-pkg for this script
# only; jetbench never needs it. jetbench.core.compiled loads a build only when mypyc's group
# library imports, so the Cython copy gets a one-line stand-in module of that name (a measurement
# device, never part of a build). Then benchmarks/round_cost.py compares, interleaved:
# Cython against mypyc (ratio > 1: mypyc's rounds are cheaper), and each against its own pure run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$ROOT/.venv/bin/python"
WORK="${1:-/tmp/jetbench-cython}"
CYTHON_VERSION="3.3.1"

rm -rf "$WORK/mypyc" "$WORK/cython"
mkdir -p "$WORK/mypyc" "$WORK/cython"
git -C "$ROOT" archive HEAD | tar -x -C "$WORK/mypyc"
git -C "$ROOT" archive HEAD | tar -x -C "$WORK/cython"

[[ -d "$WORK/cython-pkg/Cython" ]] || "$PY" -m pip install -q --target "$WORK/cython-pkg" "cython==$CYTHON_VERSION"

echo "[cython_compare] compiling with mypyc" >&2
(cd "$WORK/mypyc" && "$PY" setup.py -q build_ext --inplace >/dev/null 2>&1)
"$PY" "$WORK/mypyc/jetbench/core/compiled.py" >&2

echo "[cython_compare] compiling with Cython $CYTHON_VERSION" >&2
(cd "$WORK/cython" && PYTHONPATH="$WORK/cython-pkg" "$PY" - <<'EOF'
import runpy
from pathlib import Path

from Cython.Build import cythonize
from setuptools import setup

core = Path("jetbench/core")
compiled = runpy.run_path(str(core / "compiled.py"))
setup(
    ext_modules=cythonize([str(core / f"{m}.py") for m in compiled["COMPILED_MODULES"]], language_level=3, quiet=True),
    script_args=["build_ext", "--inplace", "-q"],
)
(core / "_engine__mypyc.py").write_text("# stand-in for mypyc's group library: the Cython comparison only\n")
compiled["write_manifest"](core, compiled["source_hashes"](core))
EOF
) >/dev/null 2>&1
(cd "$WORK/cython" && "$PY" -c "import jetbench.core.tasklet as t; print(\"cython copy loads\", t.__file__)")

cd "$WORK/mypyc"
echo "== Cython (baseline) against mypyc (this) ==" 
"$PY" benchmarks/round_cost.py --baseline "$WORK/cython"
echo "== mypyc: pure against compiled =="
"$PY" benchmarks/round_cost.py --pure-vs-compiled
cd "$WORK/cython"
echo "== Cython: pure against compiled =="
"$PY" benchmarks/round_cost.py --pure-vs-compiled
