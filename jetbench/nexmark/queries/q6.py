"""Query 6, average selling price by seller: per seller, the mean price of their last 10 winning
bids (Q9's winners; the last by bid time, then price), rounded as Java's ``Math.round``, as
``SellerPrice(seller, price)``.

Beam re-windows the winning bids into the global window with a trigger firing after every
element, accumulating, so it emits once per winning bid, and once more per seller when the
input ends and the global window closes (Beam's published 401 counts all these firings). Here
that is `flat_map_stateful` keyed by seller: per winning bid it emits the mean of the last 10,
and a timer at ``math.inf`` (the end of the global window) emits the final value once per seller
at the end of the input. The winning bids are handed over in time order (``sorted_input``), so
that which bids each firing averages does not depend on how the winners of different auctions
interleave (winners of auctions closing at the same time: by auction id). SMOKE (10,000 events, 100 generators): 401 firings in Beam's published run.
"""

from __future__ import annotations

import math
from bisect import insort
from operator import attrgetter
from typing import Any

from ...pipeline.stages import Stage
from ...processors.flat_map_stateful import FlatMapStatefulSpec, Keyed
from ..config import NexmarkConfig
from ..java_random import java_round
from ..model import Bid
from .q9 import winning_bids
from .results import AuctionBid, SellerPrice

LAST = 10
#: a result made as ``_new(SellerPrice, (seller, price))``: the named tuple's own ``__new__`` is
#: Python code (a frame and keyword parsing per result), tuple's is C
_new = tuple.__new__


#: a winner's seller; a bid's (time, price) (C-level attribute getters: no Python call each)
seller_of = attrgetter("auction.seller")
time_then_price = attrgetter("date_time", "price")


#: a bid's price (for the mean: summed over the bids in C)
price_of = attrgetter("price")


def mean_price(bids: list[Bid]) -> int:
    return java_round(sum(map(price_of, bids)) / len(bids))


def new_last_bids() -> list[Bid]:
    return []


def add_winner(k: Keyed, winner: AuctionBid) -> list[SellerPrice]:
    bids = k.state
    # the bids are kept sorted: the new one goes in after the equal ones, where append and a
    # stable sort would put it, with a binary search (no key made for the bids it passes)
    insort(bids, winner.bid, key=time_then_price)
    if len(bids) > LAST:
        del bids[0]
    k.timer = math.inf
    return [_new(SellerPrice, (k.key, mean_price(bids)))]


def final_pane(k: Keyed) -> list[SellerPrice]:
    bids: Any = k.state
    k.state = None
    return [_new(SellerPrice, (k.key, mean_price(bids)))]


#: the order of winners with equal timestamps: by auction id
auction_id = attrgetter("auction.id")


def query(events: Stage, config: NexmarkConfig) -> Stage:
    spec = FlatMapStatefulSpec(seller_of, new_last_bids, add_winner, final_pane, sorted_input=True, order_key=auction_id)
    return winning_bids(events, config, "q6").apply(spec, name="q6-last-10")
