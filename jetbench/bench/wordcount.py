"""Word count on a generated Zipf corpus: the jetbench DAG against a plain fused Python loop."""

from __future__ import annotations

from typing import Any

from ..core import ExecutionService
from ..datasets import corpus
from ..processors.aggregate_operation import counting
from ..wordcount import non_empty, tokenize, word_key, wordcount_dag, wordcount_pipeline
from .common import BenchReport, interleaved, on_thread

_MISSING = object()


def plain_loop(lines: list[str]) -> dict[str, int]:
    """The same functions (tokenize, filter, key, counting()) in one nested loop."""
    create, accumulate = counting().create, counting().accumulate
    counts: dict[str, int] = {}
    get = counts.get
    for line in lines:
        for word in tokenize(line):
            if non_empty(word):
                key = word_key(word)
                acc = get(key, _MISSING)
                counts[key] = accumulate(create() if acc is _MISSING else acc, word)
    return counts


def run(lines: int = 200_000, repeat: int = 3, threads: int = 1, pipeline: bool = False) -> BenchReport:
    text = corpus(lines)
    words = sum(1 for line in text for w in tokenize(line) if w)
    if pipeline:
        job: Any = wordcount_pipeline(text)
    else:
        job = wordcount_dag(text)
    service = ExecutionService(cooperative_threads=threads)
    timings = interleaved({"engine": lambda: service.run(job), "baseline": on_thread(lambda: plain_loop(text))}, repeat)
    engine, baseline = timings["engine"], timings["baseline"]
    equal = dict(engine.result) == baseline.result and len(engine.result) == len(baseline.result)
    name = "wordcount --pipeline" if pipeline else "wordcount"
    return BenchReport.of(
        name, lines, engine, baseline, equal, words=words, distinct_words=len(baseline.result),
        cooperative_threads=threads, items_unit="lines",
        jetbench_cpu_s=engine.cpu_s, baseline_cpu_s=baseline.cpu_s,
    )
