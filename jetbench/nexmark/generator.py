"""Beam's Nexmark event generator, event for event.

Event id ``i`` is a person when ``i % 50 == 0``, an auction when it is 1, 2 or 3, otherwise a
bid; its content comes from a fresh `JavaRandom` seeded with ``i``, drawn in the Java
generator's order, so it depends only on the id (and, for an auction's ``expires``, on the
generator's timeline). Ids, hot keys and string lengths follow Beam's ``PersonGenerator``,
``AuctionGenerator``, ``BidGenerator``, ``PriceGenerator`` and ``StringsGenerator``, with Java's
integer division and rounding.

`generate(config)` yields ``(timestamp, event)`` for every generator of the configuration,
merged in timestamp order (ties: lower generator first); `generator_events(gen)` one
generator's events in order.

>>> from jetbench.nexmark.config import NexmarkConfig
>>> [type(e).__name__ for _, e in generate(NexmarkConfig(num_events=5, num_event_generators=1))]
['Person', 'Auction', 'Auction', 'Auction', 'Bid']
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from .config import (
    AUCTION_PROPORTION,
    FIRST_AUCTION_ID,
    FIRST_CATEGORY_ID,
    FIRST_PERSON_ID,
    PERSON_PROPORTION,
    PROPORTION_DENOMINATOR,
    GeneratorConfig,
    NexmarkConfig,
)
from .java_random import ADDEND, MASK_48, MULTIPLIER, JavaRandom, java_div, java_rem, java_round
from .model import Auction, Bid, Event, Person

US_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
US_CITIES = ("Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle",
             "Kent", "Cheyenne")
FIRST_NAMES = ("Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter")
LAST_NAMES = ("Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris")

PERSON_ID_LEAD = 10  # people not yet created that an auction or bid may name
AUCTION_ID_LEAD = 10
NUM_CATEGORIES = 5
HOT_SELLER_RATIO = 100  # a hot seller is the first of each block of 100 people
HOT_AUCTION_RATIO = 100
HOT_BIDDER_RATIO = 100
MIN_STRING_LENGTH = 3
_INT_MAX = (1 << 31) - 1
_A = ord("a")


# -- ids ----------------------------------------------------------------------------------------------


def last_base0_person_id(event_id: int) -> int:
    """The newest person id (from 0) at ``event_id``: this event's own id if it is a person."""
    epoch, offset = divmod(event_id, PROPORTION_DENOMINATOR)
    if offset >= PERSON_PROPORTION:
        offset = PERSON_PROPORTION - 1
    return epoch * PERSON_PROPORTION + offset


def last_base0_auction_id(event_id: int) -> int:
    """The newest auction id (from 0) at ``event_id``: this event's own id if it is an auction."""
    epoch, offset = divmod(event_id, PROPORTION_DENOMINATOR)
    if offset < PERSON_PROPORTION:
        epoch -= 1
        offset = AUCTION_PROPORTION - 1
    elif offset >= PERSON_PROPORTION + AUCTION_PROPORTION:
        offset = AUCTION_PROPORTION - 1
    else:
        offset -= PERSON_PROPORTION
    return epoch * AUCTION_PROPORTION + offset


def next_long(random: JavaRandom, n: int) -> int:
    """Beam's ``LongGenerator.nextLong``: ``nextInt(n)`` below 2**31 - 1, else ``|nextLong() % n|``."""
    if n < _INT_MAX:
        return random.next_int(n)
    r = java_rem(random.next_long(), n)
    return -r if r < 0 and r != -(1 << 63) else r


def next_base0_person_id(event_id: int, random: JavaRandom, config: NexmarkConfig) -> int:
    """A random active person (the newest ``num_active_people``, plus a few not yet created)."""
    num_people = last_base0_person_id(event_id) + 1
    active = min(num_people, config.num_active_people)
    return num_people - active + next_long(random, active + PERSON_ID_LEAD)


