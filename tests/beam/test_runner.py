"""JetbenchRunner on real Beam pipelines: results checked with Beam's assert_that (which fails
the pipeline on a wrong result), the DAG a pipeline becomes, errors, metrics, cancel."""

from __future__ import annotations

import gc
import shutil
import subprocess
import sys
import time

import apache_beam as beam
import pytest
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.runner import PipelineState
from apache_beam.testing.test_stream import TestStream as BeamTestStream
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import trigger, userstate, window
from apache_beam.utils.windowed_value import PaneInfoTiming

from jetbench.beam import (
    BeamStageError,
    JetbenchPipelineResult,
    JetbenchRunner,
    UnsupportedBeamFeature,
)
from jetbench.beam.heap import FROZEN_HEAP, FrozenHeap
from jetbench.core.errors import JetbenchError, JobError
from jetbench.core.job import JobStatus
from jetbench.notebook.dashboard_model import DashboardModel


@pytest.fixture(params=[1, 2], ids=lambda n: f"threads={n}")
def runner(request) -> JetbenchRunner:
    return JetbenchRunner(cooperative_threads=request.param)


def test_word_count(runner):
    with beam.Pipeline(runner=runner) as p:
        counts = (p | beam.Create(["the cat", "the dog the end"] * 50) | beam.FlatMap(str.split)
                  | beam.combiners.Count.PerElement())
        assert_that(counts, equal_to([("the", 150), ("cat", 50), ("dog", 50), ("end", 50)]))


def test_a_wrong_result_fails_the_pipeline(runner):
    """assert_that is what the other tests rely on: a wrong count must fail the run."""
    with pytest.raises(JobError, match="Failed assert"), beam.Pipeline(runner=runner) as p:
        assert_that(p | beam.Create([1, 2]) | beam.Map(lambda x: x + 1), equal_to([1, 2]))


def _stamped(p, items):
    return p | beam.Create(items) | beam.Map(lambda kv: window.TimestampedValue((kv[0], kv[2]), kv[1]))


class _WithWindow(beam.DoFn):
    def process(self, kv, w=beam.DoFn.WindowParam):
        yield kv[0], float(w.start), float(w.end), sorted(kv[1])


def test_group_by_key_in_fixed_windows(runner):
    items = [("a", 1, 1), ("a", 4, 2), ("a", 12, 3), ("b", 5, 4), ("b", 19, 5)]
    with beam.Pipeline(runner=runner) as p:
        grouped = (_stamped(p, items) | beam.WindowInto(window.FixedWindows(10)) | beam.GroupByKey()
                   | beam.ParDo(_WithWindow()))
        assert_that(grouped, equal_to([("a", 0, 10, [1, 2]), ("a", 10, 20, [3]), ("b", 0, 10, [4]),
                                       ("b", 10, 20, [5])]))


def test_session_windows_merge(runner):
    items = [("a", 1, 1), ("a", 3, 2), ("a", 20, 3), ("b", 2, 4), ("b", 6, 5), ("b", 9, 6)]
    with beam.Pipeline(runner=runner) as p:
        grouped = (_stamped(p, items) | beam.WindowInto(window.Sessions(5)) | beam.GroupByKey()
                   | beam.ParDo(_WithWindow()))
        assert_that(grouped, equal_to([("a", 1, 8, [1, 2]), ("a", 20, 25, [3]), ("b", 2, 14, [4, 5, 6])]))


def test_sliding_windows_with_accumulating_early_firings(runner):
    """A trigger with early panes in batch: the driver sees the whole key at once, so each window
    fires an early pane and an on-time pane holding everything (accumulating), as FnApiRunner does."""
    items = [("k", t, t) for t in range(6)]
    with beam.Pipeline(runner=runner) as p:
        sums = (_stamped(p, items)
                | beam.WindowInto(window.SlidingWindows(4, 2),
                                  trigger=trigger.AfterWatermark(early=trigger.AfterCount(1)),
                                  accumulation_mode=trigger.AccumulationMode.ACCUMULATING)
                | beam.CombinePerKey(sum) | beam.ParDo(_WindowStartAndPane()))
        expected = [(-2, 1), (0, 6), (2, 14), (4, 9)]
        assert_that(sums, equal_to([(start, total, timing) for start, total in expected
                                    for timing in (PaneInfoTiming.EARLY, PaneInfoTiming.ON_TIME)]))


