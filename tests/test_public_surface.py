"""The names a user meets: ``import jetbench as jb`` reaches everything the README and the
notebooks use, aggregate operations are factories everywhere, and each runner names the
options it does not take."""

import ast
import importlib
import re
from pathlib import Path

import pytest

import jetbench as jb
from jetbench import aggregate, sinks, sources, window
from jetbench.pipeline import PipelineError
from jetbench.processors import accumulate_by_key, global_aggregate
from jetbench.processors.window_aggregate import window_aggregate


def test_the_pipeline_namespaces_are_attributes_of_the_package():
    assert (jb.sources, jb.sinks, jb.aggregate, jb.window) == (sources, sinks, aggregate, window)
    p = jb.Pipeline()
    p.read_from(jb.sources.items(range(6))).group_by(lambda x: x % 3) \
        .aggregate(jb.aggregate.counting()).write_to(jb.sinks.collect())
    assert sorted(jb.run(p)) == [(0, 2), (1, 2), (2, 2)]
    assert repr(jb.window.tumbling(10)) == "tumbling(10)"


@pytest.mark.parametrize("factory", [aggregate.counting, aggregate.to_list, aggregate.to_set, aggregate.summing])
def test_a_bare_factory_is_refused_with_the_call_to_make(factory):
    name = factory.__name__
    stage = jb.Pipeline().read_from(jb.sources.items([1, 2]))
    with pytest.raises(PipelineError, match=rf"aggregate\.{name} is a factory .*: call it, aggregate\.{name}\("):
        stage.aggregate(factory)
    with pytest.raises(PipelineError, match=rf"call it, aggregate\.{name}\("):
        stage.group_by(str).aggregate(factory)
    timed = jb.Pipeline().read_from(jb.sources.test_stream([(1, "a")]))
    with pytest.raises(PipelineError, match=rf"call it, aggregate\.{name}\("):
        timed.window(window.tumbling(10)).aggregate(factory)
    for make in (lambda: accumulate_by_key(str, factory), lambda: global_aggregate(factory),
                 lambda: window_aggregate(None, factory, window.tumbling(10)),
                 lambda: aggregate.all_of(aggregate.counting(), factory)):
        with pytest.raises(jb.JetbenchError, match=rf"call it, aggregate\.{name}\("):
            make()


def test_something_else_than_an_operation_is_named():
    with pytest.raises(PipelineError, match=r"stage 'items': aggregate\(\): expected an AggregateOperation .* got 42"):
        jb.Pipeline().read_from(jb.sources.items([1])).aggregate(42)


def test_the_called_factories_work_in_every_aggregation():
    p = jb.Pipeline()
    stage = p.read_from(jb.sources.items([3, 1, 3]))
    stage.aggregate(aggregate.all_of(aggregate.counting(), aggregate.to_set(), aggregate.to_list())) \
        .write_to(jb.sinks.collect())
    ((count, distinct, items),) = jb.run(p)
    assert (count, distinct, sorted(items)) == (3, {1, 3}, [1, 3, 3])


def test_the_local_runner_names_an_option_it_does_not_take():
    p = jb.Pipeline()
    p.read_from(jb.sources.items([1])).write_to(jb.sinks.collect())
    with pytest.raises(jb.RunnerOptionError, match=r"the local runner takes no option 'partitions'; it takes "
                                                   r"cooperative_threads, min_idle_us"):
        jb.run(p, partitions=2)
    assert jb.run(p, cooperative_threads=1, min_idle_us=10) == [1]


def test_the_spark_runner_names_an_option_it_does_not_take_before_starting_spark():
    import sys

    p = jb.Pipeline()
    p.read_from(jb.sources.items([1])).write_to(jb.sinks.collect())
    had_session = "pyspark.sql" in sys.modules and sys.modules["pyspark.sql"].SparkSession.getActiveSession()
    with pytest.raises(jb.JetbenchError, match=r"'cooperative_thread'"):
        jb.run(p, runner="spark", cooperative_thread=1)
    if not had_session and "pyspark.sql" in sys.modules:
        assert sys.modules["pyspark.sql"].SparkSession.getActiveSession() is None


def test_a_runner_object_takes_no_options_through_run():
    class Echo:
        def run(self, job, timeout=None, fuse=None):
            return "ran"

    p = jb.Pipeline()
    p.read_from(jb.sources.items([1])).write_to(jb.sinks.collect())
    assert jb.run(p, runner=Echo()) == "ran"
    with pytest.raises(jb.JetbenchError, match="go to the runner object's own constructor"):
        jb.run(p, runner=Echo(), partitions=2)
    with pytest.raises(jb.JetbenchError, match="runner must be 'local', 'spark' or a runner object"):
        jb.run(p, runner="flink")


