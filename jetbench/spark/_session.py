"""The embedded SparkSession: local, loopback-only, quiet, with its files under the project cache.

Settings follow ``shared/reference/spark-notes.md`` (measured on PySpark 4 here): the driver and
every server it opens bind to 127.0.0.1, the web UI is off unless asked for (then on loopback
too), log4j2 logs errors only, shuffles use few partitions and adaptive execution is off (on
small local data it only splits each query at its shuffles into Spark jobs of their own, re-planned
between them: the Nexmark SMOKE suite on the SparkRunner took 38.0 s with it, 31.3 s without, same
session), Arrow is on, Python workers talk to
the JVM over Unix domain sockets, and temp, local and warehouse directories live under
`cache_dir` (``$JETBENCH_CACHE/spark``, default ``~/.cache/jetbench/spark``), in a directory
of the process's own (`run_dir`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core.errors import JetbenchError

#: The master used when none is given and no session is active.
DEFAULT_MASTER = "local[*]"

_LOG4J2 = """\
# Written by jetbench: only errors reach the console.
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
"""

_lock = threading.RLock()
_embedded: Any = None  # the SparkSession this module created, while it runs


def cache_dir() -> Path:
    """Where jetbench keeps Spark's files: ``$JETBENCH_CACHE/spark`` or ``~/.cache/jetbench/spark``."""
    root = os.environ.get("JETBENCH_CACHE")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "jetbench"
    return base / "spark"


def master_cores(master: str) -> int:
    """Task slots of a local master: ``local`` -> 1, ``local[4]`` -> 4, ``local[*]`` -> CPU count."""
    m = re.fullmatch(r"local(?:\[(\*|\d+)(?:\s*,\s*\d+)?\])?", master.strip())
    if not m:
        return os.cpu_count() or 1
    n = m.group(1)
    if n is None:
        return 1
    return (os.cpu_count() or 1) if n == "*" else max(1, int(n))


def run_dir(directory: Path | None = None) -> Path:
    """This process's own directory, ``<cache>/run/<pid>-<start time>``: Spark's temp and local
    directories, the Unix sockets of its Python workers and the SQL warehouse. Spark leaves
    socket files behind, and the default catalog lives in memory (a table written by an
    earlier process must not block a new one of the same name), so each process starts
    clean; directories of processes that have ended are removed."""
    base = (directory or cache_dir()) / "run"
    mine = base / _process_tag(os.getpid())
    if base.is_dir():
        for d in base.iterdir():
            if d != mine and not _alive(d.name):
                shutil.rmtree(d, ignore_errors=True)
    return mine


#: Unix socket paths are limited to 107 bytes; Spark's socket names take 42 (``/.<uuid>.sock``).
_MAX_SOCKET_DIR = 64


def socket_dir(run: Path) -> Path:
    """Where the Unix sockets between the JVM and the Python workers go: ``run/tmp``, or when
    that path is too long for a socket address, ``<system temp>/jetbench-<uid>/<process>``."""
    preferred = run / "tmp"
    if len(os.fsencode(preferred)) <= _MAX_SOCKET_DIR:
        return preferred
    import tempfile

    base = Path(tempfile.gettempdir()) / f"jetbench-{os.getuid() if hasattr(os, 'getuid') else 'user'}"
    if base.is_dir():
        for d in base.iterdir():
            if d.name != run.name and not _alive(d.name):
                shutil.rmtree(d, ignore_errors=True)
    short = base / run.name
    short.mkdir(parents=True, exist_ok=True)
    return short


def _process_tag(pid: int) -> str:
    import psutil

    try:
        return f"{pid}-{int(psutil.Process(pid).create_time())}"
    except psutil.Error:
        return f"{pid}-0"


def _alive(tag: str) -> bool:
    pid, _, _ = tag.partition("-")
    return pid.isdigit() and _process_tag(int(pid)) == tag


def _active() -> Any:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession() or SparkSession._instantiatedSession
    if active is None:
        return None
    sc = active.sparkContext
    if getattr(sc, "_jsc", None) is None:  # stopped
        return None
    return active


def embedded_config(
    master: str,
    directory: Path,
    driver_memory: str = "2g",
    ui: bool = False,
    shuffle_partitions: int | None = None,
    fast_start: bool = True,
) -> dict[str, str]:
    """The builder settings of the embedded session (see the module docstring)."""
    run = run_dir(directory)
    tmp = run / "tmp"
    conf_dir = directory / "conf"
    warehouse = run / "warehouse"
    for d in (tmp, conf_dir, warehouse):
        d.mkdir(parents=True, exist_ok=True)
    log4j = conf_dir / "log4j2.properties"
    if not log4j.exists() or log4j.read_text() != _LOG4J2:
        log4j.write_text(_LOG4J2)
    java_opts = [f"-Dlog4j2.configurationFile=file:{log4j}", f"-Djava.io.tmpdir={tmp}"]
    if fast_start:  # measured: start-up 5.0 s -> 3.6 s; drop for long, heavy jobs
        java_opts += ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
    parts = str(shuffle_partitions or master_cores(master))
    return {
        "spark.master": master,
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": parts,
        "spark.sql.adaptive.enabled": "false",
        "spark.default.parallelism": parts,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
        "spark.python.unix.domain.socket.enabled": "true",
        "spark.python.unix.domain.socket.dir": str(socket_dir(run)),
        "spark.driver.memory": driver_memory,
        "spark.local.dir": str(tmp),
        "spark.sql.warehouse.dir": str(warehouse),
        "spark.driver.extraJavaOptions": " ".join(java_opts),
    }


