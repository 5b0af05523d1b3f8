"""One embedded local SparkSession for the whole test run (local[2], 1 GB driver), with its
files in a temporary cache directory; started and warmed up once, stopped at the end."""

from __future__ import annotations

import sys

import pytest
from pyspark import cloudpickle

from jetbench import Pipeline, aggregate, sinks, sources


def ship_by_value(module_name: str) -> None:
    """Functions of test modules travel to the Spark workers by value: the workers cannot
    import the test packages."""
    cloudpickle.register_pickle_by_value(sys.modules[module_name])


@pytest.fixture(scope="session")
def spark_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        cache = tmp_path_factory.mktemp("jetbench-cache")
        mp.setenv("JETBENCH_CACHE", str(cache))
        yield cache


@pytest.fixture(scope="session")
def spark(spark_cache):
    from jetbench.spark import SparkRunner, session, stop

    spark = session("local[2]", driver_memory="1g")
    # Warm-up: start the Python workers and run each kind of Spark work once.
    p = Pipeline()
    p.read_from(sources.items(range(100))).group_by(lambda x: x % 7).aggregate(aggregate.counting()) \
        .write_to(sinks.collect())
    SparkRunner(spark).run(p)
    spark.range(10).mapInArrow(lambda batches: batches, "id long").collect()
    yield spark
    stop()


@pytest.fixture
def runner(spark):
    from jetbench.spark import SparkRunner

    return SparkRunner(spark)
