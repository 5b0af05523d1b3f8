"""Beam's ``NexmarkConfiguration`` (the fields the generator and the queries read) and the
generator's timeline (``GeneratorConfig``).

Defaults are Beam's: 100,000 events from 100 generators at 10,000 events/s, windows of 10 s
sliding every 5 s, auction skip 123, 100 auctions in flight and 1,000 active people per
generator, average event sizes 200/500/100 bytes. Only a constant rate is modelled (Beam's
default: first and next rate equal, so its SINE shape is one step).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import JetbenchError

#: 2015-07-15T00:00:00Z in epoch ms: the event time of every generator's first event.
BASE_TIME = 1_436_918_400_000

FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID = 10
PERSON_PROPORTION = 1
AUCTION_PROPORTION = 3
BID_PROPORTION = 46
PROPORTION_DENOMINATOR = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION  # 50


@dataclass(frozen=True)
class NexmarkConfig:
    """What the generator and queries depend on, with Beam's defaults."""

    num_events: int = 100_000
    num_event_generators: int = 100
    event_rate: int = 10_000  # events/s over all generators (Beam's firstEventRate = nextEventRate)
    avg_person_byte_size: int = 200
    avg_auction_byte_size: int = 500
    avg_bid_byte_size: int = 100
    hot_auction_ratio: int = 2
    hot_sellers_ratio: int = 4
    hot_bidders_ratio: int = 4
    window_size_sec: int = 10
    window_period_sec: int = 5
    num_in_flight_auctions: int = 100
    num_active_people: int = 1000
    auction_skip: int = 123
    fanout: int = 5
    max_auctions_waiting_time: int = 600
    base_time: int = BASE_TIME

    def __post_init__(self) -> None:
        for name in ("num_events", "num_event_generators", "event_rate", "hot_auction_ratio", "hot_sellers_ratio",
                     "hot_bidders_ratio", "window_size_sec", "window_period_sec", "num_in_flight_auctions",
                     "num_active_people", "auction_skip"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise JetbenchError(f"nexmark: {name} must be an int > 0, got {value!r}")

    @property
    def inter_event_delay_us(self) -> int:
        """Microseconds between two events of one generator: Beam's ``rateToPeriodUs(rate)``
        (rounded to the nearest µs) times the number of generators."""
        return (1_000_000 + self.event_rate // 2) // self.event_rate * self.num_event_generators

    def generator_configs(self) -> list[GeneratorConfig]:
        """Beam's ``GeneratorConfig.split(numEventGenerators)``: disjoint event-id ranges, each
        generator on its own timeline from the base time (one config when there is one generator)."""
        n = self.num_event_generators
        if n == 1:
            return [GeneratorConfig(self, 0, self.num_events)]
        sub = self.num_events // n
        out, first = [], 0
        for i in range(n):
            count = self.num_events - sub * (n - 1) if i == n - 1 else sub
            out.append(GeneratorConfig(self, first, count))
            first += count
        return out


@dataclass(frozen=True)
class GeneratorConfig:
    """One generator: event ids ``first_event_id ..`` (``max_events`` of them); its event number
    n (0-based) happens at ``base_time + n * inter_event_delay_us / 1000`` (integer ms)."""

    config: NexmarkConfig
    first_event_id: int
    max_events: int

    def timestamp(self, event_number: int) -> int:
        return self.config.base_time + event_number * self.config.inter_event_delay_us // 1000
