"""Pipeline sinks: functions returning `Sink` descriptors for `Stage.write_to`.

>>> from jetbench import sinks
>>> sinks.collect(), sinks.latency().requires_timestamped
(Sink('collect'), True)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
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

__all__ = ["callback", "collect", "files", "kafka", "latency", "noop", "pandas", "to_dict"]


def collect() -> Sink:
    """The job's result is the list of all items.

    >>> from jetbench import Pipeline, run, sinks, sources
    >>> p = Pipeline()
    >>> _ = p.read_from(sources.items([3, 1, 2])).write_to(sinks.collect())
    >>> run(p)
    [3, 1, 2]
    """
    return Sink("collect", collect_sink())


def to_dict() -> Sink:
    """Items are ``(key, value)`` pairs; the job's result is a dict (a later duplicate key wins).

    >>> from jetbench import Pipeline, run, sinks, sources
    >>> p = Pipeline()
    >>> _ = p.read_from(sources.items([("a", 1), ("b", 2), ("a", 3)])).write_to(sinks.to_dict())
    >>> run(p)
    {'a': 3, 'b': 2}
    """
    return Sink("to_dict", to_dict_sink())


def callback(fn: Callable[[Any], Any]) -> Sink:
    """Calls ``fn(item)`` for every item, on the sink's worker thread.

    >>> from jetbench import Pipeline, run, sinks, sources
    >>> p = Pipeline()
    >>> _ = p.read_from(sources.items(["a", "b"])).write_to(sinks.callback(print))
    >>> run(p)
    a
    b
    """
    return Sink("callback", callback_sink(fn))


def pandas() -> Sink:
    """The job's result is a ``pandas.DataFrame`` of all items, built when the job ends.

    Named tuples, dataclasses and dicts give one column per field.

    >>> from jetbench import Pipeline, run, sinks, sources
    >>> p = Pipeline()
    >>> _ = p.read_from(sources.items([{"word": "a", "n": 2}, {"word": "b", "n": 1}])).write_to(sinks.pandas())
    >>> run(p)
      word  n
    0    a  2
    1    b  1
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
    the committed files either way.

    >>> import pathlib, tempfile
    >>> from jetbench import Pipeline, run, sinks, sources
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "out"
    >>> p = Pipeline()
    >>> _ = p.read_from(sources.items(["a", "b"])).write_to(sinks.files(out))
    >>> _ = run(p)
    >>> [(f.name, f.read_text()) for f in sorted(out.glob("part-*"))]
    [('part-00000', 'a\\nb\\n')]
    """
    return Sink(f"files({os.fspath(directory)})", files_sink(directory))


def noop() -> Sink:
    """Discards every item.

    >>> from jetbench import Pipeline, run, sinks, sources
    >>> p = Pipeline()
    >>> _ = p.read_from(sources.items(range(1000))).write_to(sinks.noop())
    >>> run(p) is None
    True
    """
    return Sink("noop", noop_sink())


def latency() -> Sink:
    """Measures ``now - ts`` in ms for each ``(ts, item)`` of a timestamped stage.

    The job's result is a dict: ``count``, ``mean_ms``, ``p50_ms``, ``p90_ms``, ``p99_ms``,
    ``p999_ms`` and ``max_ms`` (all None but ``count`` when nothing arrived).

    >>> from jetbench import Pipeline, run, sinks, sources
    >>> p = Pipeline()
    >>> _ = p.read_from(sources.generator(10_000, count=100)).write_to(sinks.latency())
    >>> result = run(p)
    >>> result["count"], sorted(result)
    (100, ['count', 'max_ms', 'mean_ms', 'p50_ms', 'p90_ms', 'p999_ms', 'p99_ms'])
    """
    return Sink("latency", latency_sink(), accepts_timestamped=True, requires_timestamped=True)


def kafka(
    topic: str,
    bootstrap_servers: str,
    *,
    key_fn: Callable[[Any], Any] | None = None,
    value_fn: Callable[[Any], Any] = str,
    properties: Mapping[str, Any] | None = None,
    transactional_id: str | None = None,
    connect_timeout: float = 10.0,
) -> Sink:
    """Writes each item to Kafka ``topic`` as a record with key ``key_fn(item)`` (None: no key)
    and value ``value_fn(item)`` (bytes, or str written as UTF-8); needs the ``kafka`` extra.

    At-least-once by default (and under ``at_least_once``: each snapshot waits for the broker to
    acknowledge the records before it). Under ``exactly_once`` each instance writes through a
    transactional producer of its own (``transactional.id`` ``{transactional_id}-{vertex}-{index}``,
    by default ``transactional_id`` is ``jetbench-{topic}``: the same in every run, so a resumed job
    fences off the process it replaces; two jobs writing one topic at once need different ones),
    committed in the snapshot's phase 2: a ``read_committed`` consumer sees every record once
    (`jetbench.kafka.sink`). A record the broker refuses (too large ...) is a `KafkaProduceError`,
    no broker answering within ``connect_timeout`` seconds a `KafkaUnreachable`.
    """
    from .kafka.errors import KafkaError, require_client
    from .kafka.sink import KafkaSinkP
    from .processors.supplier import ProcessorSupplier

    require_client()
    if not isinstance(topic, str) or not topic:
        raise KafkaError(f"sinks.kafka: topic must be a topic name, got {topic!r}")
    for name, fn in (("key_fn", key_fn), ("value_fn", value_fn)):
        if fn is not None and not callable(fn):
            raise KafkaError(f"sinks.kafka: {name} must be callable, got {fn!r}")
    supplier = ProcessorSupplier(KafkaSinkP, topic, bootstrap_servers, key_fn=key_fn, value_fn=value_fn,
                                 properties=dict(properties or {}), transactional_id=transactional_id,
                                 connect_timeout=connect_timeout, label=f"kafka({topic})")
    return Sink(f"kafka({topic})", supplier)
