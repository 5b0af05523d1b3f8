"""The engine's two builds (issue 17 §3, `jetbench.core.compiled`): the mypyc-compiled hot modules
and the same sources interpreted, which ``JETBENCH_PURE_PYTHON=1``, a missing or stale build
choose; and what stays subclassable in plain Python."""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jetbench.core import compiled
from jetbench.core.compiled import (
    COMPILED_MODULES,
    MANIFEST,
    build_info,
    pure_reason,
    source_hashes,
)
from jetbench.core.inbox import Inbox
from jetbench.core.outbox import Outbox
from jetbench.core.processor import Processor

CORE = Path(compiled.__file__).parent
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]

_PROBE = """
import json, jetbench
from jetbench.core.compiled import build_info
import jetbench.core.tasklet as t
b = build_info()
print(json.dumps({"kind": b.kind, "modules": list(b.modules), "reason": b.reason, "tasklet": t.__file__}))
"""


def _probe(**env: str) -> dict[str, object]:
    """The build a fresh interpreter loads with ``env`` over this one's environment."""
    environ = {k: v for k, v in os.environ.items() if k != compiled.PURE_ENV}
    environ["PYTHONPATH"] = str(CORE.parent.parent)  # the jetbench under test
    out = subprocess.run([sys.executable, "-c", _PROBE], env={**environ, **env}, capture_output=True,
                         text=True, check=True, cwd=CORE.parent.parent)
    return json.loads(out.stdout)


def test_the_build_loaded_here_is_the_one_expected():
    """scripts/test.sh says which build each pass must run on (JETBENCH_EXPECT_BUILD)."""
    expected = os.environ.get("JETBENCH_EXPECT_BUILD")
    info = build_info()
    if expected is None:
        expected = "pure" if pure_reason() else "compiled"
    assert info.kind == expected, info.describe()
    if info.kind == "compiled":
        assert info.modules == COMPILED_MODULES
        for m in COMPILED_MODULES:
            assert sys.modules[f"jetbench.core.{m}"].__file__.endswith(SUFFIX)
    else:
        assert info.modules == () and info.reason
        for m in COMPILED_MODULES:
            assert sys.modules[f"jetbench.core.{m}"].__file__.endswith(f"{m}.py")


def test_pure_python_switch_loads_the_sources():
    got = _probe(JETBENCH_PURE_PYTHON="1")
    assert got["kind"] == "pure" and got["modules"] == []
    assert got["reason"] == "JETBENCH_PURE_PYTHON=1"
    assert got["tasklet"].endswith("tasklet.py")


def test_without_the_switch_a_current_build_loads_compiled():
    if pure_reason(environ={}):
        pytest.skip(f"no current compiled build here: {pure_reason(environ={})}")
    got = _probe()
    assert got["kind"] == "compiled" and got["modules"] == list(COMPILED_MODULES)
    assert got["tasklet"].endswith(SUFFIX)


@pytest.fixture
def fake_build(tmp_path: Path) -> Path:
    """A directory holding the compiled modules' sources, stand-in extension files and a manifest."""
    for m in COMPILED_MODULES:
        shutil.copy(CORE / f"{m}.py", tmp_path / f"{m}.py")
        (tmp_path / f"{m}{SUFFIX}").write_bytes(b"")
    compiled.write_manifest(tmp_path, source_hashes(tmp_path))
    return tmp_path


def test_a_build_is_current_until_a_source_changes(fake_build: Path):
    assert pure_reason(fake_build, environ={}) == ""
    assert pure_reason(fake_build, environ={"JETBENCH_PURE_PYTHON": "1"}) == "JETBENCH_PURE_PYTHON=1"
    assert pure_reason(fake_build, environ={"JETBENCH_PURE_PYTHON": "0"}) == ""
    with (fake_build / "queues.py").open("a") as f:
        f.write("\n# edited after the compile\n")
    assert pure_reason(fake_build, environ={}) == "stale build: queues.py changed since compiled (run scripts/setup.sh)"


def test_a_missing_or_foreign_build_is_not_loaded(fake_build: Path):
    (fake_build / f"inbox{SUFFIX}").unlink()
    assert pure_reason(fake_build, environ={}) == "not compiled: inbox missing from the build"
    manifest = json.loads((fake_build / MANIFEST).read_text())
    (fake_build / MANIFEST).write_text(json.dumps({**manifest, "ext_suffix": ".cpython-39-x.so"}))
    assert pure_reason(fake_build, environ={}).startswith("not compiled for this interpreter")
    (fake_build / MANIFEST).unlink()
    assert pure_reason(fake_build, environ={}).startswith("not compiled: no compiled build here")


def test_version_says_which_build_is_loaded():
    out = subprocess.run([sys.executable, "-m", "jetbench", "version"], capture_output=True, text=True, check=True,
                         env={**os.environ, "JETBENCH_PURE_PYTHON": "1", "PYTHONPATH": str(CORE.parent.parent)})
    version, engine = out.stdout.splitlines()
    assert version.count(".") == 2
    assert engine == "engine: pure Python engine (JETBENCH_PURE_PYTHON=1)"


def test_plain_python_subclasses_the_user_facing_classes():
    """Processor stays interpreted; Outbox, compiled, allows interpreted subclasses (testing.py
    has one) whose overrides run and reach the compiled base through super()."""

    class Counting(Outbox):
        def __init__(self) -> None:
            super().__init__(ordinal_count=1, capacity=4)
            self.offers = 0

        def offer(self, item, ordinal=None):
            self.offers += 1
            return super().offer(item)

    class Echo(Processor):
        def process(self, ordinal, inbox):
            while inbox and self.outbox.offer(inbox.peek()):
                inbox.remove()

    box = Counting()
    p = Echo()
    p.init(box, None)

    inbox = Inbox([1, 2, 3, 4, 5])
    p.process(0, inbox)
    assert box.take_bucket() == [1, 2, 3, 4] and len(inbox) == 1 and box.offers == 5
    assert isinstance(box, Outbox) and Outbox.offer(box, "x") and box.offers == 5
    assert sys.modules[Processor.__module__].__file__.endswith("processor.py")  # never compiled
