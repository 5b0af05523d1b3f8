"""A wheel built from this checkout carries the compiled engine and the widgets' front end, and
runs from the wheel's own files: the compiled build when nothing says otherwise, the pure one
under ``JETBENCH_PURE_PYTHON=1`` (issue 17 §3: "``scripts/setup.sh`` and a wheel build both do
it").

The wheel is built the way a user builds one, ``pip wheel .``, but without build isolation (the
build needs the .venv's setuptools and mypy, nothing from a package index); then it is unpacked,
not installed, and a fresh interpreter imports jetbench from there with the .venv's
dependencies. Where the in-place build (``scripts/setup.sh``, the same mypyc on the same
sources) is current, the wheel takes its modules (a few seconds; the test checks they are those
files, byte for byte); otherwise it compiles them (about two minutes on this machine), hence slow.
``JETBENCH_COMPILE=fresh pip wheel .`` always compiles.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from jetbench.core import compiled
from jetbench.core.compiled import COMPILED_MODULES, manifest_path, source_hashes, source_path

ROOT = Path(__file__).resolve().parent.parent

# the build compiles the engine: about two minutes alone, longer on a loaded machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

PROBE = """
import json, sys
import jetbench
from jetbench.core import compiled
from jetbench.notebook._assets import asset_path
from jetbench.core.dag import DAG, Edge
from jetbench.core.execution import ExecutionService
from jetbench.processors.collect_sink import collect_sink
from jetbench.processors.items_source import items_source

dag = DAG()
src = dag.new_vertex("src", items_source(list(range(1000))))
out = dag.new_vertex("out", collect_sink())
dag.edge(Edge.between(src, out))
result = ExecutionService().submit(dag).join(30)
info = compiled.build_info()
print(json.dumps({
    "package": jetbench.__file__,
    "kind": info.kind,
    "modules": list(info.modules),
    "queues": sys.modules["jetbench.core.queues"].__file__,
    "collect_sink": sys.modules["jetbench.processors.collect_sink"].__file__,
    "dashboard": str(asset_path("dashboard.js")),
    "builder": str(asset_path("builder.js")),
    "total": sum(result),
}))
"""


@pytest.fixture(scope="module")
def wheel_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        cwd=ROOT, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        capture_output=True, text=True, timeout=1100,
    )
    assert built.returncode == 0, f"pip wheel exited {built.returncode}:\n{built.stdout[-4000:]}\n{built.stderr[-8000:]}"
    (wheel,) = out.glob("jetbench-*.whl")
    unpacked = out / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(unpacked)
    return unpacked


def _probe(site: Path, tmp_path: Path, **env: str) -> dict[str, Any]:
    """Run PROBE in a fresh interpreter that finds jetbench only in the unpacked wheel."""
    environ = {k: v for k, v in os.environ.items() if k != "JETBENCH_PURE_PYTHON"}
    done = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(site)!r})\n{PROBE}"],
        cwd=tmp_path, env={**environ, **env}, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_the_wheel_holds_the_compiled_engine_and_the_widgets(wheel_dir: Path) -> None:
    package = wheel_dir / "jetbench"
    manifest = json.loads(manifest_path(package).read_text())
    assert set(manifest["modules"]) == set(COMPILED_MODULES)
    assert manifest["modules"] == source_hashes(ROOT / "jetbench")
    if compiled.build_info().kind == "compiled":  # the in-place build is current: the wheel took it
        for built in (ROOT / "jetbench").rglob(f"*{manifest['ext_suffix']}"):
            copied = package / built.relative_to(ROOT / "jetbench")
            assert copied.read_bytes() == built.read_bytes(), copied
    for name in COMPILED_MODULES:
        source = source_path(package, name)
        assert list(source.parent.glob(f"{source.stem}.cpython-*.so")), f"{name} is not compiled in the wheel"
    for name in ("dashboard.js", "dashboard.css", "builder.js", "builder.css", "progress.js"):
        assert (wheel_dir / "jetbench" / "_static" / name).stat().st_size > 0, name


def test_the_unpacked_wheel_runs_its_compiled_engine(wheel_dir: Path, tmp_path: Path) -> None:
    seen = _probe(wheel_dir, tmp_path)
    assert str(seen["package"]).startswith(str(wheel_dir)), seen
    assert seen["kind"] == "compiled" and set(seen["modules"]) == set(COMPILED_MODULES)
    assert str(seen["queues"]).endswith(".so") and str(seen["queues"]).startswith(str(wheel_dir))
    assert str(seen["collect_sink"]).endswith(".so") and str(seen["collect_sink"]).startswith(str(wheel_dir))
    assert str(seen["dashboard"]).startswith(str(wheel_dir / "jetbench" / "_static"))
    assert str(seen["builder"]).startswith(str(wheel_dir / "jetbench" / "_static"))
    assert seen["total"] == sum(range(1000))


def test_the_unpacked_wheel_runs_pure_when_asked(wheel_dir: Path, tmp_path: Path) -> None:
    seen = _probe(wheel_dir, tmp_path, JETBENCH_PURE_PYTHON="1")
    assert seen["kind"] == "pure" and seen["modules"] == []
    assert str(seen["queues"]).endswith("queues.py")
    assert str(seen["collect_sink"]).endswith("collect_sink.py")
    assert seen["total"] == sum(range(1000))