# ------------------------------------------------------------------ what the README and notebooks import

ROOT = Path(__file__).resolve().parents[1]
#: the layers under the public modules (docs/architecture.md): a user reaches them through `jetbench`
INTERNAL = ("jetbench.core", "jetbench.pipeline")


def _user_code() -> list[tuple[str, str]]:
    """(where, code) of every Python block of the README and every notebook's py:percent source
    (markdown cells are comments there, so the whole file parses)."""
    readme = (ROOT / "README.md").read_text()
    blocks = [(f"README.md:{readme.count(chr(10), 0, m.start()) + 1}", m.group(1))
              for m in re.finditer(r"^```python\n(.*?)^```\n", readme, flags=re.S | re.M)]
    return blocks + [(path.name, path.read_text()) for path in sorted((ROOT / "notebooks").glob("*.py"))]


def _private_imports(where: str, code: str) -> list[str]:
    """What ``code`` imports from jetbench that a user should not have to know: an internal layer
    or a private module, or a name taken from deep inside a package that exports it higher up."""
    found = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("jetbench", "jb") \
                and f"jetbench.{node.attr}".startswith(INTERNAL):
            found.append(f"{where} (line {node.lineno}): {ast.unparse(node)} is not public")
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else [])
        for module in modules:
            parts = module.split(".")
            if parts[0] != "jetbench":
                continue
            line = f"{where} (line {node.lineno}): {ast.unparse(node)}"
            if module.startswith(INTERNAL) or any(p.startswith("_") for p in parts):
                found.append(f"{line}: {module} is not public")
                continue
            if not isinstance(node, ast.ImportFrom):
                continue
            imported = importlib.import_module(module)
            for alias in node.names:
                for depth in range(1, len(parts)):
                    higher = importlib.import_module(".".join(parts[:depth]))
                    if (alias.name in getattr(higher, "__all__", ())
                            and getattr(higher, alias.name) is getattr(imported, alias.name, None)):
                        found.append(f"{line}: import {alias.name} from {higher.__name__}")
                        break
    return found


def test_the_readme_and_the_notebooks_import_only_public_names():
    code = _user_code()
    assert len(code) >= 10 + 3
    found = [hit for where, text in code for hit in _private_imports(where, text)]
    assert not found, "\n".join(found)


def test_the_scan_finds_a_private_import():
    assert _private_imports("x", "from jetbench.core.job_config import JobConfig") == [
        "x (line 1): from jetbench.core.job_config import JobConfig: jetbench.core.job_config is not public"]
    assert _private_imports("x", "from jetbench.nexmark.config import NexmarkConfig") == [
        "x (line 1): from jetbench.nexmark.config import NexmarkConfig: import NexmarkConfig from jetbench.nexmark"]
    assert _private_imports("x", "import jetbench as jb\njb.core.job_config.JobConfig()") == [
        "x (line 2): jb.core is not public"]
    assert _private_imports("x", "from jetbench import JobConfig\nfrom jetbench.wordcount import tokenize") == []


def test_every_error_a_user_meets_is_importable_from_jetbench():
    """Each `JetbenchError` of the engine, the pipeline API, the processors and the runners (what
    ``import jetbench`` and a snapshot store load) is ``jetbench.<Name>``. (The optional packages,
    jetbench.beam and jetbench.nexmark, export their own.)"""
    import jetbench.core.snapshot_store  # noqa: F401  (loaded lazily, with its error)

    def walk(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from walk(sub)

    internal = {"Unreadable"}  # the DAG builder's read-back signal, caught inside the builder
    missing = []
    for error in walk(jb.JetbenchError):
        parts = error.__module__.split(".")
        if error.__name__ in internal or parts[0] != "jetbench" or (
                len(parts) > 2 and parts[1] not in ("core", "pipeline", "processors")):
            continue
        if getattr(jb, error.__name__, None) is not error or error.__name__ not in jb.__all__:
            missing.append(f"{error.__module__}.{error.__name__}")
    assert not missing, missing
    assert {"JobConfig", "SnapshotStore", "ExecutionService", "SnapshotFormatError"} <= set(jb.__all__)
    assert jb.JobConfig("exactly_once").processing_guarantee == "exactly_once"


def test_the_local_kafka_broker_is_reached_from_the_kafka_package_without_a_client():
    """``from jetbench.kafka import LocalBroker`` (the package's docstring names it), and importing
    the package loads no Kafka client."""
    import subprocess
    import sys

    code = ("import sys\nfrom jetbench.kafka import LocalBroker, create_topic\n"
            "from jetbench.kafka.local_broker import LocalBroker as Same\n"
            "assert LocalBroker is Same and callable(create_topic)\n"
            "assert 'confluent_kafka' not in sys.modules, 'a client was imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
