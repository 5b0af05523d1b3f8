"""Query 0, pass-through: every event, through a serialisation round trip (Beam encodes and
decodes each event with its coder; here with the JSON-lines format). Measures the engine's and
the format's cost per event. SMOKE (100,000 events): 100,000 results."""

from __future__ import annotations

from typing import Any

from ...pipeline.stages import Stage
from ..config import NexmarkConfig
from ..json_events import from_json, to_json


def round_trip(event: Any) -> Any:
    return from_json(to_json(event))


def query(events: Stage, config: NexmarkConfig) -> Stage:
    return events.map(round_trip, name="q0-round-trip")
