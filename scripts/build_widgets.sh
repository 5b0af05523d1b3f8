#!/usr/bin/env bash
# Build the notebook widgets' front end into jetbench/_static/ (anywidget ES modules + CSS).
#
#   builder.js   widgets/src/builder/index.jsx with React, React Flow (@xyflow/react) and elkjs,
#                bundled by esbuild into one minified ES module
#   builder.css  React Flow's stylesheet followed by widgets/src/builder/builder.css
#   dashboard.*  widgets/src/dashboard.{js,css}: no dependencies, syntax-checked and copied
#   progress.*   widgets/src/progress.{js,css}: the progress line of run()/join(), the same way
#   timeline*    widgets/src/timeline_view.js (the drawing the Timeline widget and the dashboard's
#                Timeline tab share; the package puts it in front of each), timeline.{js,css}: the same way
#
# The npm packages come from widgets/package-lock.json: `npm ci` runs only when node_modules is
# missing or the lock file changed (sha256 stamp in node_modules/). The bundle is rebuilt only
# when its inputs changed (sha256 stamp in jetbench/_static/). Nothing is fetched at run time;
# built code and node_modules are never committed (both are in .gitignore). Idempotent.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WIDGETS="$ROOT/widgets"
SRC="$WIDGETS/src"
OUT="$ROOT/jetbench/_static"

log() { printf '[build_widgets] %s\n' "$*" >&2; }
die() { printf '[build_widgets] ERROR: %s\n' "$*" >&2; exit 1; }

command -v node >/dev/null 2>&1 || die "node not found: run scripts/setup.sh (it installs nodejs and npm)"
command -v npm >/dev/null 2>&1 || die "npm not found: run scripts/setup.sh (it installs nodejs and npm)"

hash_files() { cat "$@" | sha256sum | cut -d' ' -f1; }

mkdir -p "$OUT"

# ------------------------------------------------------------------ npm packages

lock_stamp="$WIDGETS/node_modules/.jetbench-lock.sha256"
lock_want="$(hash_files "$WIDGETS/package.json" "$WIDGETS/package-lock.json")"
if [[ -x "$WIDGETS/node_modules/.bin/esbuild" && "$(cat "$lock_stamp" 2>/dev/null || true)" == "$lock_want" ]]; then
    log "npm packages up to date (package-lock.json unchanged)"
else
    log "installing npm packages (npm ci in widgets/)"
    (cd "$WIDGETS" && npm ci --no-audit --no-fund --loglevel=error >&2) || die "npm ci failed in widgets/"
    printf '%s\n' "$lock_want" >"$lock_stamp"
fi

# ------------------------------------------------------------------ builder: bundle

build_stamp="$OUT/.builder.sha256"
mapfile -t inputs < <(find "$SRC/builder" -type f | LC_ALL=C sort)
inputs+=("$WIDGETS/package-lock.json" "${BASH_SOURCE[0]}")
build_want="$(hash_files "${inputs[@]}")"
if [[ -f "$OUT/builder.js" && -f "$OUT/builder.css" && "$(cat "$build_stamp" 2>/dev/null || true)" == "$build_want" ]]; then
    log "builder bundle up to date"
else
    "$WIDGETS/node_modules/.bin/esbuild" "$SRC/builder/index.jsx" \
        --bundle --format=esm --platform=browser --target=es2020 --minify \
        --jsx=automatic --loader:.js=jsx \
        --define:process.env.NODE_ENV='"production"' \
        --log-level=warning \
        --outfile="$OUT/builder.js.tmp" || die "esbuild failed"
    cat "$WIDGETS/node_modules/@xyflow/react/dist/style.css" "$SRC/builder/builder.css" >"$OUT/builder.css.tmp"
    mv "$OUT/builder.js.tmp" "$OUT/builder.js"
    mv "$OUT/builder.css.tmp" "$OUT/builder.css"
    printf '%s\n' "$build_want" >"$build_stamp"
    log "built jetbench/_static/builder.js ($(( $(wc -c <"$OUT/builder.js") / 1024 )) KiB) and builder.css"
fi

# ------------------------------------------------------------------ dashboard: copy

changed=0
for f in "$SRC"/dashboard.js "$SRC"/dashboard.css "$SRC"/progress.js "$SRC"/progress.css \
         "$SRC"/timeline_view.js "$SRC"/timeline.js "$SRC"/timeline.css; do
    [[ -e "$f" ]] || continue
    name="$(basename "$f")"
    if [[ "$f" == *.js ]]; then
        # widgets/package.json says "type": "module", so node parses it as an ES module
        node --check "$f" || die "syntax error in $f"
    fi
    if ! cmp -s "$f" "$OUT/$name"; then
        cp "$f" "$OUT/$name.tmp" && mv "$OUT/$name.tmp" "$OUT/$name"
        changed=$((changed + 1))
    fi
done
if ((changed)); then
    log "copied $changed dashboard file(s) into jetbench/_static/"
else
    log "dashboard up to date"
fi
