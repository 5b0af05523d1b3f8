"""Built-in processors: sources, stateless transforms, keyed aggregation and sinks."""

from .aggregate import (
    AggregateOperation,
    accumulate_by_key,
    aggregate_by_key,
    combine_by_key,
    counting,
)
from .sinks import collect_sink, noop_sink
from .sources import items_source
from .transforms import (
    Transform,
    filter_processor,
    flat_map_processor,
    map_processor,
    transform_processor,
)

__all__ = [
    "AggregateOperation",
    "Transform",
    "accumulate_by_key",
    "aggregate_by_key",
    "collect_sink",
    "combine_by_key",
    "counting",
    "filter_processor",
    "flat_map_processor",
    "items_source",
    "map_processor",
    "noop_sink",
    "transform_processor",
]
