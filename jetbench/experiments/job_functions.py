"""The idle job's user function, interpreted as a user's would be: its maps (`idle_job`) and
its latency probe (`latency_probe`, compiled with the engine) both map items with it."""

from __future__ import annotations

from typing import Any


def identity(x: Any) -> Any:
    return x
