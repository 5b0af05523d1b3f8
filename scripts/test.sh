#!/usr/bin/env bash
# The test command. Sets up (scripts/setup.sh, idempotent), then lints with ruff, type-checks with
# mypy and runs the tests; every step's exit code is checked, and it exits 1 if any failed.
#
#   bash scripts/test.sh            the whole suite (the README's test command; .ci/run runs it):
#                                   nothing skipped, slow, browser and Spark tests included
#   bash scripts/test.sh --fast     the fast lane, to run after each change (a few minutes): the
#                                   same ruff and mypy, and every test not marked slow, browser,
#                                   serial, spark or kafka (tests/conftest.py marks those using Spark)
#                                   outside tests/spark, tests/beam and tests/browser, on the
#                                   compiled build, each hypothesis property on a quarter of its
#                                   examples; the whole suite still runs before a merge
#   bash scripts/test.sh [--fast] ARGS...   ARGS go to pytest (after the defaults -q -ra), e.g.
#                                   a path relative to the repo root, -x, -k NAME, --durations=30
#
# How the whole suite uses a 2-core machine:
#   1. the tests marked `serial` (they measure CPU or timing) run first, with no other tests,
#      compiled then pure, while ruff and mypy (one process each) use the other core;
#   2. then, side by side: the rest of the suite on the compiled build on two
#      pytest-xdist workers (-n 2 --dist loadgroup: tests sharing one Spark session, one
#      JupyterLab server or one built wheel stay on one worker, see XDIST_GROUPS in
#      tests/conftest.py); and the engine's and the processors' tests on the same sources
#      interpreted (JETBENCH_PURE_PYTHON=1; jetbench/core/compiled.py) in a third process, whose
#      output is printed when it ends; the tests marked `own_build` (their subprocesses choose
#      the build themselves, e.g. the SIGKILL check) would run the same there, so run once.
#
# Environment: JETBENCH_TEST_WORKERS=N pytest-xdist workers (default 2; 0 runs in one process),
# JETBENCH_TEST_PURE_PASS=0 leaves out the pure-build pass, JETBENCH_TEST_EXAMPLES=F tries each
# hypothesis property on the share F of its examples (the fast lane's default: 0.25),
# JETBENCH_TEST_PURE_EXAMPLES=F the same for the pure-build pass (default 0.5).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

fast=0
if [[ "${1:-}" == --fast ]]; then
    fast=1
    shift
fi
workers="${JETBENCH_TEST_WORKERS:-2}"
xdist=()
if [[ "$workers" != 0 ]]; then
    xdist=(-n "$workers" --dist loadgroup)
fi

bash scripts/setup.sh

# Bytecode caches (__pycache__, ignored by git) even where the environment sets
# PYTHONDONTWRITEBYTECODE: the first process to import a module writes its cache and every later
# one reads it. Without them each of the suite's hundreds of kernels, child scripts and Spark
# Python workers compiles jetbench from source (measured: a child that imports jetbench and runs
# a job, 0.45 CPU-s against 0.24), and each pytest run rewrites the asserts of every test
# module again (collecting the suite: 19.7 CPU-s, 11.2 from the caches of an earlier run).
unset PYTHONDONTWRITEBYTECODE

logs="$(mktemp -d "${TMPDIR:-/tmp}/jetbench-test.XXXXXX")"
trap 'rm -rf "$logs"' EXIT

# the compiled build must be the one loaded (tests/core/test_compiled_build.py checks it), unless
# this machine could not compile it (setup.sh warned): then the whole suite runs interpreted
expect=compiled
build_rc=0
if ! build_status="$(.venv/bin/python jetbench/core/compiled.py 2>&1)"; then
    echo "[test] WARNING: $build_status: the whole suite runs on the pure build" >&2
    expect=pure
    # with a C compiler here, a compile that failed is a defect (its output: .venv/.jetbench-compile.log),
    # not a machine without one: the suite still runs, on the pure build, and the command fails
    if command -v cc >/dev/null 2>&1 && [[ "${JETBENCH_COMPILE:-1}" != 0 ]]; then
        build_rc=1
    fi
fi
pure_pass=0
if [[ $expect == compiled && "${JETBENCH_TEST_PURE_PASS:-1}" != 0 && $fast == 0 ]]; then
    pure_pass=1
fi
pure_tests=(tests/core tests/processors jetbench/core jetbench/processors)

pytest() {  # pytest ENGINE ARGS...: one pytest run on the compiled or the pure build
    local engine="$1"
    shift
    if [[ $engine == pure ]]; then
        JETBENCH_PURE_PYTHON=1 JETBENCH_EXPECT_BUILD=pure .venv/bin/python -m pytest -q -ra "$@"
    else
        JETBENCH_EXPECT_BUILD=$expect .venv/bin/python -m pytest -q -ra "$@"
    fi
}

# ruff and mypy first, in the background: on a fresh clone mypy has no cache (about 40 CPU-s
# here), and beside the serial tests below it takes the core they leave idle (one process each:
# a load of 2 on 2 cores, not the load that made them serial)
echo "[test] ruff check . and mypy (in the background)"
.venv/bin/ruff check . >"$logs/ruff" 2>&1 &
ruff_pid=$!
# jetbench as a whole: core and processors strictly, the rest with mypy's defaults
# (see [tool.mypy] in pyproject.toml)
.venv/bin/mypy >"$logs/mypy" 2>&1 &
mypy_pid=$!

