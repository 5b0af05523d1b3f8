"""Query 1, currency conversion: every bid, its price turned from dollars to euros as
``price * 89 / 100`` (Java's integer division: truncated). SMOKE: the 92,000 bids of 100,000
events."""

from __future__ import annotations

from ...pipeline.stages import Stage
from ..config import NexmarkConfig
from ..java_random import java_div
from ..model import Bid, is_bid


def to_euros(bid: Bid) -> Bid:
    price = bid.price * 89
    # floor division equals Java's truncating one for the (always positive) generated prices
    euros = price // 100 if price >= 0 else java_div(price, 100)
    return Bid(bid.auction, bid.bidder, euros, bid.date_time, bid.extra)


def query(events: Stage, config: NexmarkConfig) -> Stage:
    return events.filter(is_bid, name="q1-bids").map(to_euros, name="q1-euros")
