"""Beam's test modules mark tests with markers Beam's own repository registers (its conftest is
not in the wheel): registered here so that --strict-markers accepts them."""

from __future__ import annotations


def pytest_configure(config):
    config.addinivalue_line("markers", "it_validatesrunner: Beam's ValidatesRunner integration tests")
