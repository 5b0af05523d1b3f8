"""Query 11, user sessions: per bidder, the number of bids in each session, a session ending
after a gap of ``window_size_sec`` (10 s) without bids: ``BidsPerSession(session_start,
session_end, bidder, bids)``, with jetbench's session windows (``group_by(bidder)
.window(session(gap)).aggregate(counting())``).

Beam's Query11 uses session windows with a trigger firing every ``maxLogEvents`` (100,000)
elements, discarding: in the SMOKE suite no session reaches that, so each session fires once,
when it closes, as here. Beam merges two sessions when they overlap, jetbench's session windows
also when they touch (a bid exactly ``gap`` after the previous one joins its session). SMOKE
(100,000 events, 100 generators): 1,919 results in Beam's published run.
"""

from __future__ import annotations

from operator import attrgetter

from ...pipeline.stages import Stage
from ...processors.aggregate_operation import counting
from ...processors.window_definition import WindowResult, session
from ..config import NexmarkConfig
from ..model import is_bid
from .results import BidsPerSession

#: a bid's bidder (a C-level attribute getter: no Python call per bid)
bidder_of = attrgetter("bidder")


def bids_per_session(result: WindowResult) -> BidsPerSession:
    return BidsPerSession(int(result.start), int(result.end), result.key, int(result.value))


def query(events: Stage, config: NexmarkConfig) -> Stage:
    return (events.filter(is_bid, name="q11-bids").group_by(bidder_of).window(session(config.window_size_sec * 1000))
            .aggregate(counting(), name="q11-sessions").map(bids_per_session, name="q11-project"))
