"""`max_all_by`'s batch path (``accumulate_all``, what the windows call for a batch within one
frame) keeps the very list the per-item path keeps, whatever the batches."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from jetbench.nexmark.queries.max_all import max_all_by


@given(st.lists(st.lists(st.tuples(st.integers(0, 5), st.integers()), max_size=8), max_size=6))
def test_batches_equal_items_one_by_one(batches):
    op = max_all_by(lambda pair: pair[0])
    per_item = op.create()
    batched = op.create()
    for batch in batches:
        for item in batch:
            per_item = op.accumulate(per_item, item)
        batched = op.accumulate_all(batched, list(batch))
    assert op.finish(batched) == op.finish(per_item)
    assert batched[0] == per_item[0]
