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
    """The pages the tests share: a browser context per server (by its URL; its HTTP cache warm
    for every page of it) and in it a page per front end, JupyterLab and Notebook 7. A test that
    leaves JupyterLab as it found it (its documents closed, see ``page``) hands the loaded app to
    the next, which opens its notebook in it (`jlab.open_notebook`); Notebook 7 loads a page per
    notebook, in a page of its own, so that a Notebook 7 test between two JupyterLab tests does
    not make the second load the whole app again (some 7 CPU-s of Chromium each). A failed
    test's page is dropped: the next test of its kind gets a fresh one."""

    def __init__(self, chromium: Any) -> None:
        self.chromium = chromium
        self.contexts: dict[str, Any] = {}
        self.pages: dict[tuple[str, str], Any] = {}

    def get(self, url: str, kind: str) -> Any:
        if url not in self.contexts:
            self.contexts[url] = self.chromium.new_context(viewport=VIEWPORT)
        if (url, kind) not in self.pages:
            self.pages[url, kind] = self.contexts[url].new_page()
        return self.pages[url, kind]

    def drop_page(self, url: str, kind: str) -> None:
        page = self.pages.pop((url, kind), None)
        if page is not None:
            page.close()

    def drop(self, url: str) -> None:
        """Close the server's pages and their context."""
        for key in [key for key in self.pages if key[0] == url]:
            del self.pages[key]
        context = self.contexts.pop(url, None)
        if context is not None:
            context.close()


@pytest.fixture(scope="package")
def pages(chromium):
    pages = Pages(chromium)
    yield pages
    for url in list(pages.contexts):
        pages.drop(url)


@pytest.fixture
def page(pages, lab, request):
    kind = "notebook7" if request.node.get_closest_marker("notebook7") is not None else "lab"
    page = pages.get(lab.url, kind)
    page.bring_to_front()  # the context's other page hides it: a hidden page draws no frames
    page.set_viewport_size(VIEWPORT)
    page.set_default_timeout(30_000)
    failed = request.session.testsfailed
    yield page
    if request.session.testsfailed > failed:
        pages.drop_page(lab.url, kind)
    elif kind == "notebook7":
        try:  # nothing left polling a kernel that is shut down below
            page.goto("about:blank")
        except Exception:
            pages.drop_page(lab.url, kind)
    elif not close_documents(page, lab):
        pages.drop_page(lab.url, kind)
    lab.shutdown_kernels()
