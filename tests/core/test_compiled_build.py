"""The engine's two builds (issue 17 §3, `jetbench.core.compiled`): the mypyc-compiled hot modules
and the same sources interpreted, which ``JETBENCH_PURE_PYTHON=1``, a missing or stale build
choose; and what stays subclassable in plain Python."""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import inspect
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jetbench.core import DAG, Edge, ExecutionService, compiled
from jetbench.core.compiled import (
    COMPILED_MODULES,
    MANIFEST,
    build_info,
    manifest_path,
    pure_reason,
    source_hashes,
    source_path,
)
from jetbench.core.inbox import Inbox
from jetbench.core.outbox import Outbox
from jetbench.core.processor import Processor, ProcessorContext
from jetbench.processors import ProcessorSupplier, Transform, items_source
from jetbench.processors.collect_sink import CollectSinkP, merge_lists
from jetbench.processors.transform import TransformP

CORE = Path(compiled.__file__).parent
PACKAGE = CORE.parent
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]

_PROBE = """
import json, jetbench
from jetbench.core.compiled import build_info
import jetbench.core.tasklet as t
import jetbench.processors.transform as tr
b = build_info()
print(json.dumps({"kind": b.kind, "modules": list(b.modules), "reason": b.reason, "tasklet": t.__file__,
                  "transform": tr.__file__}))
"""


def _probe(**env: str) -> dict[str, object]:
    """The build a fresh interpreter loads with ``env`` over this one's environment."""
    environ = {k: v for k, v in os.environ.items() if k != compiled.PURE_ENV}
    environ["PYTHONPATH"] = str(PACKAGE.parent)  # the jetbench under test
    out = subprocess.run([sys.executable, "-c", _PROBE], env={**environ, **env}, capture_output=True,
                         text=True, check=True, cwd=PACKAGE.parent)
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
            assert sys.modules[f"jetbench.{m}"].__file__.endswith(SUFFIX)
    else:
        assert info.modules == () and info.reason
        for m in COMPILED_MODULES:
            assert sys.modules[f"jetbench.{m}"].__file__ == str(source_path(PACKAGE, m))


def test_pure_python_switch_loads_the_sources():
    got = _probe(JETBENCH_PURE_PYTHON="1")
    assert got["kind"] == "pure" and got["modules"] == []
    assert got["reason"] == "JETBENCH_PURE_PYTHON=1"
    assert got["tasklet"].endswith("tasklet.py") and got["transform"].endswith("transform.py")


def test_without_the_switch_a_current_build_loads_compiled():
    if pure_reason(environ={}):
        pytest.skip(f"no current compiled build here: {pure_reason(environ={})}")
    got = _probe()
    assert got["kind"] == "compiled" and got["modules"] == list(COMPILED_MODULES)
    assert got["tasklet"].endswith(SUFFIX) and got["transform"].endswith(SUFFIX)


@pytest.fixture
def fake_build(tmp_path: Path) -> Path:
    """A package directory holding the compiled modules' sources, stand-in extension files and a
    manifest."""
    for m in COMPILED_MODULES:
        source = source_path(tmp_path, m)
        source.parent.mkdir(exist_ok=True)
        shutil.copy(source_path(PACKAGE, m), source)
        source.with_suffix(SUFFIX).write_bytes(b"")
    compiled.write_manifest(tmp_path, source_hashes(tmp_path))
    return tmp_path


def test_a_build_is_current_until_a_source_changes(fake_build: Path):
    assert pure_reason(fake_build, environ={}) == ""
    assert pure_reason(fake_build, environ={"JETBENCH_PURE_PYTHON": "1"}) == "JETBENCH_PURE_PYTHON=1"
    assert pure_reason(fake_build, environ={"JETBENCH_PURE_PYTHON": "0"}) == ""
    with (fake_build / "core" / "queues.py").open("a") as f:
        f.write("\n# edited after the compile\n")
    with (fake_build / "processors" / "transform.py").open("a") as f:
        f.write("\n# edited after the compile\n")
    assert pure_reason(fake_build, environ={}) == (
        "stale build: core/queues.py, processors/transform.py changed since compiled (run scripts/setup.sh)")


def test_a_missing_or_foreign_build_is_not_loaded(fake_build: Path):
    (fake_build / "core" / f"inbox{SUFFIX}").unlink()
    (fake_build / "processors" / f"emitter{SUFFIX}").unlink()
    assert pure_reason(fake_build, environ={}) == "not compiled: core.inbox, processors.emitter missing from the build"
    manifest = json.loads(manifest_path(fake_build).read_text())
    assert manifest_path(fake_build) == fake_build / "core" / MANIFEST
    manifest_path(fake_build).write_text(json.dumps({**manifest, "ext_suffix": ".cpython-39-x.so"}))
    assert pure_reason(fake_build, environ={}).startswith("not compiled for this interpreter")
    manifest_path(fake_build).unlink()
    assert pure_reason(fake_build, environ={}).startswith("not compiled: no compiled build here")


def test_version_says_which_build_is_loaded():
    out = subprocess.run([sys.executable, "-m", "jetbench", "version"], capture_output=True, text=True, check=True,
                         env={**os.environ, "JETBENCH_PURE_PYTHON": "1", "PYTHONPATH": str(PACKAGE.parent)})
    version, engine = out.stdout.splitlines()
    assert version.count(".") == 2
    assert engine == "engine: pure Python engine (JETBENCH_PURE_PYTHON=1)"


