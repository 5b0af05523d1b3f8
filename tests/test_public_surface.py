"""The names a user meets: ``import jetbench as jb`` reaches everything the README and the
notebooks use, aggregate operations are factories everywhere, and each runner names the
options it does not take."""

import pytest

import jetbench as jb
from jetbench import aggregate, sinks, sources, window
from jetbench.pipeline import PipelineError
from jetbench.processors import accumulate_by_key, global_aggregate
from jetbench.processors.window_aggregate import window_aggregate


def test_the_pipeline_namespaces_are_attributes_of_the_package():
    assert (jb.sources, jb.sinks, jb.aggregate, jb.window) == (sources, sinks, aggregate, window)
    p = jb.Pipeline()
    p.read_from(jb.sources.items(range(6))).group_by(lambda x: x % 3) \
        .aggregate(jb.aggregate.counting()).write_to(jb.sinks.collect())
    assert sorted(jb.run(p)) == [(0, 2), (1, 2), (2, 2)]
    assert repr(jb.window.tumbling(10)) == "tumbling(10)"


@pytest.mark.parametrize("factory", [aggregate.counting, aggregate.to_list, aggregate.to_set, aggregate.summing])
def test_a_bare_factory_is_refused_with_the_call_to_make(factory):
    name = factory.__name__
    stage = jb.Pipeline().read_from(jb.sources.items([1, 2]))
    with pytest.raises(PipelineError, match=rf"aggregate\.{name} is a factory .*: call it, aggregate\.{name}\("):
        stage.aggregate(factory)
    with pytest.raises(PipelineError, match=rf"call it, aggregate\.{name}\("):
        stage.group_by(str).aggregate(factory)
    timed = jb.Pipeline().read_from(jb.sources.test_stream([(1, "a")]))
    with pytest.raises(PipelineError, match=rf"call it, aggregate\.{name}\("):
        timed.window(window.tumbling(10)).aggregate(factory)
    for make in (lambda: accumulate_by_key(str, factory), lambda: global_aggregate(factory),
                 lambda: window_aggregate(None, factory, window.tumbling(10)),
                 lambda: aggregate.all_of(aggregate.counting(), factory)):
        with pytest.raises(jb.JetbenchError, match=rf"call it, aggregate\.{name}\("):
            make()


def test_something_else_than_an_operation_is_named():
    with pytest.raises(PipelineError, match=r"stage 'items': aggregate\(\): expected an AggregateOperation .* got 42"):
        jb.Pipeline().read_from(jb.sources.items([1])).aggregate(42)


def test_the_called_factories_work_in_every_aggregation():
    p = jb.Pipeline()
    stage = p.read_from(jb.sources.items([3, 1, 3]))
    stage.aggregate(aggregate.all_of(aggregate.counting(), aggregate.to_set(), aggregate.to_list())) \
        .write_to(jb.sinks.collect())
    ((count, distinct, items),) = jb.run(p)
    assert (count, distinct, sorted(items)) == (3, {1, 3}, [1, 3, 3])


def test_the_local_runner_names_an_option_it_does_not_take():
    p = jb.Pipeline()
    p.read_from(jb.sources.items([1])).write_to(jb.sinks.collect())
    with pytest.raises(jb.RunnerOptionError, match=r"the local runner takes no option 'partitions'; it takes "
                                                   r"cooperative_threads, min_idle_us"):
        jb.run(p, partitions=2)
    assert jb.run(p, cooperative_threads=1, min_idle_us=10) == [1]


def test_the_spark_runner_names_an_option_it_does_not_take_before_starting_spark():
    import sys

    p = jb.Pipeline()
    p.read_from(jb.sources.items([1])).write_to(jb.sinks.collect())
    had_session = "pyspark.sql" in sys.modules and sys.modules["pyspark.sql"].SparkSession.getActiveSession()
    with pytest.raises(jb.JetbenchError, match=r"'cooperative_thread'"):
        jb.run(p, runner="spark", cooperative_thread=1)
    if not had_session and "pyspark.sql" in sys.modules:
        assert sys.modules["pyspark.sql"].SparkSession.getActiveSession() is None


def test_a_runner_object_takes_no_options_through_run():
    class Echo:
        def run(self, job, timeout=None, fuse=None):
            return "ran"

    p = jb.Pipeline()
    p.read_from(jb.sources.items([1])).write_to(jb.sinks.collect())
    assert jb.run(p, runner=Echo()) == "ran"
    with pytest.raises(jb.JetbenchError, match="go to the runner object's own constructor"):
        jb.run(p, runner=Echo(), partitions=2)
    with pytest.raises(jb.JetbenchError, match="runner must be 'local', 'spark' or a runner object"):
        jb.run(p, runner="flink")
