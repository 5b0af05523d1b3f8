"""What the queries emit besides events (Beam's ``AuctionPrice``, ``AuctionCount``, ``IdNameReserve``,
``NameCityStateId``, ``AuctionBid``, ``CategoryPrice``, ``SellerPrice``, ``BidsPerSession``)."""

from __future__ import annotations

from typing import NamedTuple

from ..model import Auction, Bid


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


class NameCityStateId(NamedTuple):
    """Q3: a seller in OR, ID or CA and an auction of theirs in category 10."""

    name: str
    city: str
    state: str
    id: int


class AuctionBid(NamedTuple):
    """Q9 (and Q4, Q6 on top of it): an auction and its winning bid."""

    auction: Auction
    bid: Bid


class CategoryPrice(NamedTuple):
    """Q4: the mean winning price (rounded as Java's ``Math.round``) of ``category`` in the
    sliding window ``[window_start, window_end)``. (Beam's element is ``CategoryPrice(category,
    price, isLast)`` in that window; here the window is a field and every result is final.)"""

    window_start: int
    window_end: int
    category: int
    price: int


class SellerPrice(NamedTuple):
    """Q6: the mean price of a seller's last 10 winning bids (rounded as Java's ``Math.round``)."""

    seller: int
    price: int


class BidsPerSession(NamedTuple):
    """Q11: the bids of ``bidder`` in the session ``[session_start, session_end)``. (Beam's
    element is ``BidsPerSession(personId, bidsPerSession)``; here the session is a field.)"""

    session_start: int
    session_end: int
    bidder: int
    bids: int
