"""Query 3, local item suggestion: sellers in Oregon, Idaho or California and their auctions in
category 10, as ``NameCityStateId(name, city, state, auction id)``.

As Beam's current Query3: per seller a state (the person once seen, and the auctions that came
before them) in `flat_map_stateful` keyed by seller id; a person emits every auction waiting for
them, an auction of a known person is emitted at once. Every event of the key sets the key's
timer to its time + ``max_auctions_waiting_time`` (600 s): when the watermark passes it with no
newer event, the state is dropped (later auctions of that seller then wait for a person who
already came). So this is the full join of the two as long as a seller's events are never more
than 600 s apart: with the SMOKE suite's 100,000 events (10 s of event time) it is the full join.

SMOKE (100,000 events, 100 generators): Beam's page publishes 444, a count from an older Query3
(a CoGroupByKey in the global window with a count trigger); today's Query3 and its model compute
the full join, as this does: 580 (see `jetbench.nexmark.suite`).
"""

from __future__ import annotations

from typing import Any

from ...pipeline.stages import Stage
from ...processors.flat_map_stateful import FlatMapStatefulSpec, Keyed
from ..config import NexmarkConfig
from ..model import Auction, Bid, Person
from .results import NameCityStateId

STATES = ("OR", "ID", "CA")
CATEGORY = 10


def is_local_seller_or_auction(event: Any) -> bool:
    """Bids (46 events in 50) leave after one test. One expression, so that a fused chain can
    compute it in place of a call (`jetbench.processors.inlining`)."""
    return type(event) is not Bid and (event.category == CATEGORY if type(event) is Auction else event.state in STATES)


def seller_id(event: Any) -> int:
    return event.seller if type(event) is Auction else event.id


def new_seller() -> list[Any]:
    """``[person or None, auctions waiting for the person]``."""
    return [None, []]


def result(person: Person, auction: Auction) -> NameCityStateId:
    return NameCityStateId(person.name, person.city, person.state, auction.id)


class Join:
    """The state function: join a seller's person with their auctions, whichever comes first."""

    def __init__(self, waiting_ms: int):
        self.waiting_ms = waiting_ms

    def __call__(self, k: Keyed, event: Any) -> list[NameCityStateId] | None:
        state = k.state
        k.timer = k.time + self.waiting_ms  # set or reset the expiry, as Beam's Query3
        if type(event) is Person:
            if state[0] is not None:
                return None  # a second person with the same id: Beam counts it as fatal and ignores it
            state[0] = event
            waiting, state[1] = state[1], []
            return [result(event, a) for a in waiting]
        if state[0] is None:
            state[1].append(event)
            return None
        return [result(state[0], event)]


def query(events: Stage, config: NexmarkConfig) -> Stage:
    spec = FlatMapStatefulSpec(seller_id, new_seller, Join(config.max_auctions_waiting_time * 1000))
    return events.filter(is_local_seller_or_auction, name="q3-select").apply(spec, name="q3-join")