# 1. alone. Collecting the whole suite takes a while (every module is imported, for its
# doctests too): unless ARGS name paths, only the files that mark a test serial are collected
# here. Exit 5 (none of the tests selected is marked serial) is not a failure of this step.
serial_rc=0
serial_pure_rc=0
if [[ $fast == 0 ]]; then
    serial_paths=()
    for arg in "$@"; do
        [[ $arg != -* && -e ${arg%%::*} ]] && serial_paths+=("$arg")
    done
    if [[ ${#serial_paths[@]} -eq 0 ]]; then
        mapfile -t serial_paths < <(grep -rlE --include='*.py' 'mark\.serial\b' tests jetbench | sort)
    fi
    options=()
    for arg in "$@"; do
        [[ $arg == -* || ! -e ${arg%%::*} ]] && options+=("$arg")
    done
    if [[ ${#serial_paths[@]} -gt 0 ]]; then
        echo "[test] pytest -q -ra -m serial ${serial_paths[*]} (engine: $expect; alone)"
        pytest "$expect" -m serial -p no:xdist "${options[@]}" "${serial_paths[@]}" || serial_rc=$?
        [[ $serial_rc -eq 5 ]] && serial_rc=0
    fi
    pure_serial=()
    for path in "${serial_paths[@]}"; do
        for pure_path in "${pure_tests[@]}"; do
            [[ $path == "$pure_path" || $path == "$pure_path"/* ]] && pure_serial+=("$path")
        done
    done
    if [[ $pure_pass == 1 && ${#pure_serial[@]} -gt 0 ]]; then
        echo "[test] JETBENCH_PURE_PYTHON=1 pytest -q -ra -m serial ${pure_serial[*]} (engine: pure; alone)"
        pytest pure -m serial -p no:xdist "${pure_serial[@]}" || serial_pure_rc=$?
        [[ $serial_pure_rc -eq 5 ]] && serial_pure_rc=0
    fi
fi

# 2. side by side (ruff and mypy may still be running)
pure_pid=
if [[ $pure_pass == 1 ]]; then
    echo "[test] JETBENCH_PURE_PYTHON=1 pytest -q -ra -m 'not serial and not own_build' ${pure_tests[*]} (engine: pure; in the background)"
    # each hypothesis property tries half its examples here: the compiled pass tries them all on
    # the same sources, and this pass shows the interpreted build gives the same results
    JETBENCH_TEST_EXAMPLES="${JETBENCH_TEST_PURE_EXAMPLES:-0.5}" \
        pytest pure -m "not serial and not own_build" -p no:xdist "${pure_tests[@]}" >"$logs/pure" 2>&1 &
    pure_pid=$!
fi

if [[ $fast == 1 ]]; then
    # each hypothesis property on a quarter of its examples (tests/hypothesis_budget.py)
    export JETBENCH_TEST_EXAMPLES="${JETBENCH_TEST_EXAMPLES:-0.25}"
    selection=(-m "not slow and not browser and not serial and not spark and not kafka" --ignore=tests/spark --ignore=tests/beam
               --ignore=tests/browser --ignore=jetbench/spark --ignore=jetbench/beam)
else
    selection=(-m "not serial")
fi
echo "[test] pytest -q -ra ${xdist[*]} ${selection[*]} $* (engine: $expect)"
pytest_rc=0
pytest "$expect" "${xdist[@]}" "${selection[@]}" "$@" || pytest_rc=$?

ruff_rc=0
wait "$ruff_pid" || ruff_rc=$?
echo "[test] ruff check . (exit $ruff_rc):"
cat "$logs/ruff"
mypy_rc=0
wait "$mypy_pid" || mypy_rc=$?
echo "[test] mypy (exit $mypy_rc):"
cat "$logs/mypy"
pure_rc=0
if [[ -n $pure_pid ]]; then
    wait "$pure_pid" || pure_rc=$?
    echo "[test] the pure-build pass (exit $pure_rc):"
    cat "$logs/pure"
fi

if [[ $build_rc -ne 0 ]]; then
    echo "[test] FAILED: the engine did not compile although this machine has a C compiler (see .venv/.jetbench-compile.log)" >&2
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
if [[ $serial_rc -ne 0 ]]; then
    echo "[test] FAILED: the serial tests (pytest -m serial) exited $serial_rc" >&2
fi
if [[ $serial_pure_rc -ne 0 ]]; then
    echo "[test] FAILED: the serial tests on the pure build exited $serial_pure_rc" >&2
fi
if [[ $pytest_rc -ne 0 && $pytest_rc -ne 5 ]]; then
    echo "[test] FAILED: pytest exited $pytest_rc" >&2
fi
if [[ $pure_rc -ne 0 ]]; then
    echo "[test] FAILED: the pure-build pass of pytest exited $pure_rc" >&2
fi

if [[ $build_rc -ne 0 || $ruff_rc -ne 0 || $mypy_rc -ne 0 || $serial_rc -ne 0 || $serial_pure_rc -ne 0 || $pytest_rc -ne 0 \
      || $pure_rc -ne 0 ]]; then
    exit 1
fi
if [[ $fast == 1 ]]; then
    echo "[test] OK (fast lane): ruff and mypy clean, the fast tests passed (engine: $expect)"
else
    echo "[test] OK: ruff and mypy clean, tests passed (engine: $expect$([[ $pure_pass == 1 ]] && echo ', and pure'))"
fi
