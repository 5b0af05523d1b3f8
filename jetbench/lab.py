"""``jetbench lab``: JupyterLab on the teaching notebooks, bound to loopback, 01 opened first.

The server listens on 127.0.0.1 only, and the URL it prints (and ``/``) opens
``01-getting-started.ipynb``. Anything after the known options goes to ``jupyter lab``
unchanged, e.g. ``--ServerApp.port=9000``.

Its root is a working copy of the checkout's notebooks in the user's data directory
(``$JETBENCH_DATA_DIR/notebooks``, default ``$XDG_DATA_HOME/jetbench/notebooks``, i.e.
``~/.local/share/jetbench/notebooks``), so that opening and running a notebook (autosave writes
its outputs) never modifies the tracked files; `working_copy` brings a notebook there up to date
when its source in the checkout changed, keeping an edited copy under another name. ``--dir``
serves a folder as it is.

Each notebook there is a pair: ``NN-name.ipynb``, which Lab opens, and ``NN-name.py``, its
py:percent source (jupytext). With jupytext installed (the ``dev`` extra), Lab saves both
files of a pair; without it, only the .ipynb, and ``jupytext --sync notebooks/*.py`` brings
the .py up to date.

>>> cmd = lab_command(Path("notebooks"), port=8899, open_browser=False)
>>> cmd[1:3], "--ServerApp.ip=127.0.0.1" in cmd, "--LabApp.default_url=/lab/tree/01-getting-started.ipynb" in cmd
(['-m', 'jupyterlab'], True, True)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

#: The notebook opened when the server starts.
FIRST_NOTEBOOK = "01-getting-started.ipynb"


def default_notebook_dir() -> Path:
    """The checkout's ``notebooks/`` folder, else the current directory."""
    repo_notebooks = Path(__file__).resolve().parent.parent / "notebooks"
    return repo_notebooks if repo_notebooks.is_dir() else Path.cwd()


#: what `working_copy` copies: the notebooks, their py:percent sources, jupytext's settings and
#: the images their markdown shows (``images/NAME.png``, a path relative to the notebook)
COPIED = ("*.ipynb", "*.py", "jupytext.toml", "images/*.png")
#: the working copy's record of what it copied: ``{"version", "files": {name: sha256}}``
MANIFEST = ".jetbench-copy.json"


def data_dir() -> Path:
    """The user's jetbench data directory: ``$JETBENCH_DATA_DIR``, else ``$XDG_DATA_HOME/jetbench``
    (``~/.local/share/jetbench``)."""
    if os.environ.get("JETBENCH_DATA_DIR"):
        return Path(os.environ["JETBENCH_DATA_DIR"])
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "jetbench"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def working_copy(source: Path, dest: Path | None = None, *, reset: bool = False) -> tuple[Path, list[str]]:
    """Bring the copy of ``source``'s notebooks in ``dest`` (default: ``data_dir()/notebooks``) up
    to date; returns ``(dest, what was done)``, one line per file copied or kept.

    A file missing there is copied. A file whose source changed since it was copied (a new
    version of jetbench, a ``git pull``) is copied again; if the user had edited the copy (its
    content is not what was copied), the edited one is first renamed ``NAME.edited-TIME.ipynb``.
    A copy of an unchanged source stays as the user left it (edits and outputs), unless
    ``reset``: then every copy that differs from its source is copied again, the user's version
    kept beside it the same way (``jetbench lab --reset``).

    >>> import tempfile
    >>> src, dst = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp()) / "nb"
    >>> _ = (src / "01-a.ipynb").write_text("{}")
    >>> working_copy(src, dst)[1]
    ['copied 01-a.ipynb']
    >>> _ = (dst / "01-a.ipynb").write_text('{"edited": 1}')
    >>> working_copy(src, dst)[1], (dst / "01-a.ipynb").read_text()
    ([], '{"edited": 1}')
    >>> _ = (src / "01-a.ipynb").write_text('{"new": 1}')
    >>> done = working_copy(src, dst)[1]
    >>> done[0].startswith("01-a.ipynb changed in jetbench: your edited copy is now 01-a.edited-"), (dst / "01-a.ipynb").read_text()
    (True, '{"new": 1}')
    >>> _ = (dst / "01-a.ipynb").write_text('{"outputs": 1}')
    >>> done = working_copy(src, dst, reset=True)[1]
    >>> done[0].startswith("01-a.ipynb reset: your copy is now 01-a.edited-"), (dst / "01-a.ipynb").read_text()
    (True, '{"new": 1}')
    """
    from . import __version__

    dest = dest if dest is not None else data_dir() / "notebooks"
    dest.mkdir(parents=True, exist_ok=True)
    manifest_path = dest / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        manifest = {}
    copied: dict[str, str] = dict(manifest.get("files", {}))
    done: list[str] = []
    for pattern in COPIED:
        for src in sorted(source.glob(pattern)):
            if not src.is_file():
                continue
            name = src.relative_to(source).as_posix()
            target = dest / name
            want = _digest(src)
            if target.exists() and copied.get(name) == want and not reset:
                continue  # the source did not change: the copy stays as the user left it
            if target.exists() and _digest(target) == want:
                copied[name] = want
                continue
            if target.exists() and (reset or (name in copied and _digest(target) != copied[name])):
                kept = target.with_name(f"{target.stem}.edited-{time.strftime('%Y%m%d-%H%M%S')}{target.suffix}")
                target.rename(kept)
                why = "reset: your copy" if reset else "changed in jetbench: your edited copy"
                done.append(f"{name} {why} is now {kept.name}")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
            copied[name] = want
            done.append(f"copied {name}")
    manifest_path.write_text(json.dumps({"version": __version__, "source": str(source), "files": copied}, indent=1))
    return dest, done


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
            token: str | None = None, extra: list[str] | tuple[str, ...] = (), reset: bool = False) -> int:
    """Run JupyterLab in the foreground until it stops (Ctrl+C); returns its exit code. Without
    ``notebook_dir`` it serves the working copy of the checkout's notebooks (`working_copy`;
    ``reset`` copies every notebook again, keeping the user's versions beside them)."""
    if reset and notebook_dir is not None:
        raise ValueError("jetbench lab: --reset resets the working copy; it cannot be used with --dir")
    if notebook_dir is None and default_notebook_dir() != Path.cwd():
        source = default_notebook_dir().resolve()
        notebook_dir, done = working_copy(source, reset=reset)
        print(f"jetbench lab: working on a copy of {source} in {notebook_dir} (your edits and outputs stay "
              "there; a notebook that changes in jetbench is copied again, an edited copy kept beside it)", flush=True)
        for line in done:
            print(f"jetbench lab:   {line}", flush=True)
    notebook_dir = (notebook_dir or Path.cwd()).resolve()
    if not notebook_dir.is_dir():
        raise FileNotFoundError(f"jetbench lab: no notebook folder at {notebook_dir}")
    cmd = lab_command(notebook_dir, port=port, open_browser=open_browser, token=token, extra=extra)
    print(f"jetbench lab: JupyterLab on 127.0.0.1 serving {notebook_dir} (Ctrl+C to stop)", flush=True)
    try:
        return subprocess.call(cmd, cwd=notebook_dir)
    except KeyboardInterrupt:
        return 0
