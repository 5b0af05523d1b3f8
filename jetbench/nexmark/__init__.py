"""Nexmark on jetbench: Beam's event generator, event for event, and the Nexmark queries.

- `java_random`: ``java.util.Random`` and Java's integer division and rounding;
- `model`: `Person`, `Auction`, `Bid`;
- `config`: `NexmarkConfig` (Beam's ``NexmarkConfiguration`` defaults) and the timelines;
- `generator`: the events, identical to Beam's Java generator's;
- `source`: the events as a jetbench pipeline source (bounded, or paced at the event rate);
- `json_events`: Beam's JSON-lines event format, read and written;
- `queries`: the queries as pipelines; `reference`: the same queries in plain Python;
- `suite`: running a query or Beam's SMOKE suite and summarising the results (``jetbench nexmark``).
"""

from .config import NexmarkConfig
from .generator import events, generate
from .model import Auction, Bid, Event, Person

__all__ = ["Auction", "Bid", "Event", "NexmarkConfig", "Person", "events", "generate"]
