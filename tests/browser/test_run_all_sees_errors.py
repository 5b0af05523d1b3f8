"""The browser helpers notice a failing cell: `run_all` fails the test at once instead of
passing (or timing out) when a cell raises."""

import pytest

from .jlab import first_error, open_notebook, run_all, write_notebook


def test_run_all_fails_on_a_cell_that_raises(lab, page):
    write_notebook(lab.root / "raises.ipynb", ["x = 1", "1 / 0", "y = 2"])
    open_notebook(page, lab, "raises.ipynb")
    with pytest.raises(pytest.fail.Exception, match="ZeroDivisionError"):
        run_all(page, 3, timeout_ms=60_000)
    assert (first_error(page) or "").startswith("ZeroDivisionError: division by zero")


def test_run_all_passes_a_cell_that_only_warns(lab, page):
    write_notebook(lab.root / "warns.ipynb", ["import warnings", "warnings.warn('only a warning')", "z = 3"])
    open_notebook(page, lab, "warns.ipynb")
    run_all(page, 3, timeout_ms=60_000)
    assert first_error(page) is None