def session(
    master: str | None = None,
    *,
    app_name: str = "jetbench",
    driver_memory: str = "2g",
    ui: bool = False,
    shuffle_partitions: int | None = None,
    fast_start: bool = True,
    config: dict[str, Any] | None = None,
) -> Any:
    """The active SparkSession if there is one, else a new embedded local one.

    ``master`` defaults to ``local[*]``. Asking for a master other than the active session's
    restarts the session when jetbench made it (JVM-wide settings such as ``driver_memory``
    stay those of the first session in the process) and raises `JetbenchError` otherwise.
    ``ui=True`` starts the web UI, bound to 127.0.0.1 like everything else. ``config`` adds
    or overrides builder settings.
    """
    global _embedded
    with _lock:
        active = _active()
        if active is not None:
            current = active.sparkContext.master
            if master is None or master == current:
                return active
            if active is not _embedded:
                raise JetbenchError(
                    f"a SparkSession with master {current!r} is already running; stop it before asking "
                    f"for {master!r}, or call session() without a master to use it"
                )
            active.stop()
            _embedded = None
        master = master or DEFAULT_MASTER
        directory = cache_dir()
        settings = embedded_config(master, directory, driver_memory, ui, shuffle_partitions, fast_start)
        if config:
            settings.update({k: str(v) for k, v in config.items()})
        # JVM-level: fixed by the first session in the process, so set before it starts.
        # Workers run this interpreter: it has pyarrow and jetbench, and unpickles our functions
        # (``config={"spark.pyspark.python": ...}`` still wins, as Spark settings do over env).
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.appName(app_name)
        for key, value in settings.items():
            builder = builder.config(key, value)
        with _jvm_notice_filtered():
            spark = builder.getOrCreate()
        _embedded = spark
        return spark


#: what the JVM says on every start (Spark's launcher always adds the incubating vector API module)
_JVM_NOTICE = b"WARNING: Using incubator modules"


@contextlib.contextmanager
def _jvm_notice_filtered() -> Any:
    """While inside, file descriptor 2 is a pipe that drops the JVM's start-up notice
    "WARNING: Using incubator modules: jdk.incubator.vector" (a notebook shows it in red though
    nothing is wrong) and passes every other line on: a JVM started inside keeps that pipe for
    its stderr, so its real errors still show."""
    try:
        saved = os.dup(2)
        read, write = os.pipe()
    except OSError:
        yield
        return

    def pump() -> None:
        with os.fdopen(read, "rb") as source:
            for line in source:
                if not line.startswith(_JVM_NOTICE):
                    with contextlib.suppress(OSError):
                        os.write(saved, line)

    threading.Thread(target=pump, name="jetbench-jvm-stderr", daemon=True).start()
    os.dup2(write, 2)
    os.close(write)
    try:
        yield
    finally:
        os.dup2(saved, 2)  # this process's stderr as it was; the JVM keeps the pipe


def stop(jvm: bool = False) -> None:
    """Stop the session `session()` created, if it is running (a user's own session is left alone).

    Stopping a session leaves its JVM running (a few hundred MB), ready for the next session.
    ``jvm=True`` ends the JVM too when no session runs any more: Spark's gateway exits when
    its standard input closes; the next `session()` starts a new JVM (≈4 s)."""
    global _embedded
    with _lock:
        if _embedded is not None:
            spark, _embedded = _embedded, None
            if getattr(spark.sparkContext, "_jsc", None) is not None:
                spark.stop()
        if jvm and _active() is None:
            _stop_jvm()


@contextlib.contextmanager
def sessions_restored() -> Iterator[None]:
    """A block that may start `session()` on other masters (a benchmark going from ``local[1]``
    to ``local[2]``): at its end the session it left running is stopped, unless it is the one
    that was active when the block began (a caller's session outlives the block)."""
    entry = _active()
    try:
        yield
    finally:
        if _active() is not entry:
            stop()


def _stop_jvm() -> None:
    try:
        from pyspark import SparkContext
    except ImportError:
        return
    gateway = SparkContext._gateway
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    with contextlib.suppress(Exception):
        gateway.shutdown()
    if proc is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()  # PythonGatewayServer exits on end of input
        try:
            proc.wait(timeout=15)
        except Exception:
            proc.kill()
            proc.wait(timeout=5)
    SparkContext._gateway = None
    SparkContext._jvm = None
