"""Built-in processors, one module per vertex kind.

Each module holds one kind: its processor class (``...P``), the function that makes its vertex
supplier, and how the Pipeline planner and the DAG builder use it, all from one declaration of
its parameters (`kind_params`). Shared pieces: `supplier`
(`ProcessorSupplier`, the generic supplier), `emitter` (batch emission that keeps what the
outbox refuses), `aggregate_operation` (the operations ``jetbench.aggregate`` offers) and
`window_definition` (the windows ``jetbench.window`` offers).

=========================  ===========================================================
sources                    `items_source`, `files_source`, `generator_source`, `event_stream_source`
stateless                  `transform` (map, filter, flat_map, fused chains: `transform_chain`)
with a service             `map_using_service`, `map_using_service_async`
aggregation                `aggregation` (keyed or global, one or two stages)
joins                      `hash_join` (also with `JoinClause` s: `multi_hash_join`), `co_aggregate`
                           (Jet's aggregate2/aggregateBuilder), `co_group` (its `to_list` form)
event time                 `insert_watermarks`, `window_aggregate` (`sliding_window`, `session_window`),
                           `flat_map_stateful` (keyed state, timers)
sinks                      `collect_sink`, `noop_sink`, `to_dict_sink`, `callback_sink`,
                           `pandas_sink`, `files_sink`, `latency_sink`
=========================  ===========================================================
"""

# first: jetbench.core chooses the engine's build (compiled or pure) before a compiled processor loads
from .. import core as _core  # noqa: F401
from .aggregate_operation import AggregateOperation, counting
from .aggregation import (
    accumulate_by_key,
    aggregate_by_key,
    combine_by_key,
    global_accumulate,
    global_aggregate,
    global_combine,
)
from .collect_sink import collect_sink
from .items_source import items_source
from .noop_sink import noop_sink
from .supplier import ProcessorSupplier, supplier
from .transform import (
    filter_processor,
    flat_map_processor,
    map_processor,
    transform_processor,
)
from .transform_chain import Transform

__all__ = [
    "AggregateOperation",
    "ProcessorSupplier",
    "Transform",
    "accumulate_by_key",
    "aggregate_by_key",
    "collect_sink",
    "combine_by_key",
    "counting",
    "filter_processor",
    "flat_map_processor",
    "global_accumulate",
    "global_aggregate",
    "global_combine",
    "items_source",
    "map_processor",
    "noop_sink",
    "supplier",
    "transform_processor",
]
