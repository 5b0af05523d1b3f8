#!/usr/bin/env bash
# Set up (idempotent), lint with ruff, type-check with mypy, then run the whole test suite.
# Extra args are passed to pytest (after the defaults -q -ra); paths are
# relative to the repo root.
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

echo "[test] pytest -q -ra $*"
pytest_rc=0
.venv/bin/python -m pytest -q -ra "$@" || pytest_rc=$?

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

if [[ $ruff_rc -ne 0 || $mypy_rc -ne 0 || $pytest_rc -ne 0 ]]; then
    exit 1
fi
echo "[test] OK: ruff and mypy clean, tests passed"
