"""Build of jetbench: pyproject.toml holds the metadata; this file adds the engine's hot modules
compiled with mypyc (issue 17 §3; how the compiled and the pure build are chosen at run time is in
jetbench/core/compiled.py).

    .venv/bin/python setup.py build_ext --inplace   # what scripts/setup.sh runs when a source changed
    pip wheel .                                     # a wheel with the compiled modules and widgets

The compiled modules go beside their sources (``jetbench/core/*.so``, ``jetbench/processors/*.so``)
with ``jetbench/core/_compiled.json``, the hash of each source compiled. A compile that fails (no C compiler, no mypy) leaves a working pure
build behind with a warning; ``JETBENCH_COMPILE=0`` skips compiling altogether.
"""

from __future__ import annotations

import importlib.machinery
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
PACKAGE = Path("jetbench")
# jetbench/core/compiled.py is standard library only: read it without importing jetbench
_compiled = runpy.run_path(str(ROOT / PACKAGE / "core" / "compiled.py"))


class BuildPy(build_py):
    """build_py that builds the widgets' front end into jetbench/_static before the package data
    is collected, so that a wheel's dashboards and builder work without a checkout."""

    def run(self) -> None:
        if not getattr(self, "editable_mode", False) and (ROOT / "widgets" / "src").is_dir():
            script = ROOT / "scripts" / "build_widgets.sh"
            try:
                subprocess.run(["bash", str(script)], cwd=ROOT, check=True)
            except (OSError, subprocess.CalledProcessError) as exc:
                raise SystemExit(
                    f"jetbench setup.py: building the notebook widgets failed ({exc}); a wheel "
                    "without them has no dashboard or builder. Install node 18+ and npm "
                    "(scripts/setup.sh does), then build again"
                ) from exc
            self.__dict__.pop("data_files", None)  # collect jetbench/_static as it is now
        super().run()


def _warn(message: str) -> None:
    print(f"jetbench setup.py: WARNING: {message}; the engine will run interpreted", file=sys.stderr)


class BuildExt(build_ext):
    """build_ext that records the compiled sources' hashes beside the extension modules, and
    removes a previous record first (a failed compile must not leave a stale record behind).
    A wheel built where the in-place build is current (`_inplace_build_current`) takes its
    extension modules as they are instead of compiling them again."""

    def build_extension(self, ext) -> None:  # ext: setuptools.Extension
        if not getattr(ext, "jetbench_prebuilt", False):
            super().build_extension(ext)
            return
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_inplace_file(ext.name), target)

    def run(self) -> None:
        if not self.extensions:  # JETBENCH_COMPILE=0, or mypyc failed: a build already there stays
            super().run()
            return
        inplace = self.inplace or getattr(self, "editable_mode", False)
        target = ROOT / PACKAGE if inplace else Path(self.build_lib) / PACKAGE
        _compiled["manifest_path"](target).unlink(missing_ok=True)
        try:
            super().run()
        except Exception as exc:  # a missing C compiler, a failed compile: keep the pure build
            _warn(f"compiling the engine failed: {type(exc).__name__}: {exc}")
            return
        _compiled["write_manifest"](target, _HASHES)


#: the sources' hashes as mypyc read them
_HASHES: dict[str, str] = {}


#: setup.py commands that write metadata only: `pip wheel .` runs them (PEP 517's
#: get_requires_for_build_wheel and prepare_metadata_for_build_wheel) before it builds, and
#: mypyc would translate the whole engine for each of them, to no use
METADATA_COMMANDS = {"egg_info", "dist_info"}


def _command() -> str | None:
    """The first setup.py command asked for (``bdist_wheel``, ``build_ext``, ...)."""
    commands = [arg for arg in sys.argv[1:] if not arg.startswith("-")]
    return commands[0] if commands else None


def _metadata_only() -> bool:
    return _command() in METADATA_COMMANDS


#: the file name ending of this interpreter's extension modules
_SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
#: the compiled build's extension modules: one per compiled module, and mypyc's shared library
_EXTENSION_NAMES = ([f"{PACKAGE}.{m}" for m in _compiled["COMPILED_MODULES"]]
                    + [_compiled["GROUP_NAME"] + "__mypyc"])


def _inplace_file(name: str) -> Path:
    """Where the in-place build keeps the extension module ``name`` (beside its source)."""
    return ROOT.joinpath(*name.split(".")).with_suffix(_SUFFIX)


def _inplace_build_current() -> bool:
    """Whether this is a wheel build (``pip wheel .``, ``bdist_wheel``) in a checkout whose
    in-place build (``scripts/setup.sh``) was compiled from the sources there now, for this
    interpreter: the same mypyc on the same sources makes the same modules, so the wheel takes
    those. ``JETBENCH_COMPILE=fresh`` compiles anyway."""
    if _command() != "bdist_wheel" or os.environ.get("JETBENCH_COMPILE", "").strip().lower() == "fresh":
        return False
    return not _compiled["pure_reason"](ROOT / PACKAGE, {}) and all(_inplace_file(n).exists() for n in _EXTENSION_NAMES)


def _prebuilt_extensions() -> list:  # list[setuptools.Extension]
    """The extension modules of the in-place build, marked to be copied, not compiled."""
    extensions = []
    for name in _EXTENSION_NAMES:
        ext = Extension(name, sources=[])
        ext.jetbench_prebuilt = True  # type: ignore[attr-defined]
        extensions.append(ext)
    return extensions


def engine_extensions() -> list:  # list[setuptools.Extension]
    if os.environ.get("JETBENCH_COMPILE", "1").strip().lower() in ("0", "false", "no", "off"):
        return []
    if _metadata_only():
        return []
    if _inplace_build_current():
        _HASHES.update(_compiled["source_hashes"](ROOT / PACKAGE))
        return _prebuilt_extensions()
    try:
        from mypyc.build import mypycify
    except ImportError as exc:
        _warn(f"mypyc is not installed ({exc})")
        return []
    # relative to the checkout (setuptools runs here): mypyc names the compiled frames by these
    # paths, and jetbench/core/errors.py knows them as the engine's
    paths = [_compiled["source_path"](PACKAGE, m).as_posix() for m in _compiled["COMPILED_MODULES"]]
    _HASHES.update(_compiled["source_hashes"](ROOT / PACKAGE))
    try:
        return mypycify(paths, group_name=_compiled["GROUP_NAME"], target_dir=os.path.join("build", "mypyc"))
    except (Exception, SystemExit) as exc:  # mypy errors end mypycify with SystemExit
        _warn(f"mypyc could not compile the engine: {type(exc).__name__}: {exc}")
        return []


setup(ext_modules=engine_extensions(), cmdclass={"build_ext": BuildExt, "build_py": BuildPy})
