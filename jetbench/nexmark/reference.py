"""The queries in plain Python, written apart from the engine: the answers the pipelines in
`jetbench.nexmark.queries` must give. Each takes the events (any order) and the configuration
and returns the results as a list; windows are computed from each event's ``date_time``.

Q3, Q6 and Q9 are written as a plain loop over all the events would compute them (Q9: a dict of
auctions, then the best bid per auction; Q3: each seller's events in time order), not as state
and timers. The engine's timers follow the watermark; on the generated inputs (seconds of event
time) no seller's events are 600 s apart and no bid comes long before its auction, so the two
meet exactly; Q3's expiry is modelled as a gap of more than 600 s between a seller's events.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from .config import NexmarkConfig
from .java_random import java_round
from .json_events import from_json, to_json
from .model import Auction, Bid, Event, Person
from .queries.results import (
    AuctionBid,
    AuctionCount,
    AuctionPrice,
    BidsPerSession,
    CategoryPrice,
    IdNameReserve,
    NameCityStateId,
    SellerPrice,
)


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


def q3(events: Iterable[Event], config: NexmarkConfig) -> list[Any]:
    waiting_ms = config.max_auctions_waiting_time * 1000
    per_seller: dict[int, list[Person | Auction]] = defaultdict(list)
    for e in events:
        if isinstance(e, Person) and e.state in ("OR", "ID", "CA"):
            per_seller[e.id].append(e)
        elif isinstance(e, Auction) and e.category == 10:
            per_seller[e.seller].append(e)
    out = []
    for evs in per_seller.values():
        evs.sort(key=lambda e: e.date_time)
        person: Person | None = None
        waiting: list[Auction] = []
        last: int | None = None
        for e in evs:
            if last is not None and e.date_time - last > waiting_ms:  # the state expired in between
                person, waiting = None, []
            last = e.date_time
            if isinstance(e, Person):
                if person is None:
                    person = e
                    out += [NameCityStateId(e.name, e.city, e.state, a.id) for a in waiting]
                    waiting = []
            elif person is None:
                waiting.append(e)
            else:
                out.append(NameCityStateId(person.name, person.city, person.state, e.id))
    return out


def q9(events: Iterable[Event], config: NexmarkConfig) -> list[Any]:
    auctions: dict[int, Auction] = {}
    bids: list[Bid] = []
    for e in events:
        if isinstance(e, Auction):
            auctions.setdefault(e.id, e)
        elif isinstance(e, Bid):
            bids.append(e)
    best: dict[int, Bid] = {}
    for b in bids:
        a = auctions.get(b.auction)
        if a is None or b.date_time >= a.expires or b.price < a.reserve:
            continue
        current = best.get(a.id)
        if current is None or (-b.price, b.date_time, b.bidder) < (-current.price, current.date_time, current.bidder):
            best[a.id] = b
    return [AuctionBid(auctions[i], b) for i, b in best.items()]


def q4(events: Iterable[Event], config: NexmarkConfig) -> list[Any]:
    size, period = config.window_size_sec * 1000, config.window_period_sec * 1000
    sums: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0])  # (window start, category) -> [sum, n]
    for w in q9(events, config):
        t = w.auction.expires - 1  # a winner counts when its auction closes
        last_start = t - t % period
        for start in range(last_start - size + period, last_start + 1, period):
            acc = sums[(start, w.auction.category)]
            acc[0] += w.bid.price
            acc[1] += 1
    return [CategoryPrice(start, start + size, category, java_round(total / n))
            for (start, category), (total, n) in sums.items()]


def q6(events: Iterable[Event], config: NexmarkConfig) -> list[Any]:
    last: dict[int, list[Bid]] = {}
    out = []

    def mean(bids: list[Bid]) -> int:
        return java_round(sum(b.price for b in bids) / len(bids))

    for w in sorted(q9(events, config), key=lambda w: (w.auction.expires, w.auction.id)):  # as auctions close
        bids = last.setdefault(w.auction.seller, [])
        bids.append(w.bid)
        bids.sort(key=lambda b: (b.date_time, b.price))
        del bids[:-10]
        out.append(SellerPrice(w.auction.seller, mean(bids)))
    out += [SellerPrice(seller, mean(bids)) for seller, bids in last.items()]  # the final pane per seller
    return out


def q11(events: Iterable[Event], config: NexmarkConfig) -> list[Any]:
    gap = config.window_size_sec * 1000
    times: dict[int, list[int]] = defaultdict(list)
    for e in events:
        if isinstance(e, Bid):
            times[e.bidder].append(e.date_time)
    out = []
    for bidder, ts in times.items():
        ts.sort()
        start, end, n = ts[0], ts[0] + gap, 0
        for t in ts:
            if t > end:  # a gap: the session closed (a bid right at its end still joins it)
                out.append(BidsPerSession(start, end, bidder, n))
                start, end, n = t, t + gap, 0
            end = max(end, t + gap)
            n += 1
        out.append(BidsPerSession(start, end, bidder, n))
    return out


REFERENCE: dict[int, Callable[[Iterable[Event], NexmarkConfig], list[Any]]] = {
    0: q0, 1: q1, 2: q2, 3: q3, 4: q4, 5: q5, 6: q6, 7: q7, 8: q8, 9: q9, 11: q11,
}
