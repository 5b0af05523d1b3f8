"""The embedded session: loopback-only, quiet, files under the cache directory."""

from __future__ import annotations

import ipaddress
import os

import psutil
import pytest

from jetbench import JetbenchError
from jetbench.spark import _session, cache_dir, session

LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


def spark_processes(spark):
    jvm = psutil.Process(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    return [jvm, *jvm.children(recursive=True)]


def test_nothing_listens_on_a_non_loopback_address(spark):
    spark.sparkContext.parallelize(range(4), 2).map(lambda x: x + 1).collect()  # Python workers up
    listening = []
    for proc in [*spark_processes(spark), psutil.Process()]:
        try:
            conns = proc.net_connections(kind="inet")
        except psutil.NoSuchProcess:
            continue
        listening += [(proc.pid, c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN]
    assert listening, "the JVM should at least listen for the driver RPC and py4j"
    for pid, ip, port in listening:
        assert ip in LOOPBACK or ipaddress.ip_address(ip.removeprefix("::ffff:")).is_loopback, (pid, ip, port)


def test_driver_settings(spark):
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert conf.get("spark.ui.enabled") == "false"
    assert spark.sparkContext.uiWebUrl is None
    assert conf.get("spark.sql.execution.arrow.pyspark.enabled") == "true"
    assert conf.get("spark.python.unix.domain.socket.enabled") == "true"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    assert spark.conf.get("spark.sql.adaptive.enabled") == "false"
    assert spark.sparkContext.defaultParallelism == 2
    assert os.environ["SPARK_LOCAL_IP"] == "127.0.0.1"


def test_files_live_under_the_cache_directory(spark, spark_cache):
    conf = spark.sparkContext.getConf()
    root = str(cache_dir())
    assert root.startswith(str(spark_cache))
    assert conf.get("spark.local.dir").startswith(root)
    assert conf.get("spark.sql.warehouse.dir").removeprefix("file:").startswith(root)
    log4j = cache_dir() / "conf" / "log4j2.properties"
    assert "rootLogger.level = error" in log4j.read_text()
    assert str(log4j) in conf.get("spark.driver.extraJavaOptions")
    assert not os.path.exists("spark-warehouse")


def test_session_returns_the_active_session(spark):
    assert session() is spark
    assert session("local[2]") is spark


def test_a_foreign_session_is_not_restarted(spark, monkeypatch):
    monkeypatch.setattr(_session, "_embedded", None)  # pretend the user made this one
    with pytest.raises(JetbenchError, match="already running"):
        session("local[1]")
    assert session() is spark


@pytest.mark.parametrize("master,cores", [("local", 1), ("local[3]", 3), ("local[2, 4]", 2),
                                          ("local[*]", os.cpu_count())])
def test_master_cores(master, cores):
    assert _session.master_cores(master) == cores


def test_embedded_config_binds_to_loopback(tmp_path):
    conf = _session.embedded_config("local[4]", tmp_path, driver_memory="1g", ui=True)
    assert conf["spark.driver.bindAddress"] == conf["spark.driver.host"] == "127.0.0.1"
    assert conf["spark.ui.enabled"] == "true"
    assert conf["spark.sql.shuffle.partitions"] == conf["spark.default.parallelism"] == "4"
    assert conf["spark.sql.adaptive.enabled"] == "false"
    assert conf["spark.driver.memory"] == "1g"
    assert all(str(tmp_path) in conf[k] for k in ("spark.local.dir", "spark.sql.warehouse.dir"))


UI_CHECK = """
import json, psutil
from jetbench.spark import session, stop
spark = session("local[1]", driver_memory="512m", ui=True)
spark.sparkContext.parallelize(range(4), 2).map(lambda x: x).collect()
jvm = psutil.Process(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
listening = [c.laddr.ip for p in [jvm, *jvm.children(recursive=True)] for c in p.net_connections(kind="inet")
             if c.status == psutil.CONN_LISTEN]
print(json.dumps({"ui": spark.sparkContext.uiWebUrl, "listening": listening}))
stop()
"""


@pytest.mark.slow
def test_the_web_ui_when_asked_for_binds_to_loopback(spark_cache, tmp_path):
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", UI_CHECK], capture_output=True, text=True, timeout=180,
                         env={**os.environ, "JETBENCH_CACHE": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["ui"] and "127.0.0.1" in report["ui"]
    assert report["listening"]
    assert all(ip in LOOPBACK for ip in report["listening"]), report


def test_sessions_restored_stops_only_a_session_the_block_left_behind(monkeypatch):
    """The block benchmarks run in: the session on entry (a caller's) is left running; one the
    block started or restarted (another master) is stopped at its end, also on an error. The
    shared session's side is `test_bench.py::test_bench_command_prints_json`."""
    entry, restarted = object(), object()
    stopped: list[bool] = []
    monkeypatch.setattr(_session, "stop", lambda jvm=False: stopped.append(jvm))
    active = [entry]
    monkeypatch.setattr(_session, "_active", lambda: active[-1])
    with _session.sessions_restored():
        pass
    assert stopped == []
    with pytest.raises(RuntimeError), _session.sessions_restored():
        active.append(restarted)
        raise RuntimeError("the benchmark failed")
    assert stopped == [False]
