"""The keywords SparkRunner takes (`SparkConfig`), checked without starting Spark."""

from __future__ import annotations

import pytest

from jetbench import JetbenchError, RunnerOptionError
from jetbench.spark import SparkConfig, SparkRunner


def test_from_options_splits_session_partitions_and_the_tasks_execution_settings():
    runner = SparkRunner.from_options(partitions=3, cooperative_threads=2, min_idle_us=10)
    assert runner.partitions == 3
    assert runner.execution == {"cooperative_threads": 2, "noncooperative_max_idle_us": 1000, "min_idle_us": 10}
    assert runner.config == SparkConfig.from_options(partitions=3, cooperative_threads=2, min_idle_us=10)
    assert SparkRunner(partitions=3, cooperative_threads=2, min_idle_us=10).config == runner.config
    assert SparkRunner().execution == {"cooperative_threads": 1, "noncooperative_max_idle_us": 1000}


def test_an_unknown_keyword_is_named_with_the_accepted_ones():
    with pytest.raises(RunnerOptionError, match=r"the spark runner takes no option 'partitons'; it takes "
                                                r"session, partitions, cooperative_threads, ") as info:
        SparkRunner.from_options(partitons=2)
    assert isinstance(info.value, TypeError) and info.value.keyword == "partitons"
    assert "session" in info.value.accepted and "min_idle_us" in info.value.accepted
    with pytest.raises(RunnerOptionError, match="'partitons'"):
        SparkRunner(partitons=2)
    with pytest.raises(RunnerOptionError, match="execution\\['session'\\]"):
        SparkConfig(execution={"session": None})


def test_bad_values_fail_when_configured_not_in_a_task():
    with pytest.raises(JetbenchError, match="partitions must be an int >= 1, got 0"):
        SparkConfig(partitions=0)
    with pytest.raises(JetbenchError, match="cooperative_threads"):
        SparkRunner.from_options(cooperative_threads=0)
    for bad in (-1, True, 1.5):
        with pytest.raises(JetbenchError, match=f"spark_window_min_items must be an int >= 0, got {bad!r}"):
            SparkRunner(spark_window_min_items=bad)
    assert SparkRunner.from_options(spark_window_min_items=0).config.spark_window_min_items == 0


def test_the_config_is_frozen():
    config = SparkConfig.from_options(partitions=2)
    with pytest.raises(AttributeError):
        config.partitions = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.execution["cooperative_threads"] = 4  # type: ignore[index]
