"""Pipeline sinks: functions returning `Sink` descriptors for `Stage.write_to`.

>>> from jetbench import sinks
>>> sinks.collect(), sinks.latency().requires_timestamped
(Sink('collect'), True)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .core.errors import JetbenchError
from .pipeline.connectors import Sink
from .processors.callback_sink import callback_sink
from .processors.collect_sink import collect_sink
from .processors.files_sink import files_sink
from .processors.latency_sink import latency_sink
from .processors.noop_sink import noop_sink
from .processors.pandas_sink import pandas_sink
from .processors.to_dict_sink import to_dict_sink

__all__ = ["callback", "collect", "files", "latency", "noop", "pandas", "to_dict"]


def collect() -> Sink:
    """The job's result is the list of all items."""
    return Sink("collect", collect_sink())


def to_dict() -> Sink:
    """Items are ``(key, value)`` pairs; the job's result is a dict (a later duplicate key wins)."""
    return Sink("to_dict", to_dict_sink())


def callback(fn: Callable[[Any], Any]) -> Sink:
    """Calls ``fn(item)`` for every item, on the sink's worker thread."""
    return Sink("callback", callback_sink(fn))


def pandas() -> Sink:
    """The job's result is a ``pandas.DataFrame`` of all items, built when the job ends.

    Named tuples, dataclasses and dicts give one column per field.
    """
    try:
        import pandas as pd  # noqa: F401 - only checking it is installed
    except ImportError as exc:
        raise JetbenchError("sinks.pandas() needs pandas installed") from exc
    return Sink("pandas", pandas_sink())


def files(directory: str | os.PathLike) -> Sink:
    """Instance k writes ``str(item)`` lines to ``directory/part-{k:05d}`` (directory created).

    Under a processing guarantee it commits with the snapshots instead: committed files
    ``directory/part-{k:05d}-{epoch:09d}`` appear whole once a snapshot is stored, so a reader
    never sees a line a restore takes back (`jetbench.processors.files_sink`); ``part-*`` matches
    the committed files either way."""
    return Sink(f"files({os.fspath(directory)})", files_sink(directory))


def noop() -> Sink:
    """Discards every item."""
    return Sink("noop", noop_sink())


def latency() -> Sink:
    """Measures ``now - ts`` in ms for each ``(ts, item)`` of a timestamped stage.

    The job's result is a dict: ``count``, ``mean_ms``, ``p50_ms``, ``p90_ms``, ``p99_ms``,
    ``p999_ms`` and ``max_ms`` (all None but ``count`` when nothing arrived).
    """
    return Sink("latency", latency_sink(), accepts_timestamped=True, requires_timestamped=True)
