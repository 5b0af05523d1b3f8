"""`EntrySaver` and the outbox's snapshot bucket: a bucketful per call (no call per entry), a
pass that ends exactly at a full bucket, and saved entries counted as progress (a tasklet that
saves a large state across many calls must not look idle to its worker)."""

from __future__ import annotations

import pytest

from jetbench.core.outbox import Outbox
from jetbench.processors.snapshotting import EntrySaver


def _save_all(saver: EntrySaver, box: Outbox, make) -> tuple[list, int]:
    saved: list = []
    calls = 0
    while True:
        calls += 1
        before = box.accepted
        done = saver.save(box, make)
        taken = box.take_snapshot()
        assert box.accepted - before == len(taken), "every entry saved counts as progress"
        saved += taken
        if done:
            return saved, calls


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 12])
def test_a_pass_saves_every_entry_once_in_bucketfuls(n):
    box, saver = Outbox(ordinal_count=1, capacity=4), EntrySaver()
    entries = [(k, k * k) for k in range(n)]
    saved, calls = _save_all(saver, box, lambda: (e for e in entries))
    assert saved == entries
    assert calls == n // 4 + 1  # a pass ending at a full bucket learns it on the next call
    again, _ = _save_all(saver, box, lambda: iter(entries))  # the next save starts a new pass
    assert again == entries


def test_offer_to_snapshot_counts_as_progress_and_refuses_when_full():
    box = Outbox(ordinal_count=0, capacity=1)
    assert box.offer_to_snapshot("a", 1) and box.accepted == 1
    assert not box.offer_to_snapshot("b", 2) and box.accepted == 1
    assert not box.offer_entries_to_snapshot(iter([("c", 3)]))
    assert box.take_snapshot() == [("a", 1)]
