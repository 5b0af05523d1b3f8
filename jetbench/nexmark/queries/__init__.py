"""The Nexmark queries as jetbench pipelines, one module per query.

Each module has ``query(events, config) -> Stage``: from a timestamped stage of events (as the
`jetbench.nexmark.source` sources give) to the stage of the query's results. `QUERIES` maps a
query number to its module; `pipeline` reads a source, applies a query and collects the results.

Done: Q0 (pass-through), Q1 (currency conversion), Q2 (selection), Q5 (hot items), Q7 (highest
bid), Q8 (monitor new users). Not yet: Q3 (needs per-key state with an event-time timer), Q4
and Q6 (need Q9's winning bids), Q9 (a merging window per auction), Q11 (user sessions:
session windows, but Beam counts with an early-firing trigger).
"""

from __future__ import annotations

from types import ModuleType

from ...pipeline.connectors import Sink, Source
from ...pipeline.stages import Pipeline
from ...sinks import collect
from ..config import NexmarkConfig
from . import q0, q1, q2, q5, q7, q8

QUERIES: dict[int, ModuleType] = {0: q0, 1: q1, 2: q2, 5: q5, 7: q7, 8: q8}


def pipeline(query: int, source: Source, config: NexmarkConfig | None = None, sink: Sink | None = None) -> Pipeline:
    """``source`` through query ``query``, into ``sink`` (default: a collecting sink)."""
    if query not in QUERIES:
        from ...core.errors import JetbenchError

        raise JetbenchError(f"nexmark: unknown query {query!r}; this version has {', '.join(map(str, QUERIES))}")
    p = Pipeline()
    QUERIES[query].query(p.read_from(source), config or NexmarkConfig()).write_to(sink or collect())
    return p
