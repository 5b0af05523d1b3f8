#!/usr/bin/env bash
# Build the notebook widgets' front end: widgets/src/*.{js,css} -> jetbench/_static/.
#
# The widgets are dependency-free ES modules (anywidget ESM), so the "build" checks them with
# node (syntax) and copies them into the package, where jetbench.notebook loads them from an
# installed package. If a widget ever needs a third-party npm package, widgets/package.json
# names it and this script runs `npm ci` + a bundler here; built code is never committed
# (jetbench/_static/ is in .gitignore). Idempotent: unchanged files are left alone.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$ROOT/widgets/src"
OUT="$ROOT/jetbench/_static"

log() { printf '[build_widgets] %s\n' "$*" >&2; }

mkdir -p "$OUT"
changed=0
for f in "$SRC"/*.js "$SRC"/*.css; do
    [[ -e "$f" ]] || continue
    name="$(basename "$f")"
    if [[ "$f" == *.js ]] && command -v node >/dev/null 2>&1; then
        # widgets/package.json says "type": "module", so node parses these as ES modules
        node --check "$f" || { log "syntax error in $f"; exit 1; }
    fi
    if ! cmp -s "$f" "$OUT/$name"; then
        cp "$f" "$OUT/$name.tmp" && mv "$OUT/$name.tmp" "$OUT/$name"
        changed=$((changed + 1))
    fi
done
if ((changed)); then
    log "built $changed file(s) into jetbench/_static/"
else
    log "widgets up to date"
fi
