"""Example jobs used by the demo, the benchmarks and the docs.

>>> from jetbench import run
>>> sorted(run(wordcount_dag(["The cat", "the hat!"])))
[('cat', 1), ('hat', 1), ('the', 2)]
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .core import DAG, Edge
from .processors import (
    accumulate_by_key,
    collect_sink,
    combine_by_key,
    counting,
    items_source,
    transform_processor,
)
from .processors.transforms import Transform

_split_on_non_word = re.compile(r"\W+").split


def tokenize(line: str) -> list[str]:
    """Seed 002's tokenizer: lower-case, split on runs of non-word characters."""
    return _split_on_non_word(line.lower())


def non_empty(word: str) -> bool:
    return word != ""


def word_key(word: str) -> str:
    return word


def pair_key(pair: tuple) -> object:
    return pair[0]


def wordcount_dag(lines: Iterable[str], parallelism: int | None = None) -> DAG:
    """Seed 002's word count as a DAG with two-stage aggregation.

    source -> tokenize (flat_map + filter, fused) -> accumulate (partitioned by word)
    -> combine (partitioned by word) -> sink; the result is a list of ``(word, count)``.
    """
    dag = DAG()
    source = dag.new_vertex("source", items_source(lines), local_parallelism=parallelism)
    tokenizer = dag.new_vertex(
        "tokenize", transform_processor(Transform().flat_map(tokenize).filter(non_empty)), parallelism
    )
    accumulate = dag.new_vertex("accumulate", accumulate_by_key(word_key, counting), parallelism)
    combine = dag.new_vertex("combine", combine_by_key(counting), parallelism)
    sink = dag.new_vertex("sink", collect_sink(), local_parallelism=1)
    dag.edge(Edge.between(source, tokenizer))
    dag.edge(Edge.between(tokenizer, accumulate).partitioned(word_key))
    dag.edge(Edge.between(accumulate, combine).partitioned(pair_key))
    dag.edge(Edge.between(combine, sink))
    return dag