def next_base0_auction_id(event_id: int, random: JavaRandom, config: NexmarkConfig) -> int:
    """A random auction among the newest ``num_in_flight_auctions`` (plus a few not yet created)."""
    max_auction = last_base0_auction_id(event_id)
    min_auction = max(max_auction - config.num_in_flight_auctions, 0)
    return min_auction + next_long(random, max_auction - min_auction + 1 + AUCTION_ID_LEAD)


# -- strings and prices ---------------------------------------------------------------------------------


def next_string(random: JavaRandom, max_length: int) -> str:
    """3 to ``max_length - 1`` characters, a space one time in 13, else a-z; then trimmed."""
    next_int = random.next_int
    n = MIN_STRING_LENGTH + next_int(max_length - MIN_STRING_LENGTH)
    chars = []
    for _ in range(n):
        chars.append(" " if next_int(13) == 0 else chr(_A + next_int(26)))
    return "".join(chars).strip(" ")


#: base-26 digit triples as characters, least significant first: ``'a' + d`` for a draw that is
#: not negative, ``'a' - d`` (Java's remainder of a negative draw) for one that is
_TRIPLES = [(a, b, c) for c in range(26) for b in range(26) for a in range(26)]
_UP3 = ["".join(chr(_A + d) for d in t) for t in _TRIPLES]
_DOWN3 = ["".join(chr(_A - d) for d in t) for t in _TRIPLES]
_26_3 = 26 ** 3


