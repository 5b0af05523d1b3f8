"""Every script of ``benchmarks/`` still starts: its imports resolve and its arguments parse.

The figures of `benchmarks/README.md` come with the commands that made them; a script whose
import went stale (as ``builder_50.py``'s did when a helper moved) would only be found by the
next person to measure. Each runs as its README command does, ``python benchmarks/<name>.py``,
here with ``--help``, in a process of its own.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from benchmark_scripts import BENCHMARKS

SCRIPTS = sorted(BENCHMARKS.glob("*.py"))


def test_there_are_scripts_to_check():
    assert len(SCRIPTS) >= 10


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_a_benchmark_script_starts(script):
    if script.stem.startswith("beam_"):
        pytest.importorskip("apache_beam")
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=300,
                          cwd=BENCHMARKS.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout
