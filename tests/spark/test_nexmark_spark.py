"""Every Nexmark query on the SparkRunner gives the local executor's results (bounded input:
the events generated in the job, split over Spark tasks, and events from memory)."""

from __future__ import annotations

from collections import Counter

import pytest

from jetbench import run
from jetbench.nexmark.config import NexmarkConfig
from jetbench.nexmark.generator import generate
from jetbench.nexmark.queries import QUERIES, pipeline
from jetbench.nexmark.reference import REFERENCE
from jetbench.nexmark.source import from_events, nexmark

pytestmark = pytest.mark.slow

CONFIG = NexmarkConfig(num_events=6000)  # Beam's 100 generators: 60 events each, 10 ms apart
PAIRS = list(generate(CONFIG))


def same(a, b):
    return Counter(map(repr, a)) == Counter(map(repr, b))


@pytest.mark.parametrize("q", sorted(QUERIES))
def test_query_on_spark_equals_local(q, runner):
    local = run(pipeline(q, from_events(PAIRS), CONFIG), progress=False)
    on_spark = runner.run(pipeline(q, nexmark(CONFIG, local_parallelism=2), CONFIG))
    assert same(on_spark, local)
    assert same(local, REFERENCE[q]([e for _, e in PAIRS], CONFIG))
    assert same(runner.run(pipeline(q, from_events(PAIRS), CONFIG)), local)
