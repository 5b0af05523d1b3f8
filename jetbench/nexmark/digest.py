"""A digest of a query's results that does not depend on their order: SHA-256 of the sorted
``repr`` of each result, one per line (the first 16 hex digits)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any


def digest(results: Iterable[Any]) -> str:
    h = hashlib.sha256()
    for line in sorted(map(repr, results)):
        h.update(line.encode())
        h.update(b"\n")
    return h.hexdigest()[:16]
