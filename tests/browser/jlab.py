"""A throw-away JupyterLab server and Playwright helpers (recipe: shared/reference/browser-testing.md).

One server per test module, bound to 127.0.0.1 with a random token and fresh config, data,
runtime, settings and workspace directories; Debian's Chromium (``/usr/bin/chromium``) driven
by pip's Playwright. Missing pieces make the tests fail with what to install, never skip.

The same server serves both front ends: JupyterLab 4 at ``/lab`` and, with the ``notebook``
package installed, Notebook 7 at ``/notebooks/NAME.ipynb``; the page helpers take
``ui="lab"`` or ``ui="notebook"``. Both expose ``window.jupyterapp`` and the same notebook
DOM (``.jp-NotebookPanel``, ``.jp-CodeCell``, ``.jp-InputPrompt``), so only the URL and the
kernel-ready signal differ.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("JETBENCH_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
KERNEL_IDLE = '.jp-StatusBar-TextItem:text-matches("ipykernel[)] [|] Idle$")'
#: Notebook 7 has no status bar: ask the app whether the notebook's kernel exists and is idle
NOTEBOOK7_KERNEL_IDLE = (
    "() => window.jupyterapp?.shell?.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'"
)
UIS = ("lab", "notebook")
SETUP_HINT = "run `bash scripts/setup.sh` (installs Debian's chromium and the dev extras, as CI does)"


def require_browser_stack() -> Path:
    """The ``jupyter-lab`` executable; fail (not skip) when the browser-test stack is missing."""
    missing = []
    lab = Path(sys.executable).parent / "jupyter-lab"
    if not lab.exists():
        found = shutil.which("jupyter-lab")
        lab = Path(found) if found else lab
    if not lab.exists():
        missing.append("jupyter-lab (pip: jupyterlab)")
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        missing.append(f"{CHROMIUM} (Debian package: chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("playwright (pip: playwright; never `playwright install`)")
    if missing:
        pytest.fail(f"browser tests need {', '.join(missing)}: {SETUP_HINT}", pytrace=False)
    return lab


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    process: subprocess.Popen
    log: Path

    def notebook_url(self, name: str, ui: str = "lab") -> str:
        """``name`` in JupyterLab (``ui="lab"``) or in Notebook 7 (``ui="notebook"``)."""
        if ui == "notebook":
            return f"{self.url}/notebooks/{name}?token={self.token}"
        if ui != "lab":
            raise ValueError(f"ui must be one of {UIS}, got {ui!r}")
        # a workspace of its own per notebook: nothing of an earlier test is restored
        workspace = Path(name).stem
        return f"{self.url}/lab/workspaces/{workspace}/tree/{name}?token={self.token}"

    def api(self, method: str, path: str) -> Any:
        request = urllib.request.Request(f"{self.url}{path}?token={self.token}", method=method)
        with urllib.request.urlopen(request, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """Stop every kernel (and so the jobs and threads in it) the tests started."""
        for kernel in self.api("GET", "/api/kernels"):
            self.api("DELETE", f"/api/kernels/{kernel['id']}")

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(15)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)


def start_lab(base: Path, via_jetbench: bool = False, notebooks: tuple[Path, ...] = (),
              lab_copy: bool = False) -> Lab:
    """A server on a fresh ``base/notebooks`` root holding copies of ``notebooks``;
    ``via_jetbench`` starts it the way users do, with ``jetbench lab`` (loopback,
    01-getting-started as the default page when it is there). ``lab_copy`` starts plain
    ``jetbench lab``, as a user types it, with a fresh data directory (``JETBENCH_DATA_DIR``):
    it serves its own working copy of the checkout's notebooks, ``base/jetbench-data/notebooks``."""
    lab_exe = require_browser_stack()
    env = dict(os.environ)
    if lab_copy:
        via_jetbench = True
        env["JETBENCH_DATA_DIR"] = str(base / "jetbench-data")
        root = base / "jetbench-data" / "notebooks"
    else:
        root = base / "notebooks"
        root.mkdir()
    for path in notebooks:
        shutil.copy(path, root / path.name)
    for var, sub in (
        ("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTER_DATA_DIR", "data"),
        ("JUPYTERLAB_SETTINGS_DIR", "settings"), ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"), ("IPYTHONDIR", "ipython"),
    ):
        (base / sub).mkdir()
        env[var] = str(base / sub)
    notification = base / "settings" / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    # Notebook 7 (the `notebook` server extension) exposes window.jupyterapp too, as Lab does
    (base / "config" / "jupyter_server_config.json").write_text(
        json.dumps({"JupyterNotebookApp": {"expose_app_in_browser": True}})
    )
    env.pop("JUPYTER_PATH", None)
    env["PYTHONUNBUFFERED"] = "1"
    token = secrets.token_hex(16)
    port = free_port()
    log = base / "jupyterlab.log"
    quiet = ["--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None", "--LabApp.extension_manager=readonly"]
    if via_jetbench:
        where = [] if lab_copy else ["--dir", str(root)]
        command = [sys.executable, "-m", "jetbench", "lab", *where, "--port", str(port), "--token", token,
                   "--no-browser", *quiet]
    else:
        command = [
            str(lab_exe), "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
            "--ServerApp.open_browser=False", "--ServerApp.allow_root=True", f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}", *quiet,
        ]
    process = subprocess.Popen(
        command,
        env=env, cwd=base if lab_copy else root, stdout=log.open("wb"), stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    lab = Lab(f"http://127.0.0.1:{port}", token, root, process, log)
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            pytest.fail(f"jupyter lab exited ({process.returncode}):\n{log.read_text()[-3000:]}", pytrace=False)
        try:
            with urllib.request.urlopen(f"{lab.url}/api/status?token={token}", timeout=2) as r:
                if r.status == 200:
                    return lab
        except OSError:
            pass
        if time.monotonic() > deadline:
            lab.stop()
            pytest.fail(f"jupyter lab did not answer in 60 s:\n{log.read_text()[-3000:]}", pytrace=False)
        time.sleep(0.2)


def write_notebook(path: Path, cells: list[str]) -> None:
    nb = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "id": f"cell-{i}", "metadata": {}, "outputs": [],
             "source": src}
            for i, src in enumerate(cells)
        ],
        "metadata": {
            "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb, indent=1))


# ------------------------------------------------------------------------------ page helpers

def require_notebook7() -> None:
    """Fail (not skip) when Notebook 7 is missing."""
    try:
        from notebook import __version__ as version
    except ImportError:
        version = "0"
    if int(version.split(".")[0]) < 7:
        pytest.fail(f"the Notebook 7 tests need the pip package notebook>=7: {SETUP_HINT}", pytrace=False)


#: Whether the page holds a loaded JupyterLab (``expose_app_in_browser``).
LAB_LOADED = "() => !!(window.jupyterapp && window.jupyterapp.shell && window.jupyterapp.shell.widgets)"

#: The notebook ``path`` is open (made the current document if it is not) and its kernel is idle.
#: (Found by its path, not as ``currentWidget``: that follows the focus, which a loaded machine
#: may move later than the document opens.)
NOTEBOOK_READY = """(path) => {
    const shell = window.jupyterapp.shell;
    const w = [...shell.widgets('main')].find((w) => w.context && w.context.path === path);
    if (!w) return false;
    if (shell.currentWidget !== w) shell.activateById(w.id);
    const kernel = w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
    return !!kernel && kernel.status === 'idle';
}"""

#: What the page shows instead of a ready notebook: its documents, their kernels, open dialogs.
LAB_STATE = """() => {
    const shell = window.jupyterapp.shell;
    const docs = [...shell.widgets('main')].filter((w) => w.context).map((w) => {
        const s = w.sessionContext;
        const k = s && s.session && s.session.kernel;
        return w.context.path + ' kernel=' + (k ? k.status : 'none') + (shell.currentWidget === w ? ' (current)' : '');
    });
    const dialogs = [...document.querySelectorAll('.jp-Dialog')].map((d) => d.textContent.slice(0, 200));
    return {documents: docs, dialogs: dialogs, current: shell.currentWidget ? shell.currentWidget.id : null};
}"""

#: Close every document (unsaved changes dropped: each test writes its notebooks afresh) and
#: the side panels; true if no document and no dialog is left.
CLOSE_ALL = """async () => {
    const app = window.jupyterapp;  // (application:close-all leaves them open a while)
    await app.restored;  // a page just loaded may still be opening its URL's and workspace's documents
    for (const w of [...app.shell.widgets('main')]) {
        if (w.context) { w.context.model.dirty = false; w.dispose(); }
    }
    app.shell.collapseLeft();
    app.shell.collapseRight();
    // (JupyterLab opens a launcher in an empty main area)
    return ![...app.shell.widgets('main')].some((w) => w.context) && document.querySelectorAll('.jp-Dialog').length === 0;
}"""


def lab_loaded(page: Any, lab: Lab) -> bool:
    """Whether ``page`` holds JupyterLab served by ``lab`` (not Notebook 7, not another server)."""
    return page.url.startswith(f"{lab.url}/lab") and bool(page.evaluate(LAB_LOADED))


def close_documents(page: Any, lab: Lab) -> bool:
    """After a test: close what it opened in JupyterLab, so the next test opens its notebook in
    the loaded app (`open_notebook`); False if the page cannot be reused so."""
    try:
        return lab_loaded(page, lab) and bool(page.evaluate(CLOSE_ALL))
    except Exception:  # a page the test left broken: the fixture starts a new one
        return False


def open_notebook(page: Any, lab: Lab, name: str, ui: str = "lab") -> None:
    """Open ``name`` in JupyterLab or Notebook 7 and wait until its kernel is idle. Where the
    page already holds this server's JupyterLab, the notebook opens in it (as a user opens a
    file): loading the whole app again costs Chromium some 7 CPU seconds per test."""
    if ui == "notebook":
        require_notebook7()
    if ui == "lab" and lab_loaded(page, lab):
        page.evaluate("(path) => { window.jupyterapp.commands.execute('docmanager:open', {path}); }", name)
        try:
            page.wait_for_function(NOTEBOOK_READY, arg=name, timeout=60_000)
            page.locator(KERNEL_IDLE).wait_for(timeout=60_000)
        except Exception as e:
            pytest.fail(f"{name} did not open with an idle kernel in the loaded JupyterLab: "
                        f"{page.evaluate(LAB_STATE)} ({type(e).__name__})", pytrace=False)
        return
    page.goto(lab.notebook_url(name, ui))
    if ui == "notebook":
        page.wait_for_function(NOTEBOOK7_KERNEL_IDLE, timeout=60_000)
    else:
        page.locator(KERNEL_IDLE).wait_for(timeout=60_000)


#: The first error output of the open notebook, read from its model ("ename: evalue"), or null:
#: JupyterLab renders a traceback with the same mime type as any stderr text, so the page cannot
#: tell the two apart; the model can.
FIRST_ERROR = """() => {
    const isNotebook = (w) => !!(w && w.content && w.content.model && w.content.model.cells);
    const shell = window.jupyterapp.shell;
    let panel = shell.currentWidget;  // a side panel (a dashboard in a sidecar) may be current
    if (!isNotebook(panel)) panel = [...shell.widgets('main')].find(isNotebook);
    if (!isNotebook(panel)) return null;
    const cells = panel.content.model.cells;
    for (let i = 0; i < cells.length; i++) {
        const outputs = cells.get(i).outputs;
        for (let j = 0; outputs && j < outputs.length; j++) {
            const out = outputs.get(j).toJSON();
            if (out.output_type === 'error') return [out.ename + ': ' + out.evalue, ...(out.traceback || [])].join(String.fromCharCode(10));
        }
    }
    return null;
}"""


def first_error(page: Any) -> str | None:
    """The first failed cell's error of the open notebook (name, value and traceback), or None."""
    return page.evaluate(FIRST_ERROR)


def run_all(page: Any, cells: int, timeout_ms: int = 60_000, start: bool = True) -> None:
    """Run every cell (``start=False``: the run-all the test already started); return when the
    first ``cells`` code cells ran, fail at once on an error output (run-all stops there, so
    waiting on would only time out)."""
    if start:
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    page.wait_for_function(
        "(n) => { const firstError = " + FIRST_ERROR + """;
            if (firstError() !== null) return true;
            const ps = [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt')];
            return ps.length >= n && ps.slice(0, n).every((p) => /\\[\\d+\\]/.test(p.textContent));
        }""",
        arg=cells,
        timeout=timeout_ms,
    )
    error = first_error(page)
    if error is not None:
        pytest.fail(f"a cell failed:\n{error[-3000:]}", pytrace=False)


#: The MIME types of everything the open notebook displayed (its model's outputs' data).
DISPLAYED = """() => {
    const isNotebook = (w) => !!(w && w.content && w.content.model && w.content.model.cells);
    const shell = window.jupyterapp.shell;
    let panel = shell.currentWidget;
    if (!isNotebook(panel)) panel = [...shell.widgets('main')].find(isNotebook);
    const types = new Set();
    const cells = panel.content.model.cells;
    for (let i = 0; i < cells.length; i++) {
        const outputs = cells.get(i).outputs;
        for (let j = 0; outputs && j < outputs.length; j++) {
            Object.keys(outputs.get(j).toJSON().data || {}).forEach((t) => types.add(t));
        }
    }
    return [...types];
}"""


def displayed(page: Any) -> set[str]:
    """The MIME types the open notebook's outputs hold (what the headless test reads from nbclient)."""
    return set(page.evaluate(DISPLAYED))


def set_idle_controls(page: Any, dash: str) -> None:
    """On the dashboard ``dash`` (a selector): type 2000 into the min idle number, then drag the
    max idle slider past its end (the gestures a user makes)."""
    min_num = page.locator(f"{dash} input.jb-min-idle-num")
    min_num.fill("2000")
    min_num.press("Enter")
    max_range = page.locator(f"{dash} input.jb-max-idle-range")
    box = max_range.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] + 40, box["y"] + box["height"] / 2, steps=12)
    page.mouse.up()


