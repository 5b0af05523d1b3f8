"""Built-in processors: sources, stateless transforms, keyed and global aggregation and sinks."""

from .aggregate import (
    AggregateOperation,
    accumulate_by_key,
    aggregate_by_key,
    combine_by_key,
    counting,
    global_accumulate,
    global_aggregate,
    global_combine,
)
from .sinks import collect_sink, noop_sink
from .sources import items_source
from .supplier import ProcessorSupplier, supplier
from .transforms import (
    Transform,
    filter_processor,
    flat_map_processor,
    map_processor,
    transform_processor,
)

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
