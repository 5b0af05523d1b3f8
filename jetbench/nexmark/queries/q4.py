"""Query 4, average price for a category: per category, the mean of the winning prices (Q9's
winning bids) over sliding windows of ``window_size_sec`` (10 s) every ``window_period_sec``
(5 s), rounded as Java's ``Math.round``: ``CategoryPrice(window_start, window_end, category,
price)``. A winning bid counts at its auction's close (``expires - 1``, Beam's timestamp of the
winning-bid window). SMOKE (10,000 events, 100 generators): 40 results in Beam's published run.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from ...pipeline.stages import Stage
from ...processors.aggregate_operation import averaging
from ...processors.window_definition import WindowResult, sliding
from ..config import NexmarkConfig
from ..java_random import java_round
from .q9 import winning_bids
from .results import CategoryPrice

#: a winner's category and price (C-level attribute getters: no Python call per winner)
category_of = attrgetter("auction.category")
price_of = attrgetter("bid.price")


def category_price(result: WindowResult) -> CategoryPrice:
    mean: Any = result.value
    return CategoryPrice(int(result.start), int(result.end), result.key, java_round(mean))


def query(events: Stage, config: NexmarkConfig) -> Stage:
    size, period = config.window_size_sec * 1000, config.window_period_sec * 1000
    return (winning_bids(events, config, "q4").group_by(category_of).window(sliding(size, period))
            .aggregate(averaging(price_of), name="q4-mean").map(category_price, name="q4-project"))
