"""Nexmark's event model: a person joins, opens an auction, bids.

An event is exactly one of `Person`, `Auction` or `Bid` (Beam's ``Event`` wraps one of
``newPerson``, ``newAuction``, ``bid``; here the type says which). Times are epoch
milliseconds, prices cents. The field names are Beam's, in snake case; `FIELDS` maps them to
the JSON names Beam's coders write (`jetbench.nexmark.json_events`).
"""

from __future__ import annotations

from typing import NamedTuple


class Person(NamedTuple):
    """A new person: ``id`` from 1000 up, one in every 50 events."""

    id: int
    name: str
    email_address: str
    credit_card: str
    city: str
    state: str
    date_time: int
    extra: str


class Auction(NamedTuple):
    """A new auction by ``seller`` (a person id), open until ``expires``; prices in cents."""

    id: int
    item_name: str
    description: str
    initial_bid: int
    reserve: int
    date_time: int
    expires: int
    seller: int
    category: int
    extra: str


class Bid(NamedTuple):
    """A bid of ``price`` cents by ``bidder`` (a person id) on ``auction`` (an auction id)."""

    auction: int
    bidder: int
    price: int
    date_time: int
    extra: str


Event = Person | Auction | Bid

#: Beam's JSON field names, in field order, per event type.
FIELDS: dict[type, tuple[str, ...]] = {
    Person: ("id", "name", "emailAddress", "creditCard", "city", "state", "dateTime", "extra"),
    Auction: ("id", "itemName", "description", "initialBid", "reserve", "dateTime", "expires", "seller",
              "category", "extra"),
    Bid: ("auction", "bidder", "price", "dateTime", "extra"),
}

#: Beam's Event field holding each type.
EVENT_FIELD: dict[type, str] = {Person: "newPerson", Auction: "newAuction", Bid: "bid"}


def event_time(event: Event) -> int:
    """The event's ``date_time`` (ms): its event-time timestamp."""
    return event.date_time


def is_person(event: object) -> bool:
    return type(event) is Person


def is_auction(event: object) -> bool:
    return type(event) is Auction


def is_bid(event: object) -> bool:
    return type(event) is Bid
