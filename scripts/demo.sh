#!/usr/bin/env bash
# Set up (idempotent), run the word-count demo on a corpus served by an embedded local Spark,
# then start JupyterLab on the notebooks (`jetbench lab`, 127.0.0.1 only, 01-getting-started
# open; Ctrl+C stops it). `--no-lab` (or JETBENCH_NO_LAB=1) stops after the demo; other
# arguments go to `jetbench demo`, e.g. `--lines 1000000 --threads 2`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

lab=1
[[ "${JETBENCH_NO_LAB:-0}" == 1 ]] && lab=0
demo_args=()
for arg in "$@"; do
    if [[ "$arg" == --no-lab ]]; then lab=0; else demo_args+=("$arg"); fi
done

bash scripts/setup.sh
.venv/bin/jetbench demo --source spark "${demo_args[@]}"
if ((lab)); then
    echo
    exec .venv/bin/jetbench lab
fi
