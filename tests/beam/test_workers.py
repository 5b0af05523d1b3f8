"""JetbenchRunner(sdk_workers=N): stateless stages run their bundles in Beam's subprocess SDK
workers; results equal the DirectRunner's, a file's ranges are shared out over the instances,
and no worker process outlives the job, whether it completes or fails."""

from __future__ import annotations

import apache_beam as beam
import psutil
import pytest
from apache_beam.runners.runner import PipelineState
from apache_beam.testing.util import assert_that, equal_to

from jetbench.beam import BeamRunnerError, JetbenchRunner
from jetbench.core.errors import JobError


def _children() -> set[int]:
    """This test process's descendants (a Spark session's JVM and its Python daemons, when the
    worker shares one, come and go on their own: a test asks only that it adds none)."""
    return {p.pid for p in psutil.Process().children(recursive=True)}


def _lines(tmp_path, n: int = 60_000):
    path = tmp_path / "lines.txt"
    # ~2.5 MB: Beam's ReadFromText splits it into two ranges (its chunk is 1000 * sqrt(size) bytes)
    path.write_text("".join(f"{i:08d} {'x' * 32}\n" for i in range(n)))
    return str(path), n


def _word_lengths(p, path):
    return (p | beam.io.ReadFromText(path) | beam.Map(lambda line: (int(line[:8]) % 7, len(line)))
            | beam.CombinePerKey(sum))


def test_bundles_run_in_worker_processes_with_the_direct_runners_results(tmp_path):
    path, n = _lines(tmp_path)
    expected = [(k, sum(41 for i in range(n) if i % 7 == k)) for k in range(7)]
    with beam.Pipeline(runner="DirectRunner") as p:
        assert_that(_word_lengths(p, path), equal_to(expected))
    before = _children()
    p = beam.Pipeline(runner=JetbenchRunner(sdk_workers=2))
    assert_that(_word_lengths(p, path), equal_to(expected))
    result = p.run()
    assert result.wait_until_finish() == PipelineState.DONE
    assert result.plan.workers is not None and result.plan.workers.started == 2
    # the stage reading the file's ranges: both instances ran bundles (one range each)
    reading = [v.name for v in result.plan.dag.vertices if "ReadFromText" in v.name and "Process" in v.name]
    assert reading, result.plan.explain()
    bundles = [t.processor.bundles for t in result.job.tasklets if t.vertex_name == reading[0]]
    assert len(bundles) == 2 and all(b > 0 for b in bundles), bundles
    assert _children() - before == set()  # the worker processes are gone with the job
    assert result.job.live_threads() == []


def test_a_failing_bundle_in_a_worker_process_fails_the_job_and_leaves_no_process():
    before = _children()
    with pytest.raises(JobError) as failure, beam.Pipeline(runner=JetbenchRunner(sdk_workers=1)) as p:
        _ = p | beam.Create([1, 2, 0]) | "Invert" >> beam.Map(lambda x: 1 / x)
    assert "Invert" in str(failure.value.__cause__) and "ZeroDivisionError" in str(failure.value.__cause__)
    assert _children() - before == set()


def test_bad_worker_settings_are_refused_before_running():
    before = _children()
    with pytest.raises(BeamRunnerError, match="sdk_workers must be an int >= 0"):
        beam.Pipeline(runner=JetbenchRunner(sdk_workers=-1)).run()
    with pytest.raises(BeamRunnerError, match="cannot be combined with a processing guarantee"):
        beam.Pipeline(runner=JetbenchRunner(sdk_workers=2, processing_guarantee="exactly_once")).run()
    assert _children() - before == set()
