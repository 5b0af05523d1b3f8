"""The command line, run as a user would (a subprocess of the installed entry point's module)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

REQUIRED_KEYS = {"items", "jetbench_items_per_s", "baseline_items_per_s", "ratio", "results_equal"}


def jetbench(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "jetbench", *args], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_demo_prints_top_words_and_metrics():
    out = jetbench("demo", "--lines", "2000", "--top", "3")
    assert "top 3 words:" in out
    assert "per-tasklet metrics:" in out
    for vertex in ("source#0", "tokenize#0", "accumulate#0", "combine#0", "sink#0"):
        assert vertex in out


@pytest.mark.parametrize(
    "args",
    [
        ("chain", "--items", "20000", "--queue-items", "2000", "--repeat", "1"),
        ("chain", "--items", "20000", "--fused", "--queue-items", "0", "--repeat", "1"),
        ("wordcount", "--lines", "2000", "--repeat", "1"),
    ],
)
def test_bench_json(args):
    report = json.loads(jetbench("bench", *args, "--json"))
    assert report.keys() >= REQUIRED_KEYS
    assert report["results_equal"] is True
    assert report["ratio"] == pytest.approx(report["jetbench_items_per_s"] / report["baseline_items_per_s"])


def test_bench_rejects_unknown_name():
    done = subprocess.run([sys.executable, "-m", "jetbench", "bench", "nope"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "invalid choice" in done.stderr


@pytest.mark.slow
def test_demo_on_a_corpus_served_by_embedded_spark():
    out = jetbench("demo", "--source", "spark", "--lines", "2000", "--top", "3")
    assert "corpus served by Spark (local[" in out
    assert "top 3 words:" in out
    assert "spark.dataframe#0" in out


def test_unknown_arguments_are_refused_outside_lab():
    done = subprocess.run([sys.executable, "-m", "jetbench", "demo", "--bogus"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2
    assert "unrecognized arguments: --bogus" in done.stderr


@pytest.mark.timeout(120)
def test_lab_serves_the_notebooks_on_loopback_with_01_open(tmp_path):
    import os
    import signal
    import socket
    import time
    import urllib.error
    import urllib.request

    import psutil

    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    (notebooks / "01-getting-started.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    env = dict(os.environ)
    for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR", "JUPYTERLAB_WORKSPACES_DIR"):
        env[var] = str(tmp_path / var.lower())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (tmp_path / "lab.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jetbench", "lab", "--dir", str(notebooks), "--port", str(port), "--token", "t0k",
         "--no-browser", "--LabApp.news_url=None"],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "lab.log").read_text()
            try:
                urllib.request.build_opener(NoRedirect).open(f"http://127.0.0.1:{port}/?token=t0k", timeout=2)
            except urllib.error.HTTPError as redirect:
                location = redirect.headers["Location"]
                break
            except OSError:
                assert time.monotonic() < deadline, (tmp_path / "lab.log").read_text()
                time.sleep(0.3)
        assert location.split("?")[0].endswith("/lab/tree/01-getting-started.ipynb")
        server = psutil.Process(proc.pid)
        listening = [c.laddr for p in (server, *server.children(recursive=True))
                     for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
        assert listening and all(addr.ip == "127.0.0.1" for addr in listening), listening
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)
        log.close()
