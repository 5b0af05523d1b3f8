"""Query 8, monitor new users: people who opened an auction in the same fixed window
(``window_size_sec``, 10 s) in which they joined: ``IdNameReserve(person id, name, reserve)`` per
such auction. Beam joins persons by id with auctions by seller in a windowed CoGroupByKey;
here ``co_group`` with a window does the same. SMOKE (100,000 events, 100 generators): 6,000.
"""

from __future__ import annotations

from operator import attrgetter

from ...pipeline.stages import Stage
from ...processors.window_definition import WindowResult, tumbling
from ..config import NexmarkConfig
from ..model import Bid, is_auction, is_person
from .results import IdNameReserve

#: the join keys, C-level attribute getters: a person's id, an auction's seller
person_id = attrgetter("id")
seller_of = attrgetter("seller")


def joined(group: WindowResult) -> list[IdNameReserve]:
    persons, auctions = group.value
    return [IdNameReserve(p.id, p.name, a.reserve) for p in persons for a in auctions]


def is_person_or_auction(event: object) -> bool:
    return type(event) is not Bid  # an event is a person, an auction or a bid: one test, not two


def query(events: Stage, config: NexmarkConfig) -> Stage:
    window = tumbling(config.window_size_sec * 1000)
    # the bids (46 events in 50) go in one pass, not once in each of the two selections
    new = events.filter(is_person_or_auction, name="q8-new")
    persons = new.filter(is_person, name="q8-persons")
    auctions = new.filter(is_auction, name="q8-auctions")
    return persons.co_group(auctions, person_id, seller_of, window=window, name="q8-join").flat_map(joined, name="q8-select")