def next_exact_string(random: JavaRandom, length: int) -> str:
    """``length`` characters, six from each ``nextInt()``: ``'a' + rnd % 26`` with Java's
    remainder, ``rnd /= 26`` after each, so a negative draw gives characters below 'a' (H..`).
    The six are the draw's six lowest base-26 digits (26**6 < 2**31), three per table lookup;
    the draws are `JavaRandom.next_int`'s, inlined."""
    seed = random.seed
    parts = []
    for _ in range(-(-length // 6)):
        seed = (seed * MULTIPLIER + ADDEND) & MASK_48
        rnd = seed >> 16  # next(32), read as unsigned
        if rnd < 0x80000000:
            parts.append(_UP3[rnd % _26_3] + _UP3[rnd // _26_3 % _26_3])
        else:
            rnd = (1 << 32) - rnd  # minus the signed draw
            parts.append(_DOWN3[rnd % _26_3] + _DOWN3[rnd // _26_3 % _26_3])
    random.seed = seed
    return "".join(parts)[:length]


def next_extra(random: JavaRandom, current_size: int, desired_average_size: int) -> str:
    """Padding so that the event's size averages ``desired_average_size`` bytes (± 20 %)."""
    if current_size > desired_average_size:
        return ""
    desired = desired_average_size - current_size
    delta = java_round(desired * 0.2)
    min_size = desired - delta
    size = min_size + (0 if delta == 0 else random.next_int(2 * delta))
    return next_exact_string(random, size)


def next_price(random: JavaRandom) -> int:
    """Log-uniform between 1 and 1,000,000 dollars, in cents: ``round(10^(6u) * 100)``."""
    return java_round(10.0 ** (random.next_double() * 6.0) * 100.0)


# -- events --------------------------------------------------------------------------------------------


def next_person(event_id: int, random: JavaRandom, timestamp: int, config: NexmarkConfig) -> Person:
    pid = last_base0_person_id(event_id) + FIRST_PERSON_ID
    name = FIRST_NAMES[random.next_int(len(FIRST_NAMES))] + " " + LAST_NAMES[random.next_int(len(LAST_NAMES))]
    email = next_string(random, 7) + "@" + next_string(random, 5) + ".com"
    card = " ".join(f"{random.next_int(10000):04d}" for _ in range(4))
    city = US_CITIES[random.next_int(len(US_CITIES))]
    state = US_STATES[random.next_int(len(US_STATES))]
    size = 8 + len(name) + len(email) + len(card) + len(city) + len(state)
    extra = next_extra(random, size, config.avg_person_byte_size)
    return Person(pid, name, email, card, city, state, timestamp, extra)


def next_auction(events_so_far: int, event_id: int, random: JavaRandom, timestamp: int,
                 gen: GeneratorConfig) -> Auction:
    config = gen.config
    aid = last_base0_auction_id(event_id) + FIRST_AUCTION_ID
    if random.next_int(config.hot_sellers_ratio) > 0:  # a hot seller, 1 - 1/ratio of the time
        seller = java_div(last_base0_person_id(event_id), HOT_SELLER_RATIO) * HOT_SELLER_RATIO
    else:
        seller = next_base0_person_id(event_id, random, config)
    seller += FIRST_PERSON_ID
    category = FIRST_CATEGORY_ID + random.next_int(NUM_CATEGORIES)
    initial_bid = next_price(random)
    # the auction lasts on average until the auction num_in_flight_auctions ahead is opened
    events_for_auctions = config.num_in_flight_auctions * PROPORTION_DENOMINATOR // AUCTION_PROPORTION
    horizon = gen.timestamp(events_so_far + events_for_auctions) - timestamp
    expires = timestamp + 1 + next_long(random, max(horizon * 2, 1))
    name = next_string(random, 20)
    description = next_string(random, 100)
    reserve = initial_bid + next_price(random)
    size = 8 + len(name) + len(description) + 8 + 8 + 8 + 8 + 8
    extra = next_extra(random, size, config.avg_auction_byte_size)
    return Auction(aid, name, description, initial_bid, reserve, timestamp, expires, seller, category, extra)


def next_bid(event_id: int, random: JavaRandom, timestamp: int, config: NexmarkConfig) -> Bid:
    if random.next_int(config.hot_auction_ratio) > 0:
        auction = java_div(last_base0_auction_id(event_id), HOT_AUCTION_RATIO) * HOT_AUCTION_RATIO
    else:
        auction = next_base0_auction_id(event_id, random, config)
    auction += FIRST_AUCTION_ID
    if random.next_int(config.hot_bidders_ratio) > 0:  # the second person of a block: not a hot seller
        bidder = java_div(last_base0_person_id(event_id), HOT_BIDDER_RATIO) * HOT_BIDDER_RATIO + 1
    else:
        bidder = next_base0_person_id(event_id, random, config)
    bidder += FIRST_PERSON_ID
    price = next_price(random)
    extra = next_extra(random, 8 + 8 + 8 + 8, config.avg_bid_byte_size)
    return Bid(auction, bidder, price, timestamp, extra)


def event_at(gen: GeneratorConfig, events_so_far: int) -> Event:
    """The event a generator emits after ``events_so_far`` others (its event number)."""
    event_id = gen.first_event_id + events_so_far
    random = JavaRandom(event_id)
    timestamp = gen.timestamp(events_so_far)
    rem = event_id % PROPORTION_DENOMINATOR
    if rem < PERSON_PROPORTION:
        return next_person(event_id, random, timestamp, gen.config)
    if rem < PERSON_PROPORTION + AUCTION_PROPORTION:
        return next_auction(events_so_far, event_id, random, timestamp, gen)
    return next_bid(event_id, random, timestamp, gen.config)


def generator_events(gen: GeneratorConfig, start: int = 0) -> Iterator[tuple[int, Event]]:
    """``(timestamp, event)`` for one generator's events from event number ``start``, in order."""
    for n in range(start, gen.max_events):
        event = event_at(gen, n)
        yield event.date_time, event


def generate(config: NexmarkConfig) -> Iterator[tuple[int, Event]]:
    """Every event of ``config``: its generators' timelines merged in timestamp order."""
    gens = config.generator_configs()
    if len(gens) == 1:
        return generator_events(gens[0])
    return heapq.merge(*(generator_events(g) for g in gens), key=_ts)


def _ts(pair: tuple[int, Event]) -> int:
    return pair[0]


def events(config: NexmarkConfig) -> list[Event]:
    """The events of ``config`` in timestamp order (a list)."""
    return [e for _, e in generate(config)]