class _WindowStartAndPane(beam.DoFn):
    def process(self, kv, w=beam.DoFn.WindowParam, pane=beam.DoFn.PaneInfoParam):
        yield float(w.start), kv[1], pane.timing


def test_flatten_is_one_vertex_with_an_input_per_pcollection(runner):
    with beam.Pipeline(runner=runner) as p:
        parts = [p | f"part{k}" >> beam.Create([k, 10 + k]) for k in range(3)]
        assert_that(tuple(parts) | beam.Flatten(), equal_to([0, 10, 1, 11, 2, 12]))
    plan = JetbenchRunner.explain(p)
    (flatten,) = [v for v in plan.dag.vertices if plan.vertices[v.name][0] == "flatten"
                  and "assert_that" not in v.name]
    assert len(plan.dag.inbound_edges(flatten)) == 3


def test_combine_is_lifted_into_two_stages(runner):
    with beam.Pipeline(runner=runner) as p:
        totals = p | beam.Create([("a", 1), ("b", 2), ("a", 3)] * 100) | beam.CombinePerKey(sum)
        assert_that(totals, equal_to([("a", 400), ("b", 200)]))
    plan = JetbenchRunner.explain(p)
    kinds = {step: kind for kind, steps in plan.vertices.values() for step in steps}
    assert kinds["CombinePerKey(sum)/Precombine"] == "stage"
    assert kinds["CombinePerKey(sum)/Group"] == "group_by_key"
    assert kinds["CombinePerKey(sum)/Merge"] == "stage"
    group = next(v for v in plan.dag.vertices if v.name.endswith("CombinePerKey(sum)/Group"))
    (edge,) = plan.dag.inbound_edges(group)
    assert edge.routing.value == "partitioned"


class _Mean(beam.CombineFn):
    """A mean whose accumulator is a (sum, count) pair; refuses to work before ``setup``."""

    def setup(self):
        self.ready = True

    def create_accumulator(self):
        return 0, 0

    def add_input(self, acc, x):
        assert self.ready
        return acc[0] + x, acc[1] + 1

    def merge_accumulators(self, accs):
        assert self.ready
        sums, counts = zip(*accs, strict=True)
        return sum(sums), sum(counts)

    def extract_output(self, acc):
        return acc[0] / acc[1] if acc[1] else float("nan")


@pytest.mark.parametrize("in_harness", [False, True], ids=["merged-in-grouping", "merged-in-harness"])
def test_a_lifted_combine_merges_its_accumulators_in_the_grouping_vertex(in_harness):
    """Many bundles precombine the same keys: the GroupByKey of the lifted combine merges each
    key's accumulators as they arrive (jetbench's two-stage aggregation), unless told to leave
    them to the harness; the results are the same either way."""
    pairs = [(f"k{n % 7}", n) for n in range(20_000)]
    runner = JetbenchRunner(cooperative_threads=2, merge_in_harness=in_harness, queue_size=4)
    p = beam.Pipeline(runner=runner)
    numbers = p | beam.Create(pairs)
    sums = numbers | "Sum" >> beam.CombinePerKey(sum)
    means = numbers | "Mean" >> beam.CombinePerKey(_Mean())
    expected_sums = {f"k{k}": sum(n for n in range(20_000) if n % 7 == k) for k in range(7)}
    counts = {f"k{k}": sum(1 for n in range(20_000) if n % 7 == k) for k in range(7)}
    assert_that(sums, equal_to(list(expected_sums.items())), label="sums")
    assert_that(means, equal_to([(k, expected_sums[k] / counts[k]) for k in counts]), label="means")
    result = p.run()
    assert result.wait_until_finish() == PipelineState.DONE
    groups = [t for t in result.job.metrics().tasklets if t.vertex.endswith(("Sum/Group", "Mean/Group"))]
    assert len(groups) == 4  # two groupings, two instances each
    merges = sum(t.processor_metrics["accumulator_merges"] for t in groups)
    assert (merges == 0) if in_harness else (merges >= 14)  # each key merged at least once, in each


