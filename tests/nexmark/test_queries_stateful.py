"""Q3, Q4, Q6, Q9 and Q11 on small hand-made event sets whose answers are worked out by hand (and
equal to the plain-Python reference on them too). `test_queries.py` checks every query, these
included, against the reference on generated events of several sizes, on one timeline and on
100, and from the generating source with two instances; `tests/spark/test_nexmark_spark.py` on
the SparkRunner."""

from __future__ import annotations

from collections import Counter

from jetbench import run
from jetbench.nexmark.config import NexmarkConfig
from jetbench.nexmark.model import Auction, Bid, Person
from jetbench.nexmark.queries import pipeline
from jetbench.nexmark.queries.q9 import expected_auction_duration_ms
from jetbench.nexmark.queries.results import (
    AuctionBid,
    BidsPerSession,
    CategoryPrice,
    NameCityStateId,
    SellerPrice,
)
from jetbench.nexmark.reference import REFERENCE
from jetbench.nexmark.source import from_events

CONFIG = NexmarkConfig(base_time=0)


def person(pid, t, state="OR"):
    return Person(pid, f"p{pid}", "e@x.com", "0000", f"city{pid}", state, t, "")


def auction(aid, t, expires, reserve=1, seller=1, category=10):
    return Auction(aid, "item", "desc", 1, reserve, t, expires, seller, category, "")


def bid(auction_id, price, t, bidder=1):
    return Bid(auction_id, bidder, price, t, "")


def run_query(q, events):
    pairs = sorted(((e.date_time, e) for e in events), key=lambda p: p[0])
    got = run(pipeline(q, from_events(pairs), CONFIG), progress=False, cooperative_threads=2)
    assert Counter(map(repr, got)) == Counter(map(repr, REFERENCE[q](events, CONFIG))), q
    return got


def test_q9_winning_bid_per_auction():
    a1 = auction(1, 100, 1100, reserve=100)
    a2 = auction(2, 100, 2000, reserve=1000)
    events = [
        bid(1, 150, 50),              # before its auction (a bid on an auction about to open): valid
        a1, bid(1, 200, 300, bidder=7), bid(1, 200, 200, bidder=8),  # equal prices: the earlier (t 200) wins
        bid(1, 999, 1100),            # at expires: too late
        bid(1, 90, 400),              # below the reserve
        a2, bid(2, 500, 150),         # a2's only bid is below its reserve: no winner
        auction(3, 200, 5000),        # no bids: no winner
        bid(4, 10**6, 300),           # an auction never seen: nothing
    ]
    assert run_query(9, events) == [AuctionBid(a1, bid(1, 200, 200, bidder=8))]


def test_q9_early_bids_are_ranked_as_later_ones_when_their_auction_comes():
    # all four bids come before their auction (as a third of all bids do on Beam's 100 split
    # timelines): the scan made when the auction arrives keeps the same order as later bids get
    a1 = auction(1, 500, 2000, reserve=100)
    a2 = auction(2, 500, 2000, reserve=100)
    events = [
        bid(1, 300, 40, bidder=9), bid(1, 300, 30, bidder=9),  # equal prices: the earlier (t 30) wins
        bid(1, 99, 10), bid(1, 250, 20),                       # below the reserve; a lower price
        bid(2, 300, 30, bidder=9), bid(2, 300, 30, bidder=4),  # equal prices and times: the lower bidder
        bid(2, 200, 35),
        a1, a2,
    ]
    assert sorted(run_query(9, events), key=lambda w: w.auction.id) == [
        AuctionBid(a1, bid(1, 300, 30, bidder=9)), AuctionBid(a2, bid(2, 300, 30, bidder=4))]


def test_q9_early_bids_wait_for_their_auction_only_as_long_as_beams_bid_window():
    window = 2 * expected_auction_duration_ms(CONFIG)  # 2 x 16,667 ms with Beam's defaults
    assert window == 33_334
    late_auction = auction(1, window + 20_000, window + 30_000)
    events = [bid(1, 50, 0), bid(2, 60, 0), auction(2, 100, 5000),
              person(5, window + 5000),  # the watermark passes the window of the bid on auction 1
              late_auction, bid(9, 1, 10 * window)]
    pairs = sorted(((e.date_time, e) for e in events), key=lambda p: p[0])
    got = run(pipeline(9, from_events(pairs), CONFIG), progress=False)
    # auction 2 opened in time for its early bid; auction 1's came after the bid's window had passed
    assert got == [AuctionBid(auction(2, 100, 5000), bid(2, 60, 0))]


