#!/usr/bin/env bash
# Set up (idempotent), lint with ruff, type-check with mypy, then run the whole test suite on the
# compiled engine (setup.sh compiles it with mypyc), then the engine's and the processors' tests
# again on the same sources interpreted (JETBENCH_PURE_PYTHON=1; jetbench/core/compiled.py).
# Extra args are passed to the first pytest run (after the defaults -q -ra); paths are
# relative to the repo root. JETBENCH_TEST_PURE_PASS=0 skips the second run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/setup.sh

echo "[test] ruff check ."
ruff_rc=0
.venv/bin/ruff check . || ruff_rc=$?

# jetbench as a whole: core and processors strictly, the rest with mypy's defaults
# (see [tool.mypy] in pyproject.toml)
echo "[test] mypy"
mypy_rc=0
.venv/bin/mypy || mypy_rc=$?

# the compiled build must be the one loaded (tests/core/test_compiled_build.py checks it), unless
# this machine could not compile it (setup.sh warned): then the whole suite runs interpreted
expect=compiled
if ! build_status="$(.venv/bin/python jetbench/core/compiled.py 2>&1)"; then
    echo "[test] WARNING: $build_status: the whole suite runs on the pure build" >&2
    expect=pure
fi

echo "[test] pytest -q -ra $* (engine: $expect)"
pytest_rc=0
JETBENCH_EXPECT_BUILD=$expect .venv/bin/python -m pytest -q -ra "$@" || pytest_rc=$?

pure_rc=0
if [[ $expect == compiled && "${JETBENCH_TEST_PURE_PASS:-1}" != 0 ]]; then
    pure_tests=(tests/core tests/processors jetbench/core jetbench/processors)
    echo "[test] JETBENCH_PURE_PYTHON=1 pytest -q -ra ${pure_tests[*]} (engine: pure)"
    JETBENCH_PURE_PYTHON=1 JETBENCH_EXPECT_BUILD=pure .venv/bin/python -m pytest -q -ra "${pure_tests[@]}" \
        || pure_rc=$?
fi

if [[ $pytest_rc -eq 5 ]]; then
    echo "[test] FAILED: pytest collected no tests (exit 5); the suite should never be empty" >&2
fi
if [[ $ruff_rc -ne 0 ]]; then
    echo "[test] FAILED: ruff check exited $ruff_rc" >&2
fi
if [[ $mypy_rc -ne 0 ]]; then
    echo "[test] FAILED: mypy exited $mypy_rc" >&2
fi
if [[ $pytest_rc -ne 0 && $pytest_rc -ne 5 ]]; then
    echo "[test] FAILED: pytest exited $pytest_rc" >&2
fi
if [[ $pure_rc -ne 0 ]]; then
    echo "[test] FAILED: the pure-build pass of pytest exited $pure_rc" >&2
fi

if [[ $ruff_rc -ne 0 || $mypy_rc -ne 0 || $pytest_rc -ne 0 || $pure_rc -ne 0 ]]; then
    exit 1
fi
echo "[test] OK: ruff and mypy clean, tests passed (engine: $expect$([[ $expect == compiled ]] && echo ', and pure'))"
