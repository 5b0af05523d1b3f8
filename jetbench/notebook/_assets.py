"""Where the widgets' front-end code is found: the built package, else the dev checkout's sources."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent  # jetbench/
BUILT = _PACKAGE / "_static"  # produced by scripts/build_widgets.sh (not committed)
SOURCES = _PACKAGE.parent / "widgets" / "src"  # only in a checkout of the repository


def asset_path(name: str) -> Path:
    """The file to load for ``name`` (e.g. ``dashboard.js``).

    The built copy in ``jetbench/_static`` is used when present; in a dev checkout the source in
    ``widgets/src`` is used when the built copy is missing or older than the source.
    """
    built, source = BUILT / name, SOURCES / name
    if built.is_file() and not (source.is_file() and source.stat().st_mtime > built.stat().st_mtime):
        return built
    if source.is_file():
        return source
    raise FileNotFoundError(
        f"jetbench widget asset {name!r} not found in {BUILT} nor {SOURCES}; "
        "run scripts/build_widgets.sh (scripts/setup.sh does) to build the widgets"
    )


def asset_text(name: str) -> str:
    return asset_path(name).read_text(encoding="utf-8")
