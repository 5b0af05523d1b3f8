"""Fixtures of the browser tests: one JupyterLab server and one Chromium for all of tests/browser
(package scope: stopped when its last test ends), not one per module. Each test has a page of
its own in a fresh browser context, and its kernels are shut down after it; a module that needs
another server (test_notebooks_browser.py: `jetbench lab`) overrides ``lab``. tests/conftest.py
keeps every browser test on one pytest-xdist worker, so one server serves them all."""

from __future__ import annotations

import pytest

from .jlab import CHROMIUM, CHROMIUM_ARGS, start_lab


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


@pytest.fixture
def page(chromium, lab):
    context = chromium.new_context(viewport={"width": 1500, "height": 1100})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()
    lab.shutdown_kernels()
