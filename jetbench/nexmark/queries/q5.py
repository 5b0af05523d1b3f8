"""Query 5, hot items: per sliding window (``window_size_sec`` 10 s, every
``window_period_sec`` 5 s) the auction(s) with the most bids, all ties kept, with their count.

Pipeline: bids, counted per auction per sliding window (``group_by(auction).window(sliding)
.aggregate(counting())``); each window's counts come out stamped with the window's end, so a
tumbling window of one period over them holds exactly one sliding window's counts, and
`max_all_by` keeps the largest (Beam's ``TopCombineFn`` does the same as a global combine per
window). Emits `AuctionCount(window_start, window_end, auction, num)`. SMOKE (100,000 events,
100 generators): 12 results in Beam's published run.
"""

from __future__ import annotations

from operator import attrgetter

from ...pipeline.stages import Stage
from ...processors.aggregate_operation import counting
from ...processors.window_definition import WindowResult, sliding, tumbling
from ..config import NexmarkConfig
from ..model import is_bid
from .max_all import max_all_by
from .results import AuctionCount

#: a bid's auction (a C-level attribute getter: no Python call per bid)
auction_of = attrgetter("auction")
#: a window result's count
count_of = attrgetter("value")


def hot_items(top: WindowResult) -> list[AuctionCount]:
    return [AuctionCount(int(r.start), int(r.end), r.key, r.value) for r in top.value]


def query(events: Stage, config: NexmarkConfig) -> Stage:
    size, period = config.window_size_sec * 1000, config.window_period_sec * 1000
    counts = (events.filter(is_bid, name="q5-bids")
              .group_by(auction_of).window(sliding(size, period)).aggregate(counting(), name="q5-count"))
    tops = counts.window(tumbling(period)).aggregate(max_all_by(count_of), name="q5-max")
    return tops.flat_map(hot_items, name="q5-select")
