"""Example pipelines: seed 002's word count and seed 004's idle-CPU job.

>>> from jetbench import run
>>> sorted(run(wordcount_pipeline(["The cat", "the hat!"])))
[('cat', 1), ('hat', 1), ('the', 2)]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import aggregate, sinks, sources
from ..examples import non_empty, tokenize, word_key
from ..window import tumbling
from .stages import Pipeline


def wordcount_pipeline(lines: Iterable[str] | sources.Source) -> Pipeline:
    """Seed 002's word count: lines (an iterable, or a `Source` of lines) -> count per word."""
    p = Pipeline()
    (p.read_from(lines if isinstance(lines, sources.Source) else sources.items(lines))
        .flat_map(tokenize)
        .filter(non_empty)
        .group_by(word_key)
        .aggregate(aggregate.counting)
        .write_to(sinks.collect()))
    return p


def identity(x: Any) -> Any:
    return x


def idle_cpu_pipeline(source: sources.Source, maps: int = 6, window_ms: int = 1000, sink: Any = None) -> Pipeline:
    """Seed 004's job: a rate-limited source -> ``maps`` identity maps (not fused) -> count per
    tumbling window of ``window_ms`` (event time = creation time) -> a sink."""
    p = Pipeline(fuse=False)
    stage = p.read_from(source)
    for i in range(maps):
        stage = stage.map(identity, name=f"map-{i + 1}")
    stage.window(tumbling(window_ms)).aggregate(aggregate.counting).write_to(sink or sinks.latency())
    return p
