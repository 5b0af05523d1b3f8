"""Query 2, selection: ``(auction, price)`` of every bid on an auction whose id is a multiple
of ``auction_skip`` (123). SMOKE (100,000 events): 351 results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...pipeline.stages import Stage
from ..config import NexmarkConfig
from ..model import Bid
from .results import AuctionPrice


def on_skipped_auction(skip: int) -> Callable[[Any], bool]:
    """Beam's ``auction % skip == 0``: whether a remainder is zero does not depend on its sign,
    so Python's ``%`` answers as Java's (`java_rem`) for every id, at a third of the cost."""

    def keep(event: Any) -> bool:
        return type(event) is Bid and event.auction % skip == 0

    return keep


def auction_price(bid: Bid) -> AuctionPrice:
    return AuctionPrice(bid.auction, bid.price)


def query(events: Stage, config: NexmarkConfig) -> Stage:
    return events.filter(on_skipped_auction(config.auction_skip), name="q2-select").map(auction_price, name="q2-project")