def test_side_inputs(runner):
    with beam.Pipeline(runner=runner) as p:
        factor = p | "factor" >> beam.Create([10])
        names = p | "names" >> beam.Create([(1, "one"), (2, "two")])
        extra = p | "extra" >> beam.Create([100, 200])
        out = (p | beam.Create([1, 2])
               | "Lookup" >> beam.Map(lambda x, f, n, e: (n[x], x * f + sum(e)), f=beam.pvalue.AsSingleton(factor),
                          n=beam.pvalue.AsDict(names), e=beam.pvalue.AsList(extra)))
        assert_that(out, equal_to([("one", 310), ("two", 320)]))
    plan = JetbenchRunner.explain(p)
    (stage,) = [v for v in plan.dag.vertices if "Lookup" in plan.vertices[v.name][1]]
    edges = plan.dag.inbound_edges(stage)
    assert sorted(e.routing.value for e in edges) == ["broadcast"] * 3 + ["unicast"]


def test_a_side_input_computed_from_the_main_input_never_deadlocks():
    """The main input and the side input (its sum) come from one vertex; with one-chunk queues
    the main queue is full long before the side input is complete: the stage holds the main
    input until its side input is complete, where draining the side edge first would wait for
    ever on the upstream vertex waiting for room in the main queue."""
    p = beam.Pipeline(runner=JetbenchRunner(queue_size=1))
    numbers = p | beam.Create(range(5000))
    total = numbers | beam.CombineGlobally(sum)
    shares = numbers | "Share" >> beam.Map(lambda x, t: (x, t), t=beam.pvalue.AsSingleton(total))
    assert_that(shares | beam.combiners.Count.Globally(), equal_to([5000]), label="count")
    assert_that(shares | beam.Filter(lambda xt: xt[1] != 12497500), equal_to([]), label="all_see_the_total")
    assert p.run().wait_until_finish() == PipelineState.DONE


_COUNT = userstate.CombiningValueStateSpec("count", sum)
_FLUSH = userstate.TimerSpec("flush", userstate.TimeDomain.WATERMARK)
_COUNT_PARAM = beam.DoFn.StateParam(_COUNT)
_FLUSH_PARAM = beam.DoFn.TimerParam(_FLUSH)


class _CountThenFlush(beam.DoFn):
    """Sums each key's values in state; an event-time timer emits the sum at the end."""

    def process(self, kv, count=_COUNT_PARAM, flush=_FLUSH_PARAM):
        count.add(kv[1])
        flush.set(100)

    @userstate.on_timer(_FLUSH)
    def on_flush(self, key=beam.DoFn.KeyParam, count=_COUNT_PARAM):
        yield key, count.read()


@pytest.mark.parametrize("parallelism", [1, 3])
def test_user_state_and_event_time_timers(parallelism):
    """Each key's state lives in one instance of the stage: with three instances, a key whose
    values were split between them would be flushed twice with partial sums."""
    # keys go to instances by the hash of their bytes, which each process seeds anew: with 20
    # keys one instance of three got none about once in a thousand runs (3 x (2/3)^20); with 60,
    # once in ten billion
    items = [(f"k{k}", v) for v in range(1, 6) for k in range(60)]
    p = beam.Pipeline(runner=JetbenchRunner(parallelism=parallelism))
    out = p | beam.Create(items) | "Flush" >> beam.ParDo(_CountThenFlush())
    assert_that(out, equal_to([(f"k{k}", 15) for k in range(60)]))
    result = p.run()
    assert result.wait_until_finish() == PipelineState.DONE
    (stage,) = [v for v in result.plan.dag.vertices if "Flush" in v.name]
    assert stage.local_parallelism == parallelism
    (edge,) = result.plan.dag.inbound_edges(stage)
    assert edge.routing.value == "partitioned"
    instances = [t for t in result.job.metrics().tasklets if t.vertex == stage.name]
    assert len(instances) == parallelism and all(t.received_count > 0 for t in instances)


def _explode(x):
    raise ValueError(f"no {x}")


def test_a_raising_dofn_names_the_beam_step_and_the_vertex(runner):
    p = beam.Pipeline(runner=runner)
    _ = p | beam.Create(["x"]) | "Upper" >> beam.Map(str.upper) | "Explode" >> beam.Map(_explode)
    result = p.run()
    with pytest.raises(JobError) as info:
        result.wait_until_finish()
    cause = info.value.__cause__
    assert isinstance(cause, BeamStageError) and cause.step == "Explode"
    assert "Explode" in cause.vertex and cause.vertex == info.value.vertex
    assert "Beam step 'Explode' failed in jetbench vertex" in str(info.value)
    assert "no X" in str(info.value)
    assert result.state == PipelineState.FAILED


