"""Which build of the engine runs: its hot modules compiled with mypyc, or the same sources interpreted.

How it works (issue 17 §3):

* ``setup.py`` compiles `COMPILED_MODULES` (the engine's hot modules in ``jetbench/core``, the
  hot built-in processors in ``jetbench/processors`` and the idle job's latency probe,
  ``jetbench/experiments/latency_probe.py``) with mypyc into extension modules placed
  *beside their sources* (``jetbench/core/queues.cpython-311-x86_64-linux-gnu.so`` next to
  ``queues.py``, ``jetbench/processors/transform.cpython-...so`` next to ``transform.py``, with the
  one shared library ``jetbench/core/_engine__mypyc...so`` they all load), and writes `MANIFEST`
  (``jetbench/core/_compiled.json``): the sha256 of each source it compiled. ``scripts/setup.sh`` does it
  in place in the checkout (which the editable install points at) whenever a source changed;
  a wheel build does it into the wheel. The built files are ignored by git.
* Python's import system prefers an extension module to a source file in the same directory, so
  loading the compiled build needs nothing more. `install`, run by ``jetbench/core/__init__.py``
  before any of these modules is imported, decides which build to load, and for the pure one puts
  a finder first on ``sys.meta_path`` that loads each of these modules from its ``.py`` source.
* The engine runs interpreted, all of it (never a mix of the two), when ``JETBENCH_PURE_PYTHON=1``;
  when nothing was compiled (no C compiler, a failed compile, or a wheel built with
  ``JETBENCH_COMPILE=0``); when a source changed since it was compiled (stale: run
  ``scripts/setup.sh`` again); or when the compiled library does not load. `build_info` says
  which build is loaded, and why (``jetbench version`` prints it).

Users subclass `jetbench.core.processor.Processor` in plain Python, and the built-in processors
too (``EmittingProcessor``, ``TransformP``, ``CollectSinkP``, ...): every compiled class that plain
Python code may subclass says so with ``@mypyc_attr(allow_interpreted_subclasses=True)``
(`jetbench.core.native`), ``Processor``, ``Outbox`` and the compiled processors among them.
A compiled function cannot carry attributes: the DAG builder's text of a library function is
kept by `jetbench.processors.supplier.set_builder_code`, not on the function.

This module is standard library only and runs on its own too (``setup.py`` and
``scripts/setup.sh`` read it without importing jetbench)::

    python jetbench/core/compiled.py    # the build status; exit code 0 if the compiled build is current
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

#: the modules of ``jetbench`` that setup.py compiles, named relative to the package
#: (``core.queues`` is ``jetbench/core/queues.py``)
COMPILED_MODULES = (
    "core.items",
    "core.watermarks",
    "core.queues",
    "core.inbox",
    "core.outbox",
    "core.routing",
    "core.processor",
    "core.tasklet",
    "core.snapshot_tasklet",
    "core.worker",
    "processors.emitter",
    "processors.transform",
    "processors.aggregation",
    "processors.items_source",
    "processors.generator_source",
    "processors.insert_watermarks",
    "processors.collect_sink",
    "processors.noop_sink",
    "processors.latency_sink",
    "experiments.latency_probe",
)
#: mypyc's group: the shared library of the compiled modules is ``jetbench/core/_engine__mypyc``
GROUP_NAME = "jetbench.core._engine"
#: written by setup.py into ``jetbench/core``: {"modules": {name: sha256 of its source}, ...}
MANIFEST = "_compiled.json"
#: set to 1 (or true, yes) to run the engine interpreted even when a compiled build is there
PURE_ENV = "JETBENCH_PURE_PYTHON"

_HERE = Path(__file__).resolve().parent
#: the ``jetbench`` package directory: `COMPILED_MODULES` are relative to it
_ROOT = _HERE.parent
_PACKAGE = "jetbench"


def source_path(root: Path, module: str) -> Path:
    """The source of ``module`` (a name in `COMPILED_MODULES`) under the package directory ``root``."""
    return root.joinpath(*module.split(".")).with_suffix(".py")


def manifest_path(root: Path) -> Path:
    """Where setup.py records the compiled build of the package directory ``root``."""
    return root / "core" / MANIFEST


@dataclass(frozen=True)
class BuildInfo:
    """The build of the engine loaded in this process."""

    #: "compiled", "pure" (or "mixed": never chosen, reported if it ever happens)
    kind: str
    #: the modules running compiled (empty for the pure build)
    modules: tuple[str, ...]
    #: why the pure build runs ("" for the compiled one)
    reason: str = ""

    def describe(self) -> str:
        if self.kind == "compiled":
            return f"compiled engine (mypyc): {', '.join(self.modules)}"
        if self.kind == "mixed":
            return f"MIXED engine, compiled: {', '.join(self.modules)} ({self.reason})"
        return f"pure Python engine ({self.reason})"


def source_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def source_hashes(root: Path = _ROOT) -> dict[str, str]:
    """The sha256 of each compiled module's source under the package directory ``root`` (setup.py,
    before compiling)."""
    return {m: source_hash(source_path(root, m)) for m in COMPILED_MODULES}


def write_manifest(root: Path, hashes: dict[str, str]) -> Path:
    """Record the sources compiled into the package directory ``root`` (setup.py, after a
    successful compile)."""
    manifest = {"ext_suffix": importlib.machinery.EXTENSION_SUFFIXES[0], "modules": hashes}
    path = manifest_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=1) + "\n")
    return path


def pure_reason(root: Path = _ROOT, environ: dict[str, str] | None = None) -> str:
    """Why the engine in the package directory ``root`` must run interpreted; "" when its compiled
    build is usable (present, for this interpreter, built from the sources there now)."""
    env = os.environ if environ is None else environ
    if env.get(PURE_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return f"{PURE_ENV}={env[PURE_ENV]}"
    try:
        manifest = json.loads(manifest_path(root).read_text())
    except FileNotFoundError:
        return "not compiled: no compiled build here (scripts/setup.sh builds it; it needs a C compiler)"
    except (OSError, ValueError) as exc:
        return f"not compiled: unreadable {MANIFEST} ({exc})"
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    if manifest.get("ext_suffix") != suffix:
        return f"not compiled for this interpreter (built for {manifest.get('ext_suffix')}, this one loads {suffix})"
    hashes = manifest.get("modules", {})
    missing = [m for m in COMPILED_MODULES
               if m not in hashes or not source_path(root, m).with_suffix(suffix).exists()]
    if missing:
        return f"not compiled: {', '.join(missing)} missing from the build"
    changed = [m for m in COMPILED_MODULES if source_hash(source_path(root, m)) != hashes[m]]
    if changed:
        names = ", ".join(source_path(Path(), m).as_posix() for m in changed)
        return f"stale build: {names} changed since compiled (run scripts/setup.sh)"
    return ""


class _SourceFinder(importlib.abc.MetaPathFinder):
    """Loads the compiled modules of ``jetbench`` from their ``.py`` sources."""

    def __init__(self, root: Path):
        self.root = root
        self.names = {f"{_PACKAGE}.{m}": m for m in COMPILED_MODULES}

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None,
                  ) -> importlib.machinery.ModuleSpec | None:
        module = self.names.get(fullname)
        if module is None:
            return None
        return importlib.util.spec_from_file_location(fullname, source_path(self.root, module))


_build: BuildInfo | None = None


def install() -> BuildInfo:
    """Choose the build of the engine for this process (once, before its modules are imported)."""
    global _build
    if _build is not None:
        return _build
    reason = pure_reason()
    if not reason:
        try:  # the library every compiled module loads: a broken one means the pure build
            importlib.import_module(f"{GROUP_NAME}__mypyc")
        except Exception as exc:
            reason = f"the compiled engine does not load: {type(exc).__name__}: {exc}"
    if reason:
        sys.meta_path.insert(0, _SourceFinder(_ROOT))
        _build = BuildInfo("pure", (), reason)
    else:
        _build = BuildInfo("compiled", COMPILED_MODULES)
    return _build


def build_info() -> BuildInfo:
    """The build loaded: what `install` chose, checked against the modules actually imported."""
    chosen = install()
    compiled = []
    for m in COMPILED_MODULES:
        module = importlib.import_module(f"{_PACKAGE}.{m}")
        if (module.__file__ or "").endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
            compiled.append(m)
    if chosen.kind == "compiled" and len(compiled) != len(COMPILED_MODULES):
        return BuildInfo("mixed", tuple(compiled), "compiled build chosen but not all of it loaded")
    if chosen.kind == "pure" and compiled:
        return BuildInfo("mixed", tuple(compiled), f"{chosen.reason}; yet these loaded compiled")
    return chosen


if __name__ == f"{_PACKAGE}.core.compiled":  # imported first of all by jetbench/core/__init__.py
    install()
elif __name__ == "__main__":  # the state of the build itself, whatever JETBENCH_PURE_PYTHON says
    why = pure_reason(environ={})
    print(f"engine build in {_ROOT}: " + (why or "compiled, up to date"))
    sys.exit(1 if why else 0)
