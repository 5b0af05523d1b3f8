"""Fixtures of the browser tests: one JupyterLab server and one Chromium for all of tests/browser
(package scope: stopped when its last test ends), not one per module. The tests share one page
while JupyterLab stays loaded in it (each opens its notebook in the app; its documents are
closed and its kernels shut down after it); a failed test leaves a fresh page to the next. A
module that needs another server (test_notebooks_browser.py: `jetbench lab`) overrides ``lab``. tests/conftest.py
keeps every browser test on one pytest-xdist worker, so one server serves them all."""

from __future__ import annotations

from typing import Any

import pytest

from .jlab import CHROMIUM, CHROMIUM_ARGS, close_documents, start_lab


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="package")
def lab(tmp_path_factory):
    server = start_lab(tmp_path_factory.mktemp("lab"))
    yield server
    server.stop()


@pytest.fixture(scope="package")
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


VIEWPORT = {"width": 1500, "height": 1100}


@pytest.fixture(scope="package")
def pages(chromium):
    """The page the tests share while they can: a test that leaves JupyterLab as it found it
    (its documents closed, see ``page``) hands the loaded app to the next, which opens its
    notebook in it (`jlab.open_notebook`); a failed test, Notebook 7 or another server get a
    new page in a fresh browser context."""
    current: dict[str, Any] = {}

    def fresh() -> None:
        if "context" in current:
            current["context"].close()
        current["context"] = chromium.new_context(viewport=VIEWPORT)
        current["page"] = current["context"].new_page()

    fresh()
    yield current, fresh
    current["context"].close()


@pytest.fixture
def page(pages, lab, request):
    current, fresh = pages
    page = current["page"]
    page.set_viewport_size(VIEWPORT)
    page.set_default_timeout(30_000)
    failed = request.session.testsfailed
    yield page
    if request.session.testsfailed > failed or not close_documents(page, lab):
        fresh()
    lab.shutdown_kernels()
