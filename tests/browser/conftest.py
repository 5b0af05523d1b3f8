"""Fixtures of the browser tests: one JupyterLab server and one Chromium for all of tests/browser
(package scope: stopped when its last test ends), not one per module. The tests share one page
per front end (``Pages``): JupyterLab stays loaded in its page (each test opens its notebook in
the app; its documents are closed and its kernels shut down after it), Notebook 7 has a page of
its own (tests marked ``notebook7``, which a ``ui="notebook"`` parameter sets); a failed test
leaves a fresh page to the next. A module that needs another server (test_notebooks_browser.py:
`jetbench lab`) overrides ``lab`` (its pages are its own, dropped with it). tests/conftest.py
keeps every browser test on one pytest-xdist worker, so one server serves them all."""

from __future__ import annotations

from typing import Any

import pytest

from .jlab import CHROMIUM, CHROMIUM_ARGS, close_documents, start_lab


def pytest_configure(config):
    config.addinivalue_line("markers", "notebook7: a browser test in Notebook 7 (it gets a page of its own)")


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.browser)
            callspec = getattr(item, "callspec", None)
            if callspec is not None and callspec.params.get("ui") == "notebook":
                item.add_marker(pytest.mark.notebook7)


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


class Pages:
    """The pages the tests share, one per front end: JupyterLab of each server (by its URL) and
    Notebook 7. A test that leaves JupyterLab as it found it (its documents closed, see ``page``)
    hands the loaded app to the next, which opens its notebook in it (`jlab.open_notebook`);
    Notebook 7 loads a page per notebook, on a page of its own, so that a Notebook 7 test between
    two JupyterLab tests does not make the second load the whole app again (some 7 CPU-s of
    Chromium each). A failed test's page is dropped: the next test of its kind gets a fresh one."""

    def __init__(self, chromium: Any) -> None:
        self.chromium = chromium
        self.contexts: dict[str, Any] = {}

    def get(self, key: str) -> Any:
        if key not in self.contexts:
            self.contexts[key] = self.chromium.new_context(viewport=VIEWPORT)
            self.contexts[key].new_page()
        return self.contexts[key].pages[0]

    def drop(self, key: str) -> None:
        context = self.contexts.pop(key, None)
        if context is not None:
            context.close()


@pytest.fixture(scope="package")
def pages(chromium):
    pages = Pages(chromium)
    yield pages
    for key in list(pages.contexts):
        pages.drop(key)


@pytest.fixture
def page(pages, lab, request):
    notebook7 = request.node.get_closest_marker("notebook7") is not None
    key = "notebook7" if notebook7 else lab.url
    page = pages.get(key)
    page.set_viewport_size(VIEWPORT)
    page.set_default_timeout(30_000)
    failed = request.session.testsfailed
    yield page
    if request.session.testsfailed > failed:
        pages.drop(key)
    elif notebook7:
        try:  # nothing left polling a kernel that is shut down below
            page.goto("about:blank")
        except Exception:
            pages.drop(key)
    elif not close_documents(page, lab):
        pages.drop(key)
    lab.shutdown_kernels()
