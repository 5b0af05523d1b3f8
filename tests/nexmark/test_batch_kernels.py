"""The batch forms the queries give their operators equal the per-item forms, whatever the
events and however they are cut into batches: Q9's `WinningBid.items` (``fn_items`` of its
`flat_map_stateful`) against `WinningBid.__call__` item by item."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from jetbench.nexmark.model import Auction, Bid
from jetbench.nexmark.queries.q9 import WinningBid, new_state
from jetbench.processors.flat_map_stateful import Keyed

AUCTION = 7


def event():
    """An auction (id 7: the key) or a bid on it: few distinct prices, times and bidders, so ties come up."""
    auction = st.builds(lambda t, expires, reserve: Auction(AUCTION, "i", "d", 1, reserve, t, t + expires, 1, 10, ""),
                        st.integers(0, 50), st.integers(1, 50), st.integers(0, 5))
    bid = st.builds(lambda price, t, bidder: Bid(AUCTION, bidder, price, t, ""),
                    st.integers(0, 8), st.integers(0, 100), st.integers(0, 3))
    return st.one_of(bid, bid, bid, auction)


def cell():
    k = Keyed()
    k.key, k.state = AUCTION, new_state()
    return k


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.lists(event(), max_size=8), max_size=6))
def test_q9_batch_form_equals_its_calls_item_by_item(batches):
    fn = WinningBid(30)
    one_by_one, batched = cell(), cell()
    for batch in batches:
        for e in batch:
            one_by_one.time = e.date_time
            assert fn(one_by_one, e) is None
        batched.time = max((e.date_time for e in batch), default=None)  # what fn_items sees; __call__ reads none
        assert fn.items(batched, batch) is None
        assert (batched.state, batched.timer) == (one_by_one.state, one_by_one.timer)
