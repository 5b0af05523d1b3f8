"""Early results in a running job (``WindowDefinition.early_results_period``): a window that
stays open emits its current result, again and again as it grows, while the job runs."""

from __future__ import annotations

import threading

import pytest

from jetbench import Pipeline, aggregate, sinks, sources, window
from jetbench.core.errors import JobCancelled


def test_an_open_window_emits_its_growing_result_every_period(service):
    results: list = []
    grown = threading.Event()

    def seen(result) -> None:
        results.append(result)
        if len(results) >= 3 and results[-1].value > results[0].value:
            grown.set()

    p = Pipeline()
    ticks = p.read_from(sources.generator(500))  # unbounded, timestamped now (ms since the epoch)
    year_3000 = 32_503_680_000_000  # a window closed by no watermark in this test
    ticks.window(window.tumbling(year_3000).early_results_period(20)).aggregate(aggregate.counting()) \
        .write_to(sinks.callback(seen))
    job = service.submit(p)
    try:
        assert grown.wait(timeout=60), f"no growing early results: {results}"
    finally:
        job.cancel()
    with pytest.raises(JobCancelled):
        job.join(timeout=30)
    windows = {(r.start, r.end, r.key) for r in results}
    assert windows == {(0, year_3000, None)}
    counts = [r.value for r in results]
    assert counts == sorted(counts) and counts[0] >= 1
