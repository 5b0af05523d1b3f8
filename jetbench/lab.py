"""``jetbench lab``: JupyterLab on the teaching notebooks, bound to loopback, 01 opened first.

The server listens on 127.0.0.1 only; its root is the notebooks folder of the checkout (or
``--dir``), and the URL it prints (and ``/``) opens ``01-getting-started.ipynb``. Anything
after the known options goes to ``jupyter lab`` unchanged, e.g. ``--ServerApp.port=9000``.

Each notebook there is a pair: ``NN-name.ipynb``, which Lab opens, and ``NN-name.py``, its
py:percent source (jupytext). With jupytext installed (the ``dev`` extra), Lab saves both
files of a pair; without it, only the .ipynb, and ``jupytext --sync notebooks/*.py`` brings
the .py up to date.

>>> cmd = lab_command(Path("notebooks"), port=8899, open_browser=False)
>>> cmd[1:3], "--ServerApp.ip=127.0.0.1" in cmd, "--LabApp.default_url=/lab/tree/01-getting-started.ipynb" in cmd
(['-m', 'jupyterlab'], True, True)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: The notebook opened when the server starts.
FIRST_NOTEBOOK = "01-getting-started.ipynb"


def default_notebook_dir() -> Path:
    """The checkout's ``notebooks/`` folder, else the current directory."""
    repo_notebooks = Path(__file__).resolve().parent.parent / "notebooks"
    return repo_notebooks if repo_notebooks.is_dir() else Path.cwd()


def lab_command(notebook_dir: Path, *, port: int | None = None, open_browser: bool = True,
                token: str | None = None, extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The ``python -m jupyterlab`` command line ``jetbench lab`` runs."""
    cmd = [sys.executable, "-m", "jupyterlab", "--ServerApp.ip=127.0.0.1", f"--ServerApp.root_dir={notebook_dir}"]
    if (notebook_dir / FIRST_NOTEBOOK).exists() or not notebook_dir.exists():
        cmd.append(f"--LabApp.default_url=/lab/tree/{FIRST_NOTEBOOK}")
    if port is not None:
        cmd += [f"--ServerApp.port={port}", "--ServerApp.port_retries=0"]
    if not open_browser:
        cmd.append("--ServerApp.open_browser=False")
    if token is not None:
        cmd.append(f"--IdentityProvider.token={token}")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        # containers often run as root; JupyterLab refuses that unless told
        cmd.append("--ServerApp.allow_root=True")
    return [*cmd, *extra]


def run_lab(notebook_dir: Path | None = None, *, port: int | None = None, open_browser: bool = True,
            token: str | None = None, extra: list[str] | tuple[str, ...] = ()) -> int:
    """Run JupyterLab in the foreground until it stops (Ctrl+C); returns its exit code."""
    notebook_dir = (notebook_dir or default_notebook_dir()).resolve()
    if not notebook_dir.is_dir():
        raise FileNotFoundError(f"jetbench lab: no notebook folder at {notebook_dir}")
    cmd = lab_command(notebook_dir, port=port, open_browser=open_browser, token=token, extra=extra)
    print(f"jetbench lab: JupyterLab on 127.0.0.1 serving {notebook_dir} (Ctrl+C to stop)", flush=True)
    try:
        return subprocess.call(cmd, cwd=notebook_dir)
    except KeyboardInterrupt:
        return 0
