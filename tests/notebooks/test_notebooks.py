"""The teaching notebooks in ``notebooks/``: each runs top to bottom headless (nbclient) and its
own assertions hold, in the working copy `jetbench lab` serves (``jetbench.lab.working_copy``: a
notebook that reads ``../docs`` of the checkout fails here as it fails for a user), except the
ones tests/browser/test_notebooks_browser.py runs so in `jetbench lab` itself
(``notebook_lessons.RUN_IN_THE_BROWSER``, with the same checks); each ``NN-name.ipynb`` is
paired (jupytext) with ``NN-name.py``, its py:percent source, the two hold the same cells, and
the .ipynb is committed without outputs.

The slow tests start a kernel from the venv's kernelspec ("python3", whose ``python`` command
jupyter_client resolves to this test process's interpreter); the first injected cell checks
that the kernel really runs this venv's Python, with jetbench importable from this checkout.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient
from notebook_lessons import MUST_DISPLAY, RUN_IN_THE_BROWSER, parameter_overrides

from jetbench.lab import working_copy

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
NOTEBOOK_PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
#: The notebooks run here; tests/browser/test_notebooks_browser.py runs the others in `jetbench lab`.
HEADLESS_PATHS = [p for p in NOTEBOOK_PATHS if p.stem not in RUN_IN_THE_BROWSER]
#: The notebooks' sources: every py:percent file in the folder (all of them are notebooks).
SOURCE_PATHS = sorted(NOTEBOOKS.glob("*.py"))
PAIRING = "ipynb,py:percent"
SYNC = "`.venv/bin/jupytext --sync notebooks/*.py` (the newer of each pair wins)"

#: Seconds any one cell may take (the longest, the idle sweep, needs about 30).
CELL_TIMEOUT_S = 240
KERNEL_NAME = "python3"

#: Parameters the headless run sets after each notebook's parameters cell (papermill style):
#: only the sizes and repeats of what is timed for a chart, never what an assertion checks
#: exactly (Beam's SMOKE counts stay at Beam's size), nor a measurement window a statistical
#: assertion reads: every cell and every assertion runs as it is, only shorter.
TEST_PARAMETERS = {
    # the throughput chart: each query's result still equals the plain loop's; 11 queries x 2 sides
    "09-nexmark": {"THROUGHPUT_EVENTS": 10_000, "THROUGHPUT_REPEATS": 1},
    # timed runs for a bar chart; every count is still compared between the runners
    "05-spark-scale-out": {"REPEAT": 1, "LINES": 5_000, "EVENTS": 5_000},
}

KERNEL_CHECK = f"""\
import os, sys
import jetbench
assert sys.prefix == {sys.prefix!r}, ("kernel runs", sys.executable, sys.prefix)
assert os.path.dirname(os.path.dirname(jetbench.__file__)) == {str(ROOT)!r}, jetbench.__file__
"""


def _displayed(nb: nbformat.NotebookNode) -> set[str]:
    return {mime for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])
            for mime in out.get("data", {})}


@pytest.fixture(scope="module")
def lab_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The notebooks as `jetbench lab` serves them: its working copy, outside the checkout."""
    return working_copy(NOTEBOOKS, tmp_path_factory.mktemp("data") / "notebooks")[0]


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("path", HEADLESS_PATHS, ids=lambda p: p.stem)
def test_notebook_runs_headless(path: Path, lab_copy: Path) -> None:
    nb = nbformat.read(lab_copy / path.name, as_version=4)
    overrides = TEST_PARAMETERS.get(path.stem)
    if overrides:
        (at,) = [k for k, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
        nb.cells.insert(at + 1, nbformat.v4.new_code_cell("\n".join(parameter_overrides(nb.cells[at].source, overrides))))
    nb.cells.insert(0, nbformat.v4.new_code_cell(KERNEL_CHECK))
    client = NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name=KERNEL_NAME,
                            resources={"metadata": {"path": str(lab_copy)}})
    client.execute()  # a failing cell (e.g. a notebook's own assert) raises CellExecutionError
    errors = [out for cell in nb.cells for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors, errors
    missing = MUST_DISPLAY.get(path.stem, set()) - _displayed(nb)
    assert not missing, f"{path.name} displayed no {sorted(missing)}"


def _cells(nb: nbformat.NotebookNode) -> list[tuple[str, str, list[str]]]:
    """What a notebook teaches: each cell's type, source and tags (outputs, ids, counts aside)."""
    return [(c.cell_type, c.source, list(c.metadata.get("tags", []))) for c in nb.cells]


def test_every_notebook_has_its_source_and_is_listed() -> None:
    assert {p.stem for p in SOURCE_PATHS} == {p.stem for p in NOTEBOOK_PATHS} == set(MUST_DISPLAY), (
        f"each notebook is a pair NN-name.py + NN-name.ipynb (make the missing half with {SYNC})"
    )
    # every notebook runs top to bottom, here or in the browser
    assert set(RUN_IN_THE_BROWSER) <= set(MUST_DISPLAY)
    assert {p.stem for p in HEADLESS_PATHS} | set(RUN_IN_THE_BROWSER) == set(MUST_DISPLAY)


@pytest.mark.parametrize("source", SOURCE_PATHS, ids=lambda p: p.stem)
def test_notebook_matches_its_py_percent_source(source: Path) -> None:
    """A jupytext round trip: the .py read as a notebook has the .ipynb's cells, outputs aside, so
    editing either one (the .py in an editor, the .ipynb in JupyterLab) and not syncing fails."""
    text_nb = jupytext.read(source)
    assert text_nb.metadata["jupytext"]["text_representation"]["format_name"] == "percent"
    ipynb = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    assert ipynb.metadata.get("jupytext", {}).get("formats") == PAIRING, f"pair the notebook: {SYNC}"
    assert _cells(ipynb) == _cells(text_nb), f"{source.name} and its .ipynb differ: {SYNC}"


@pytest.mark.parametrize("path", NOTEBOOK_PATHS, ids=lambda p: p.stem)
def test_notebook_is_clean_and_parametrized(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == KERNEL_NAME
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), (
        "commit notebooks without outputs (Edit > Clear Outputs of All Cells, then save)")
    # papermill style: the first code cell holds the parameters, and only simple assignments
    assert code[0].metadata.get("tags") == ["parameters"]
    assert sum("parameters" in c.metadata.get("tags", []) for c in code) == 1
    for line in code[0].source.splitlines():
        text = line.strip()
        assert not text or text.startswith("#") or " = " in text, f"not an assignment in the parameters cell: {line!r}"
    assert any("assert " in c.source for c in code), "a notebook asserts its key claims"


#: a path out of the notebook's folder (``../docs/x.md``, ``Path("..")``), or into the checkout's
#: other folders: what `jetbench lab`'s working copy does not have
REPO_PATH = re.compile(r"""\.\./|Path\(\s*["']\.\.["']|["'(](docs|benchmarks|tests|scripts|widgets)/""")


@pytest.mark.parametrize("source", SOURCE_PATHS, ids=lambda p: p.stem)
def test_notebook_reads_nothing_of_the_checkouts_layout(source: Path, tmp_path: Path) -> None:
    """A notebook reads what ships in the package (``importlib.resources``) or what `working_copy`
    copies beside it (its ``images/``): every relative path it names exists in a working copy."""
    hits = [f"{source.name}:{n}: {line.strip()}" for n, line in enumerate(source.read_text().splitlines(), 1)
            if REPO_PATH.search(line)]
    assert not hits, "a notebook reaches into the repository's layout:\n" + "\n".join(hits)
    copy = working_copy(NOTEBOOKS, tmp_path / "copy")[0]
    for image in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", source.read_text()):
        assert (copy / image).is_file(), f"{source.name} shows {image}, which `jetbench lab`'s working copy lacks"
