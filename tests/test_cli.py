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


def test_bench_snapshots_json_on_a_tiny_input():
    report = json.loads(jetbench("bench", "snapshots", "--lines", "3000", "--items", "50000", "--keys", "2000",
                                 "--interval-ms", "50", "--repeat", "1", "--json"))
    assert report["results_equal"] is True
    for job in ("windowed wordcount", "chain"):
        per = report["throughput"][job]
        assert set(per) == {"none", "at_least_once", "exactly_once"} and all(v > 0 for v in per.values())
        for g in ("at_least_once", "exactly_once"):
            assert report["ratios"][job][g] == pytest.approx(per[g] / per["none"])
            assert report["cpu_ratios"][job][g] > 0
        assert report["snapshots_taken"][job]["none"] == 0
    keyed = report["keyed_state"]
    assert keyed["keys"] == 2000 and keyed["snapshots_timed"] == 3
    assert 0 < keyed["snapshot_ms_median"] <= keyed["snapshot_ms_max"]
    assert keyed["state_bytes_per_10k_keys"] * 2000 / 10_000 <= keyed["snapshot_bytes"]
    assert keyed["restart_ms"] > 0 and keyed["restored_from"] >= 1 and keyed["restored_from_stored"] is True


def test_bench_snapshots_rejects_bad_sizes():
    done = subprocess.run([sys.executable, "-m", "jetbench", "bench", "snapshots", "--keys", "-1"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--keys must be >= 0" in done.stderr


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


def test_idle_experiment_refuses_bad_arguments_with_a_message():
    done = subprocess.run([sys.executable, "-m", "jetbench", "idle-experiment", "--rates", "1000", "-5",
                           "--no-progress"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "idle-experiment: error: idle_sweep: rates must be numbers > 0, got -5.0" in done.stderr
    assert "Traceback" not in done.stderr


def test_lab_serves_a_working_copy_of_the_notebooks_and_says_where(tmp_path, monkeypatch, capsys):
    """`jetbench lab` never opens the checkout's own notebooks (autosave would write outputs into
    tracked files): it serves a copy in the user's data directory and says so."""
    from pathlib import Path

    from jetbench import lab

    checkout = Path(lab.__file__).resolve().parent.parent / "notebooks"
    before = {p.name: p.read_bytes() for p in checkout.iterdir() if p.is_file()}
    monkeypatch.setenv("JETBENCH_DATA_DIR", str(tmp_path / "data"))
    served = []
    monkeypatch.setattr(lab.subprocess, "call", lambda cmd, cwd: served.append((cmd, cwd)) or 0)
    assert lab.run_lab(open_browser=False) == 0
    copy = tmp_path / "data" / "notebooks"
    out = capsys.readouterr().out
    assert f"working on a copy of {checkout} in {copy}" in out and "copied 01-getting-started.ipynb" in out
    assert served[0][1] == copy and f"--ServerApp.root_dir={copy}" in served[0][0]
    assert (copy / "01-getting-started.ipynb").read_bytes() == before["01-getting-started.ipynb"]
    # the user's edits stay; a second start copies nothing
    (copy / "01-getting-started.ipynb").write_text("{}")
    lab.run_lab(open_browser=False)
    assert "  copied " not in capsys.readouterr().out
    assert (copy / "01-getting-started.ipynb").read_text() == "{}"
    assert {p.name: p.read_bytes() for p in checkout.iterdir() if p.is_file()} == before


def test_lab_reset_copies_every_notebook_afresh_and_keeps_the_users_version(tmp_path, monkeypatch, capsys):
    """`jetbench lab --reset` (the command line a user types) brings back the notebooks as they ship,
    their images too, and keeps what the user had (edits, outputs) beside them."""
    from pathlib import Path

    from jetbench import cli, lab

    checkout = Path(lab.__file__).resolve().parent.parent / "notebooks"
    monkeypatch.setenv("JETBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(lab.subprocess, "call", lambda cmd, cwd: 0)
    assert cli.main(["lab", "--no-browser"]) == 0
    copy = tmp_path / "data" / "notebooks"
    image = "images/dashboard-barrier.png"
    assert (copy / image).read_bytes() == (checkout / image).read_bytes()  # notebook 08 shows it
    (copy / "01-getting-started.ipynb").write_text('{"outputs": "saved by Lab"}')
    assert cli.main(["lab", "--no-browser"]) == 0
    assert (copy / "01-getting-started.ipynb").read_text() == '{"outputs": "saved by Lab"}'
    capsys.readouterr()
    assert cli.main(["lab", "--no-browser", "--reset"]) == 0
    out = capsys.readouterr().out
    assert "01-getting-started.ipynb reset: your copy is now 01-getting-started.edited-" in out
    assert (copy / "01-getting-started.ipynb").read_bytes() == (checkout / "01-getting-started.ipynb").read_bytes()
    kept = list(copy.glob("01-getting-started.edited-*.ipynb"))
    assert [k.read_text() for k in kept] == ['{"outputs": "saved by Lab"}']
    assert out.count("  copied ") == 1  # only the file that differed
    assert cli.main(["lab", "--reset", "--dir", str(tmp_path)]) == 2
    assert "--reset resets the working copy" in capsys.readouterr().err
