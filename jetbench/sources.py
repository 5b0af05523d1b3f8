"""Pipeline sources: functions returning `Source` descriptors for `Pipeline.read_from`.

>>> from jetbench import sources
>>> sources.items([1, 2, 3])
Source('items')
>>> sources.generator(1000, count=10).streaming, sources.generator(1000).streaming
(False, True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .pipeline.connectors import Source
from .processors.files_source import files_source
from .processors.generator_source import generator_source
from .processors.items_source import items_source
from .processors.test_stream_source import test_stream_source

__all__ = ["files", "generator", "items", "test_stream"]


def items(iterable: Iterable[Any], name: str = "items") -> Source:
    """The items of ``iterable`` (a sequence is split over the instances by stride)."""
    return Source(name, items_source(iterable))


def files(glob_pattern: str, encoding: str = "utf-8") -> Source:
    """The lines (without newline) of the files matching ``glob_pattern``, sorted by path.

    File i is read by instance ``i % total_parallelism``, on a dedicated thread (blocking
    I/O). Raises `JetbenchError` here if no file matches.
    """
    return Source(f"files({glob_pattern})", files_source(glob_pattern, encoding))


def generator(
    rate_per_s: float,
    item_fn: Callable[[int], Any] | None = None,
    timestamped: bool = True,
    count: int | None = None,
) -> Source:
    """``item_fn(seq)`` (default ``seq``) at ``rate_per_s`` items per second over all instances.

    Timestamped by default: items are ``(time.time_ns() / 1e6, item)``. Unbounded unless
    ``count`` (the total over all instances) is given.
    """
    supplier = generator_source(rate_per_s, item_fn, timestamped, count)
    return Source("generator", supplier, timestamped=timestamped, streaming=count is None)


def test_stream(events: Iterable[tuple[float, Any]], allowed_lag: float = 0) -> Source:
    """Scripted ``(timestamp, item)`` events, emitted in the given order by a single instance.

    Watermarks trail the highest timestamp seen by ``allowed_lag`` ms: an event more than that
    behind may be late (dropped by windows).
    """
    return Source("test_stream", test_stream_source(events), local_parallelism=1, timestamped=True,
                  streaming=False, allowed_lag=allowed_lag)


test_stream.__dict__["__test__"] = False  # not a pytest test (in __dict__: mypy knows no such function attribute)
