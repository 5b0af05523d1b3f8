"""Every Nexmark query on the SparkRunner gives the local executor's results (bounded input:
the events generated in the job, split over Spark tasks, and events from memory cached in Spark,
as `jetbench nexmark --runner spark` reads them)."""

from __future__ import annotations

from collections import Counter

import pytest

from jetbench import run
from jetbench.nexmark.config import NexmarkConfig
from jetbench.nexmark.generator import generate
from jetbench.nexmark.queries import QUERIES, pipeline
from jetbench.nexmark.reference import REFERENCE
from jetbench.nexmark.source import from_events, nexmark
from jetbench.nexmark.suite import events_source, release_source, run_query

pytestmark = pytest.mark.slow

CONFIG = NexmarkConfig(num_events=6000)  # Beam's 100 generators: 60 events each, 10 ms apart
PAIRS = list(generate(CONFIG))


def same(a, b):
    return Counter(map(repr, a)) == Counter(map(repr, b))


@pytest.fixture(scope="module")
def cached(spark):
    """The events cached in Spark once for every query, as the SMOKE suite does."""
    from jetbench.spark import SparkRunner

    source = events_source(PAIRS, SparkRunner(spark))
    yield source
    release_source(source)


@pytest.mark.parametrize("q", sorted(QUERIES))
def test_query_on_spark_equals_local(q, runner, cached):
    local = run(pipeline(q, from_events(PAIRS), CONFIG), progress=False)
    on_spark = runner.run(pipeline(q, nexmark(CONFIG, local_parallelism=2), CONFIG))
    assert same(on_spark, local)
    assert same(local, REFERENCE[q]([e for _, e in PAIRS], CONFIG))
    assert same(runner.run(pipeline(q, cached, CONFIG)), local)


def test_one_query_caches_its_events_and_frees_them(runner, spark):
    """`run_query` on a Spark runner (``jetbench nexmark --query N --runner spark``) reads the
    events from Spark's cache and frees the cache afterwards."""
    cached_before = spark.sparkContext._jsc.sc().getPersistentRDDs().size()
    r = run_query(2, PAIRS, CONFIG, runner)
    assert r.digest == run_query(2, PAIRS, CONFIG).digest and r.runner == "SparkRunner"
    assert spark.sparkContext._jsc.sc().getPersistentRDDs().size() == cached_before