def test_plain_python_subclasses_the_user_facing_classes():
    """Processor and Outbox, compiled, allow interpreted subclasses (testing.py has an Outbox one)
    whose overrides run and reach the compiled base through super()."""

    class Counting(Outbox):
        def __init__(self) -> None:
            super().__init__(ordinal_count=1, capacity=4)
            self.offers = 0

        def offer(self, item, ordinal=None):
            self.offers += 1
            return super().offer(item)

    class Echo(Processor):
        is_cooperative = False  # a class attribute overriding the compiled base's

        def process(self, ordinal, inbox):
            while inbox and self.outbox.offer(inbox.peek()):
                inbox.remove()

    box = Counting()
    p = Echo()
    p.init(box, ProcessorContext("echo", 0, 0, 1, 1))

    inbox = Inbox([1, 2, 3, 4, 5])
    p.process(0, inbox)
    assert box.take_bucket() == [1, 2, 3, 4] and len(inbox) == 1 and box.offers == 5
    assert isinstance(box, Outbox) and Outbox.offer(box, "x") and box.offers == 5
    assert p.is_cooperative is False and Processor().is_cooperative is True
    assert p.try_process() and p.context.vertex_name == "echo"  # the compiled base's methods


def test_plain_python_subclasses_of_the_compiled_processors_run_in_a_job():
    """The built-in processors compiled with the engine (TransformP, CollectSinkP, ...) stay
    subclassable in plain Python: overrides run, super() reaches the compiled method."""

    class Doubling(TransformP):
        def process(self, ordinal, inbox):
            self.batches = getattr(self, "batches", 0) + 1
            super().process(ordinal, inbox)

    class Tagging(CollectSinkP):
        def result_part(self):
            return [("seen", x) for x in super().result_part()]

    dag = DAG()
    src = dag.new_vertex("src", items_source(range(5)))
    double = dag.new_vertex("double", ProcessorSupplier(Doubling, Transform().map(lambda x: 2 * x)))
    sink = dag.new_vertex("sink", ProcessorSupplier(Tagging, merge_results=merge_lists))
    dag.edge(Edge.between(src, double)).edge(Edge.between(double, sink))
    assert ExecutionService().run(dag) == [("seen", x) for x in (0, 2, 4, 6, 8)]


def test_the_hot_processors_are_compiled_with_the_engine():
    """What `COMPILED_MODULES` names runs compiled in the compiled build, processors included."""
    names = set(COMPILED_MODULES)
    assert {"core.processor", "processors.transform", "processors.aggregation", "processors.emitter"} <= names
    for m in COMPILED_MODULES:
        assert source_path(PACKAGE, m).is_file(), m
    if build_info().kind == "compiled":
        assert sys.modules[TransformP.__module__].__file__.endswith(SUFFIX)
        assert sys.modules[Processor.__module__].__file__.endswith(SUFFIX)


def _init_parameters(module: str) -> dict[str, list[str]]:
    """The parameters of each ``__init__`` written in ``module``'s source, by class."""
    tree = ast.parse(source_path(PACKAGE, module).read_text())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    found[node.name] = [a.arg for a in item.args.args[1:] + item.args.kwonlyargs]
    return found


@pytest.mark.parametrize("module", [m for m in COMPILED_MODULES if m.startswith("processors.")])
def test_compiled_processors_keep_the_signatures_their_suppliers_read(module: str):
    """ProcessorSupplier binds a vertex's arguments by the processor's signature: compiled, a class
    keeps it only when its defaults are literals (mypyc writes no signature otherwise)."""
    loaded = importlib.import_module(f"jetbench.{module}")
    for name, params in _init_parameters(module).items():
        cls = getattr(loaded, name)
        if not issubclass(cls, Processor):
            continue
        got = inspect.signature(cls).parameters
        assert list(got) == params, f"{module}.{name}: {list(got)} != {params}"


@pytest.mark.parametrize("module", [m for m in COMPILED_MODULES if m.startswith("processors.")])
def test_every_compiled_processor_class_allows_interpreted_subclasses(module: str):
    """Each processor class of a compiled module is decorated ``allow_interpreted_subclasses``,
    so that a user's plain-Python subclass has its overrides called even from the class's own
    compiled methods (without it mypyc calls them through its vtable). Read from the source: a
    helper written between the decorator and its class once moved it onto the helper."""
    loaded = importlib.import_module(f"jetbench.{module}")
    for node in ast.parse(source_path(PACKAGE, module).read_text()).body:
        if isinstance(node, ast.FunctionDef):
            assert not [d for d in node.decorator_list if "mypyc_attr" in ast.unparse(d)], (
                f"{module}.{node.name}: mypyc_attr on a function")
        if not isinstance(node, ast.ClassDef):
            continue
        cls = getattr(loaded, node.name)
        if isinstance(cls, type) and issubclass(cls, Processor):
            decorators = [ast.unparse(d) for d in node.decorator_list]
            assert "mypyc_attr(allow_interpreted_subclasses=True)" in decorators, f"{module}.{node.name}: {decorators}"
