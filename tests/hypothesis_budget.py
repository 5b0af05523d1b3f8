"""How many examples a hypothesis test tries: ``examples(n)`` is ``n`` in the whole suite and a
share of it where ``JETBENCH_TEST_EXAMPLES`` says so (a factor, e.g. ``0.25``): the fast lane
(``scripts/test.sh --fast``) sets it, so the inner loop tries each property on fewer examples
while the whole suite, before a merge, tries them all.

    @settings(max_examples=examples(200), deadline=None)
"""

from __future__ import annotations

import os

#: the share of each test's examples tried in this run (1: all of them)
FACTOR = float(os.environ.get("JETBENCH_TEST_EXAMPLES", "1") or 1)


def examples(n: int) -> int:
    """``n`` examples scaled by `FACTOR`, at least 5 (and never more than ``n``)."""
    return min(n, max(5, round(n * FACTOR)))
