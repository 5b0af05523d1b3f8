"""The word count of the Hazelcast Jet reference manual ("The Word Count Task" in its chapter
"Directed Acyclic Graph (DAG)"): lines of text -> a count per word, as a DAG and as a Pipeline.

Both use the same functions: `tokenize` (lower-case, split on runs of non-word characters),
`non_empty`, `word_key`; the demo, the benchmarks, the notebooks and the docs import them from here.

>>> from jetbench import run
>>> sorted(run(wordcount_dag(["The cat", "the hat!"])))
[('cat', 1), ('hat', 1), ('the', 2)]
>>> sorted(run(wordcount_pipeline(["The cat", "the hat!"])))
[('cat', 1), ('hat', 1), ('the', 2)]
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from . import aggregate, sinks, sources
from .core import DAG, Edge
from .pipeline import Pipeline
from .processors import (
    Transform,
    accumulate_by_key,
    collect_sink,
    combine_by_key,
    counting,
    items_source,
    transform_processor,
)

_split_on_non_word = re.compile(r"\W+").split


def tokenize(line: str) -> list[str]:
    """The manual's tokenizer: lower-case, split on runs of non-word characters (``\\W+``).

    >>> tokenize("The cat's hat!")
    ['the', 'cat', 's', 'hat', '']
    """
    return _split_on_non_word(line.lower())


def non_empty(word: str) -> bool:
    return word != ""


def word_key(word: str) -> str:
    return word


def pair_key(pair: tuple[str, int]) -> str:
    return pair[0]


def wordcount_dag(lines: Iterable[str], parallelism: int | None = None) -> DAG:
    """The word count as a DAG with two-stage aggregation, as the manual draws it.

    source -> tokenize (flat_map + filter, fused) -> accumulate (partitioned by word)
    -> combine (partitioned by word) -> sink; the result is a list of ``(word, count)``.
    """
    dag = DAG()
    source = dag.new_vertex("source", items_source(lines), local_parallelism=parallelism)
    tokenizer = dag.new_vertex(
        "tokenize", transform_processor(Transform().flat_map(tokenize).filter(non_empty)), parallelism
    )
    accumulate = dag.new_vertex("accumulate", accumulate_by_key(word_key, counting()), parallelism)
    combine = dag.new_vertex("combine", combine_by_key(counting()), parallelism)
    sink = dag.new_vertex("sink", collect_sink(), local_parallelism=1)
    dag.edge(Edge.between(source, tokenizer))
    dag.edge(Edge.between(tokenizer, accumulate).partitioned(word_key))
    dag.edge(Edge.between(accumulate, combine).partitioned(pair_key))
    dag.edge(Edge.between(combine, sink))
    return dag


def wordcount_pipeline(lines: Iterable[str] | sources.Source) -> Pipeline:
    """The word count in the Pipeline API, step by step as the manual writes it:
    lines (an iterable, or a `Source` of lines) -> count per word."""
    p = Pipeline()
    (p.read_from(lines if isinstance(lines, sources.Source) else sources.items(lines))
        .flat_map(tokenize)
        .filter(non_empty)
        .group_by(word_key)
        .aggregate(aggregate.counting())
        .write_to(sinks.collect()))
    return p