def winner(aid, price, expires, category=10, seller=1, bid_time=0):
    return [auction(aid, 0, expires, seller=seller, category=category), bid(aid, price, bid_time)]


def test_q4_mean_winning_price_per_category_over_sliding_windows():
    # winners count at expires - 1: 5000 is in [0, 10 s) and [5 s, 15 s); 4999 in [-5 s, 5 s) and
    # [0, 10 s); 12000 in [5 s, 15 s) and [10 s, 20 s)
    events = winner(1, 100, 5001, category=1) + winner(2, 301, 5000, category=1) + winner(3, 50, 12_001, category=2)
    assert sorted(run_query(4, events)) == [
        CategoryPrice(-5000, 5000, 1, 301),
        CategoryPrice(0, 10_000, 1, 201),  # (100 + 301) / 2 = 200.5: Java's Math.round gives 201
        CategoryPrice(5000, 15_000, 1, 100),
        CategoryPrice(5000, 15_000, 2, 50),
        CategoryPrice(10_000, 20_000, 2, 50),
    ]


def test_q6_mean_of_each_sellers_last_ten_winning_prices_at_every_firing():
    events = []
    for i in range(1, 13):  # seller 7 wins auctions 1..12 at 100 * i, closing one after the other
        events += winner(i, 100 * i, 1000 * i + 1, seller=7, bid_time=i)
    events += winner(13, 10**6, 20_001, seller=7, bid_time=0)  # closes last, but its bid is the oldest
    events += winner(14, 5, 3001, seller=8)
    got = run_query(6, events)
    firings_7 = [SellerPrice(7, 50 * (k + 1)) for k in range(1, 11)]  # 100, 150, ..., 550
    firings_7 += [SellerPrice(7, 650), SellerPrice(7, 750)]  # 200..1100 and 300..1200: the last 10
    firings_7 += [SellerPrice(7, 750)]  # auction 13's bid is older than all ten kept: it drops out at once
    finals = [SellerPrice(7, 750), SellerPrice(8, 5)]  # the final pane of each seller
    assert sorted(got) == sorted(firings_7 + [SellerPrice(8, 5)] + finals)
    assert [r for r in got if r.seller == 7][:13] == firings_7  # in the order the auctions closed


def test_q3_local_sellers_joined_with_their_category_10_auctions():
    p1, p2, p3 = person(1, 0, "OR"), person(2, 0, "WA"), person(3, 3000, "CA")
    events = [
        p1, p2,
        auction(10, 1000, 10**9, seller=1),               # p1 known: out at once
        auction(11, 1100, 10**9, seller=1, category=11),  # not category 10
        auction(12, 2000, 10**9, seller=3),               # before p3: waits for p3
        p3,                                               # -> (p3, 12)
        auction(13, 2500, 10**9, seller=2),               # p2 is in WA
        auction(14, 603_000, 10**9, seller=3),            # 600 s after p3's last event: p3 still known
        person(9, 700_000, "WA"),                         # moves the watermark past 601 s
        auction(15, 800_000, 10**9, seller=1),            # p1's state expired at 601 s: waits, in vain
    ]
    assert sorted(run_query(3, events)) == [NameCityStateId("p1", "city1", "OR", 10),
                                            NameCityStateId("p3", "city3", "CA", 12),
                                            NameCityStateId("p3", "city3", "CA", 14)]


def test_q11_bids_per_bidder_session():
    events = [bid(1, 5, 0), bid(1, 5, 5000), bid(1, 5, 15_000),  # 15 s = 5 s + the gap: the session goes on
              bid(1, 5, 30_000),                                  # 15 s after: a new session
              bid(100, 5, 1000, bidder=2), person(3, 2000)]
    assert sorted(run_query(11, events)) == [BidsPerSession(0, 25_000, 1, 3), BidsPerSession(1000, 11_000, 2, 1),
                                             BidsPerSession(30_000, 40_000, 1, 1)]
