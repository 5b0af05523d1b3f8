"""Query 9, winning bids: per auction, the highest bid at or above the reserve placed before the
auction's ``expires`` (on equal prices the earliest; then the lowest bidder id, so that the answer
never depends on arrival order) as ``AuctionBid(auction, bid)``, once the auction has closed.

Beam gives each auction a custom window ``[date_time, expires)`` and each bid a window
``[date_time, date_time + 2 × expected auction duration)`` that merges into its auction's window
when the bid is before ``expires``; the join fires when the merged window closes. Here the same
is the general keyed-state operator `flat_map_stateful` keyed by auction id with an event-time
timer: the auction's state holds the auction and its best valid bid so far, and its timer, at
``expires - 1`` (Beam's end-of-window timestamp), fires once the watermark shows that every bid
before ``expires`` has arrived; the result is stamped ``expires - 1``, as Beam's. Bids that come
before their auction (bids on the next few auctions the generator will open) wait in the state;
if no auction arrives by the bid's own window end (its timestamp + 2 × the expected auction
duration, as Beam's bid window), they are dropped. Persons are not selected out by a vertex of
their own (a pass over every event for the 1 event in 50 that is a person): they go to the
stateful vertex under the key None, where they leave no state. SMOKE (10,000 events, 100
generators): 298 results in Beam's published run.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...pipeline.stages import Stage
from ...processors.flat_map_stateful import FlatMapStatefulSpec, Keyed
from ..config import AUCTION_PROPORTION, PROPORTION_DENOMINATOR, NexmarkConfig
from ..model import Auction, Bid
from .results import AuctionBid


def expected_auction_duration_ms(config: NexmarkConfig) -> int:
    """Beam's expected auction duration: the time ``num_in_flight_auctions`` auctions take to
    open at the event rate (ms, rounded up)."""
    delay_us = config.inter_event_delay_us * PROPORTION_DENOMINATOR // AUCTION_PROPORTION
    return (delay_us * config.num_in_flight_auctions + 999) // 1000


def auction_id(event: Any) -> int | None:
    """The auction an auction or a bid belongs to (the key); None for a person. Bids (46 events
    in 50) first; one expression, so that generated code can compute it in place of a call
    (`jetbench.processors.inlining`)."""
    return event.auction if type(event) is Bid else event.id if type(event) is Auction else None


def best_valid(bids: Iterable[Bid], auction: Auction, best: Bid | None) -> Bid | None:
    """The best of ``best`` (a valid bid, or None) and the valid ``bids`` of ``auction`` (before
    its ``expires``, at or above its reserve): the highest price, on equal prices the earliest,
    then the lowest bidder. A bid can only win at or above ``floor`` (the reserve, then the best
    price so far), and most fail on their price alone, before their time is read.

    >>> a = Auction(1, "", "", 1, 100, 0, 1000, 1, 1, "")
    >>> best_valid([Bid(1, 7, 200, 30, ""), Bid(1, 4, 200, 30, ""), Bid(1, 2, 99, 5, "")], a, None).bidder
    4
    """
    floor, expires = (auction.reserve if best is None else best.price), auction.expires
    for bid in bids:
        price = bid.price
        if price >= floor and bid.date_time < expires and (
                best is None or price > floor or (bid.date_time, bid.bidder) < (best.date_time, best.bidder)):
            best, floor = bid, price
    return best


def new_state() -> list[Any]:
    """``[auction or None, best valid bid or None, bids that came before the auction, the
    latest end of their windows]``."""
    return [None, None, [], None]


class WinningBid:
    """The state function of the auction key (a class, so the bid window is a picklable field)."""

    def __init__(self, bid_window_ms: int):
        self.bid_window_ms = bid_window_ms

    def __call__(self, k: Keyed, event: Any) -> None:
        if k.key is None:  # a person: ignored, and the key None keeps no state
            k.state = None
            return None
        state = k.state
        auction = state[0]
        if type(event) is Auction:
            if auction is not None:
                return None  # the same auction again: the first one stays
            state[0] = auction = event
            # the bids that came before it (on Beam's 100 split timelines a third of all bids)
            state[1], state[2] = best_valid(state[2], auction, None), []
            k.timer = auction.expires - 1
        elif auction is None:  # a bid before its auction: keep it until the auction comes
            state[2].append(event)
            end = event.date_time + self.bid_window_ms
            if state[3] is None or end > state[3]:
                state[3] = end
            if k.timer is None:  # the first bid's end; `closed` moves it on to the latest end
                k.timer = end
        else:
            state[1] = best_valid((event,), auction, state[1])
        return None

    def items(self, k: Keyed, events: list[Any]) -> None:
        """The batch form (``fn_items``: ``__call__`` reads no ``k.time``, the times it needs
        are the events' own): an auction's events of a batch in one loop. Bids of a known
        auction, nearly all of them, are compared in place (`best_valid`'s loop written out, the
        auction's bounds and the price to beat in locals, kept between bids); the auction itself and bids before it go through
        ``__call__``; persons (the key None) leave no state."""
        if k.key is None:
            k.state = None
            return None
        state = k.state
        auction, best = state[0], state[1]
        # a bid can only win at or above `floor`: the reserve, or the best price so far (a best
        # bid is a valid one, so at or above the reserve): most bids fail on their price alone,
        # before their time is read
        expires = floor = 0
        if auction is not None:
            expires = auction.expires
            floor = auction.reserve if best is None else best.price
        for event in events:
            if auction is None or type(event) is not Bid:
                self(k, event)
                auction, best = state[0], state[1]
                if auction is not None:
                    expires = auction.expires
                    floor = auction.reserve if best is None else best.price
                continue
            price = event.price
            if price >= floor and event.date_time < expires and (
                    best is None or price > floor  # floor is the best price here
                    or (event.date_time, event.bidder) < (best.date_time, best.bidder)):
                state[1] = best = event
                floor = price
        return None


def closed(k: Keyed) -> list[AuctionBid] | None:
    """The auction closed (or its early bids' window passed): its winner, if it has one. With
    no auction yet and a later early bid's window still open, the timer moves to that window's
    end (set once there rather than at every early bid: the same firing, fewer timer entries)."""
    auction, best, _, latest = k.state
    if auction is None and latest is not None and latest > k.time:
        k.timer = latest
        return None
    k.state = None
    # tuple's C __new__: the named tuple's own is Python code (a frame and keyword parsing a result)
    return None if auction is None or best is None else [tuple.__new__(AuctionBid, (auction, best))]


def winning_bids(events: Stage, config: NexmarkConfig, name: str = "q9") -> Stage:
    """``AuctionBid`` per closed auction with a valid bid, stamped ``expires - 1``."""
    fn = WinningBid(2 * expected_auction_duration_ms(config))
    spec = FlatMapStatefulSpec(auction_id, new_state, fn, closed, fn_items=fn.items)
    return events.apply(spec, name=f"{name}-winning-bids")


def query(events: Stage, config: NexmarkConfig) -> Stage:
    return winning_bids(events, config)
