"""The queries in plain Python, written apart from the engine: the answers the pipelines in
`jetbench.nexmark.queries` must give. Each takes the events (any order) and the configuration
and returns the results as a list; windows are computed from each event's ``date_time``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from .config import NexmarkConfig
from .json_events import from_json, to_json
from .model import Auction, Bid, Event, Person
from .queries.results import AuctionCount, AuctionPrice, IdNameReserve


def q0(events: Iterable[Event], config: NexmarkConfig) -> list[Any]:
    return [from_json(to_json(e)) for e in events]


def q1(events: Iterable[Event], config: NexmarkConfig) -> list[Any]:
    out = []
    for e in events:
        if isinstance(e, Bid):
            euros = e.price * 89 // 100  # prices are positive: floor and truncation agree
            out.append(Bid(e.auction, e.bidder, euros, e.date_time, e.extra))
    return out


def q2(events: Iterable[Event], config: NexmarkConfig) -> list[Any]:
    return [AuctionPrice(e.auction, e.price) for e in events
            if isinstance(e, Bid) and e.auction % config.auction_skip == 0]


def q5(events: Iterable[Event], config: NexmarkConfig) -> list[Any]:
    size, period = config.window_size_sec * 1000, config.window_period_sec * 1000
    counts: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))  # window start -> auction -> n
    for e in events:
        if isinstance(e, Bid):
            last_start = e.date_time - e.date_time % period
            for start in range(last_start - size + period, last_start + 1, period):
                counts[start][e.auction] += 1
    out = []
    for start, per_auction in counts.items():
        top = max(per_auction.values())
        out += [AuctionCount(start, start + size, a, n) for a, n in per_auction.items() if n == top]
    return out


def q7(events: Iterable[Event], config: NexmarkConfig) -> list[Any]:
    size = config.window_size_sec * 1000
    windows: dict[int, list[Bid]] = defaultdict(list)
    for e in events:
        if isinstance(e, Bid):
            windows[e.date_time - e.date_time % size].append(e)
    out = []
    for bids in windows.values():
        top = max(b.price for b in bids)
        out += [b for b in bids if b.price == top]
    return out


def q8(events: Iterable[Event], config: NexmarkConfig) -> list[Any]:
    size = config.window_size_sec * 1000
    persons: dict[tuple[int, int], list[Person]] = defaultdict(list)
    auctions: dict[tuple[int, int], list[Auction]] = defaultdict(list)
    for e in events:
        window = e.date_time - e.date_time % size
        if isinstance(e, Person):
            persons[(window, e.id)].append(e)
        elif isinstance(e, Auction):
            auctions[(window, e.seller)].append(e)
    return [IdNameReserve(p.id, p.name, a.reserve)
            for key, ps in persons.items() for p in ps for a in auctions.get(key, ())]


REFERENCE: dict[int, Callable[[Iterable[Event], NexmarkConfig], list[Any]]] = {
    0: q0, 1: q1, 2: q2, 5: q5, 7: q7, 8: q8,
}