def new_cell(page: Any) -> int:
    """Add a code cell below the last and start editing it; return its index among the code cells."""
    cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
    n = cells.count()
    cells.nth(n - 1).locator(".jp-InputPrompt").click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    cells.nth(n).wait_for()
    page.keyboard.press("Enter")
    return n


def run_new_cell(page: Any, code: str, timeout_ms: int = 30_000) -> str:
    """Enter ``code`` (one line) into a new cell below the last, run it, return its output text.
    The code goes in as one text input, as a paste does, not key by key: a key per character
    costs the page a render each (15 s for a line of 80 while a live timeline redraws)."""
    cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
    n = new_cell(page)
    page.keyboard.insert_text(code)
    page.keyboard.press("Shift+Enter")
    page.wait_for_function(
        """(i) => {
            const p = document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt')[i];
            return p && /\\[\\d+\\]/.test(p.textContent);
        }""",
        arg=n,
        timeout=timeout_ms,
    )
    return "\n".join(cells.nth(n).locator(".jp-OutputArea-output").all_inner_texts())


def screenshot(locator: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    locator.scroll_into_view_if_needed()
    locator.screenshot(path=str(path))
    return path


#: where the screenshots to look at go as well (``shot``)
REVIEW_SHOTS = Path("/tmp/team/shots")


def shot(locator: Any, name: str) -> Path:
    """A screenshot in tests/browser/artifacts/ (`screenshot`) and a copy in /tmp/team/shots/,
    where the screenshots to look at are gathered."""
    path = screenshot(locator, name)
    REVIEW_SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, REVIEW_SHOTS / name)
    return path