def test_unsupported_features_are_refused_before_running():
    p = beam.Pipeline(runner=JetbenchRunner())
    _ = p | BeamTestStream().add_elements([1]) | beam.Map(lambda x: x)
    with pytest.raises(UnsupportedBeamFeature, match="uses beam:transform:teststream:v1, which the runner does not support"):
        p.run()
    with pytest.raises(JetbenchError, match="processing_guarantee must be one of"):
        beam.Pipeline(runner=JetbenchRunner(processing_guarantee="twice")).run()
    with pytest.raises(JetbenchError, match="unknown setting"):
        JetbenchRunner(threads=2)
    with pytest.raises(JetbenchError, match="cooperative_threads must be an int >= 1"):
        beam.Pipeline(runner=JetbenchRunner(cooperative_threads=0)).run()


class _Measured(beam.DoFn):
    def __init__(self):
        self.seen = Metrics.counter("jetbench-test", "seen")
        self.sizes = Metrics.distribution("jetbench-test", "sizes")
        self.words = Metrics.string_set("jetbench-test", "words")
        self.last = Metrics.gauge("jetbench-test", "last")

    def process(self, word):
        self.seen.inc()
        self.sizes.update(len(word))
        self.words.add(word)
        self.last.set(len(word))
        yield word


def test_metrics_and_the_job_behind_the_result():
    """Metrics of many bundles in three instances of a stage merge: counts add up, the
    distribution combines, the string sets unite (each bundle reports its own)."""
    words = [str(n) for n in range(9000)]  # each bundle sees other words
    p = beam.Pipeline(runner=JetbenchRunner(parallelism=3))
    _ = p | beam.Create(words) | "Measure" >> beam.ParDo(_Measured())
    result = p.run()
    assert isinstance(result, JetbenchPipelineResult)
    assert result.wait_until_finish() == PipelineState.DONE
    metrics = result.metrics().query(MetricsFilter().with_namespace("jetbench-test"))
    (seen,) = metrics["counters"]
    assert seen.key.metric.name == "seen" and seen.key.step == "Measure"
    assert seen.committed == seen.attempted == 9000
    (sizes,) = metrics["distributions"]
    total = sum(map(len, words))
    assert (sizes.committed.count, sizes.committed.sum, sizes.committed.min, sizes.committed.max) == (9000, total, 1, 4)
    (seen_words,) = metrics["string_sets"]
    assert seen_words.committed == set(words)
    (last,) = metrics["gauges"]
    assert last.committed.value in (1, 2, 3, 4)
    assert result.metrics().query(MetricsFilter().with_step("no such step"))["counters"] == []
    assert any(not r.key.metric.namespace.startswith("jetbench")
               for r in result.monitoring_metrics().query()["counters"])  # Beam's own element counts
    job = result.job
    assert job.status is JobStatus.COMPLETED
    vertices = {t.vertex for t in job.metrics().tasklets}
    assert any(v.startswith("impulse-") for v in vertices)
    assert any(v.startswith("group-") for v in vertices)  # Create's reshuffle
    stage = [t for t in job.metrics().tasklets if "Measure" in t.vertex]
    assert len(stage) == 3 and sum(t.received_count for t in stage) > 0
    assert sum(t.processor_metrics["bundles"] for t in stage) >= 3  # at most 16 chunks of 256 per bundle
    assert not any(t.cooperative for t in stage)  # a DoFn may block: its stage has threads of its own


def _slow(x):
    time.sleep(0.05)
    return x


def test_cancel_ends_the_job():
    p = beam.Pipeline(runner=JetbenchRunner())
    _ = p | beam.Create(range(40)) | beam.Map(_slow)
    result = p.run()
    assert result.wait_until_finish(duration=10) == PipelineState.RUNNING  # 10 ms of 2 s of sleeps
    assert result.cancel() == PipelineState.CANCELLED
    assert result.wait_until_finish() == PipelineState.CANCELLED
    assert result.job.live_threads() == []


_FREEZE_SEEN: list[int] = []


def _note_freeze(x):
    _FREEZE_SEEN.append(gc.get_freeze_count())
    return x


