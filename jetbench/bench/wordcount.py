"""Word count on a generated Zipf corpus: the jetbench DAG against the loop a Python programmer
writes (`idiomatic_loop`: ``counts[w] = counts.get(w, 0) + 1`` inline), with two more baselines
beside it: ``collections.Counter`` over the same words (`counter_loop`) and the older "same
functions" loop that calls the job's filter, key and ``counting()`` functions per word
(`plain_loop`)."""

from __future__ import annotations

from collections import Counter
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


def idiomatic_loop(lines: list[str]) -> dict[str, int]:
    """What a Python programmer writes: the tokenizer, then one dict operation per word."""
    counts: dict[str, int] = {}
    for line in lines:
        for word in tokenize(line):
            if word:
                counts[word] = counts.get(word, 0) + 1
    return counts


def counter_loop(lines: list[str]) -> dict[str, int]:
    """The other idiom: ``collections.Counter`` fed by a generator over the words."""
    return Counter(word for line in lines for word in tokenize(line) if word)


def run(lines: int = 200_000, repeat: int = 3, threads: int = 1, pipeline: bool = False) -> BenchReport:
    text = corpus(lines)
    words = sum(1 for line in text for w in tokenize(line) if w)
    if pipeline:
        job: Any = wordcount_pipeline(text)
    else:
        job = wordcount_dag(text)
    service = ExecutionService(cooperative_threads=threads)
    timings = interleaved({
        "engine": lambda: service.run(job),
        "baseline": on_thread(lambda: idiomatic_loop(text)),
        "counter": on_thread(lambda: counter_loop(text)),
        "same_functions": on_thread(lambda: plain_loop(text)),
    }, repeat)
    engine, baseline = timings["engine"], timings["baseline"]
    equal = (dict(engine.result) == baseline.result and len(engine.result) == len(baseline.result)
             and timings["counter"].result == baseline.result and timings["same_functions"].result == baseline.result)
    name = "wordcount --pipeline" if pipeline else "wordcount"
    report = BenchReport.of(
        name, lines, engine, baseline, equal, words=words, distinct_words=len(baseline.result),
        cooperative_threads=threads, items_unit="lines",
        jetbench_cpu_s=engine.cpu_s, baseline_cpu_s=baseline.cpu_s,
    )
    report.baseline_kind = "idiomatic loop: counts[w] = counts.get(w, 0) + 1"
    return report.against("counter", timings["counter"]).against("same_functions", timings["same_functions"])
