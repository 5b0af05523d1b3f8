#!/usr/bin/env bash
# Set up (idempotent) and run the jetbench word-count demo. Extra args go to `jetbench demo`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/setup.sh
exec .venv/bin/jetbench demo "$@"