@pytest.mark.parametrize("on", [True, False])
def test_the_heap_alive_at_the_start_is_frozen_while_the_job_runs(on):
    """gc_freeze (the default): the bundles run with the heap of before the job in the permanent
    generation; it is back in the collector's generations once the job has ended."""
    assert gc.get_freeze_count() == 0
    _FREEZE_SEEN.clear()
    p = beam.Pipeline(runner=JetbenchRunner(gc_freeze=on))
    assert_that(p | beam.Create([1, 2, 3]) | beam.Map(_note_freeze), equal_to([1, 2, 3]))
    assert p.run().wait_until_finish() == PipelineState.DONE
    assert len(_FREEZE_SEEN) == 3
    assert all(n > 1000 for n in _FREEZE_SEEN) if on else _FREEZE_SEEN == [0, 0, 0]
    assert gc.get_freeze_count() == 0


def test_overlapping_jobs_share_one_freeze_and_a_failed_job_releases_it():
    heap = FrozenHeap()
    heap.acquire()
    heap.acquire()
    heap.release()
    assert gc.get_freeze_count() > 0 and heap.holders == 1
    heap.release()
    heap.release()  # one release too many is ignored
    assert (gc.get_freeze_count(), heap.holders, heap.freezes) == (0, 0, 1)
    gc.freeze()  # a freeze the process made itself is neither redone nor undone
    try:
        heap.acquire()
        heap.release()
        assert gc.get_freeze_count() > 0 and heap.freezes == 1
    finally:
        gc.unfreeze()
    with pytest.raises(JobError), beam.Pipeline(runner=JetbenchRunner()) as p:
        _ = p | beam.Create([1]) | beam.Map(lambda x: 1 / 0)
    assert gc.get_freeze_count() == 0 and FROZEN_HEAP.holders == 0


def test_the_runner_named_on_the_command_line():
    options = PipelineOptions(["--runner=jetbench.beam.JetbenchRunner", "--jetbench_cooperative_threads=1",
                               "--jetbench_queue_size=16", "--jetbench_idle_strategy=timer",
                               "--jetbench_min_idle_us=100", "--jetbench_max_idle_us=2000", "--no-jetbench_gc_freeze"])
    p = beam.Pipeline(options=options)
    freezes = FROZEN_HEAP.freezes
    assert_that(p | beam.Create([3, 1, 2]) | beam.Map(lambda x: x * x), equal_to([1, 4, 9]))
    result = p.run()
    assert isinstance(result, JetbenchPipelineResult)
    assert result.wait_until_finish() == PipelineState.DONE
    assert all(e.edge_queue_size == 16 for e in result.plan.dag.edges)
    service = result.job.service
    assert (service.cooperative_threads, service.idle_strategy) == (1, "timer")
    assert (service.idle.min_idle_us, service.idle.max_idle_us) == (100, 2000)
    assert FROZEN_HEAP.freezes == freezes  # --no-jetbench_gc_freeze


def test_the_dashboard_shows_the_beam_stages():
    p = beam.Pipeline(runner=JetbenchRunner())
    _ = p | beam.Create(["a b", "b c"]) | beam.FlatMap(str.split) | "Count" >> beam.combiners.Count.PerElement()
    result = p.run()
    result.wait_until_finish()
    state = DashboardModel(result.job, max_rows=200).update(final=True)
    rows = {r["vertex"] for r in state["rows"]}
    assert rows == set(result.plan.vertices)
    assert any("Count" in vertex and vertex.startswith("group-") for vertex in rows)


def test_explain_draws_the_dag():
    p = beam.Pipeline()
    _ = p | beam.Create([("a", 1)]) | beam.GroupByKey()
    plan = JetbenchRunner.explain(p)
    text = plan.explain()
    assert "GroupByKey  [group_by_key" in text and "(partitioned)" in text
    assert "digraph" in plan.dag.to_dot()
    assert str(plan) == text and repr(plan).startswith("BeamPlan(")
    if shutil.which("dot"):
        assert "<svg" in plan._repr_svg_()


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_import_jetbench_does_not_import_beam():
    done = _python("import sys, jetbench; print('apache_beam' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_without_beam_the_error_says_what_to_install():
    done = _python(
        "import sys\n"
        "class NoBeam:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'apache_beam' or name.startswith('apache_beam.'):\n"
        "            raise ImportError('No module named ' + repr(name))\n"
        "sys.meta_path.insert(0, NoBeam())\n"
        "try:\n"
        "    import jetbench.beam\n"
        "except Exception as exc:\n"
        "    from jetbench.core.errors import JetbenchError\n"
        "    print(isinstance(exc, (JetbenchError, ImportError)), exc)\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("True ") and "pip install jetbench[beam]" in done.stdout
