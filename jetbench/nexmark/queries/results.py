"""What the queries emit besides events (Beam's ``AuctionPrice``, ``AuctionCount``, ``IdNameReserve``)."""

from __future__ import annotations

from typing import NamedTuple


class AuctionPrice(NamedTuple):
    """Q2: a bid's auction and price."""

    auction: int
    price: int


class AuctionCount(NamedTuple):
    """Q5: an auction with the most bids in the sliding window ``[window_start, window_end)``.
    (Beam's element is ``AuctionCount(auction, num)`` in that window; here the window is a field.)"""

    window_start: int
    window_end: int
    auction: int
    num: int


class IdNameReserve(NamedTuple):
    """Q8: a new person and the reserve of an auction they opened in the same window."""

    id: int
    name: str
    reserve: int
