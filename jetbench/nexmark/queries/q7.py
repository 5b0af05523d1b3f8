"""Query 7, highest bid: per fixed window of ``window_size_sec`` (10 s) every bid whose price is
the window's maximum (all ties). Beam computes the maximum as a side input and filters the
window's bids against it; here one windowed aggregation keeps the bids with the largest price
(`max_all_by`), which is the same set. Emits the `Bid` events. SMOKE (100,000 events, 100
generators): 1 result.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from ...pipeline.stages import Stage
from ...processors.window_definition import WindowResult, tumbling
from ..config import NexmarkConfig
from ..model import is_bid
from .max_all import max_all_by

#: a bid's price (a C-level attribute getter: no Python call per bid)
price_of = attrgetter("price")


def bids_of(result: WindowResult) -> Any:
    return result.value


def query(events: Stage, config: NexmarkConfig) -> Stage:
    size = config.window_size_sec * 1000
    return (events.filter(is_bid, name="q7-bids").window(tumbling(size))
            .aggregate(max_all_by(price_of), name="q7-max").flat_map(bids_of, name="q7-select"))
