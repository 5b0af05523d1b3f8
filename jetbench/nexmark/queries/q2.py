"""Query 2, selection: ``(auction, price)`` of every bid on an auction whose id is a multiple
of ``auction_skip`` (123). SMOKE (100,000 events): 351 results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...pipeline.stages import Stage
from ..config import NexmarkConfig
from ..java_random import java_rem
from ..model import Bid
from .results import AuctionPrice


def on_skipped_auction(skip: int) -> Callable[[Any], bool]:
    def keep(event: Any) -> bool:
        return type(event) is Bid and java_rem(event.auction, skip) == 0

    return keep


def auction_price(bid: Bid) -> AuctionPrice:
    return AuctionPrice(bid.auction, bid.price)


def query(events: Stage, config: NexmarkConfig) -> Stage:
    return events.filter(on_skipped_auction(config.auction_skip), name="q2-select").map(auction_price, name="q2-project")
