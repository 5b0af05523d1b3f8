"""The Nexmark queries as jetbench pipelines, one module per query.

Each module has ``query(events, config) -> Stage``: from a timestamped stage of events (as the
`jetbench.nexmark.source` sources give) to the stage of the query's results. `QUERIES` maps a
query number to its module; `pipeline` reads a source, applies a query and collects the results.

Q0 (pass-through), Q1 (currency conversion), Q2 (selection), Q3 (local item suggestion), Q4
(average price per category), Q5 (hot items), Q6 (average selling price per seller), Q7 (highest
bid), Q8 (monitor new users), Q9 (winning bids), Q11 (user sessions). Q3, Q6 and Q9 rest on the
general keyed-state operator with event-time timers, `jetbench.processors.flat_map_stateful`.
Not here: Q10 (writes files) and Q12 (processing-time triggers), optional in Beam's suite too.
"""

from __future__ import annotations

from types import ModuleType

from ...pipeline.connectors import Sink, Source
from ...pipeline.stages import Pipeline
from ...sinks import collect
from ..config import NexmarkConfig
from . import q0, q1, q2, q3, q4, q5, q6, q7, q8, q9, q11

QUERIES: dict[int, ModuleType] = {0: q0, 1: q1, 2: q2, 3: q3, 4: q4, 5: q5, 6: q6, 7: q7, 8: q8, 9: q9, 11: q11}


def pipeline(query: int, source: Source, config: NexmarkConfig | None = None, sink: Sink | None = None) -> Pipeline:
    """``source`` through query ``query``, into ``sink`` (default: a collecting sink)."""
    if query not in QUERIES:
        from ...core.errors import JetbenchError

        raise JetbenchError(f"nexmark: unknown query {query!r}; this version has {', '.join(map(str, QUERIES))}")
    p = Pipeline()
    QUERIES[query].query(p.read_from(source), config or NexmarkConfig()).write_to(sink or collect())
    return p
