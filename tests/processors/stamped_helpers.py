"""Test helpers for processors that read stamped chunks (``accepts_stamped``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def reading_pairs(supplier: Callable[[], Any]) -> Callable[[], Any]:
    """``supplier``'s processors, opted out of stamped chunks: `jetbench.testing.verify_processor`
    then hands them ``(ts, item)`` pairs (an opted-in processor gets each batch as columns)."""

    def make() -> Any:
        p = supplier()
        p.accepts_stamped = False
        return p

    return make
