"""Query 1, currency conversion: every bid, its price turned from dollars to euros as
``price * 89 / 100`` (Java's integer division: truncated). SMOKE: the 92,000 bids of 100,000
events."""

from __future__ import annotations

from ...pipeline.stages import Stage
from ..config import NexmarkConfig
from ..java_random import java_div
from ..model import Bid, is_bid


def to_euros(bid: Bid) -> Bid:
    return bid._replace(price=java_div(bid.price * 89, 100))


def query(events: Stage, config: NexmarkConfig) -> Stage:
    return events.filter(is_bid, name="q1-bids").map(to_euros, name="q1-euros")
