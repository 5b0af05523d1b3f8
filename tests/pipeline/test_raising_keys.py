"""A key function that raises in a co-aggregation or a hash join with join clauses fails the job
with an error that names the stage and says what the function raised."""

from __future__ import annotations

import pytest

from jetbench import Pipeline, aggregate, run, sinks, sources
from jetbench.core.errors import JobError
from jetbench.pipeline import JoinClause


def boom(x):
    raise ValueError(f"no key for {x!r}")


def co_aggregated(a, b):
    return a.group_by(abs).aggregate2(aggregate.counting(), b.group_by(boom), aggregate.counting(), name="joined")


def hash_joined(a, b):
    return a.hash_join2(b, JoinClause.on_keys(abs, abs), b, JoinClause.on_keys(abs, boom), name="joined")


@pytest.mark.parametrize("operator", [co_aggregated, hash_joined])
def test_a_key_function_that_raises_fails_the_job_naming_the_stage(operator):
    p = Pipeline()
    operator(p.read_from(sources.items([1, 2])), p.read_from(sources.items([3]))).write_to(sinks.collect())
    with pytest.raises(JobError) as info:
        run(p)
    assert "joined" in str(info.value) and "no key for 3" in str(info.value)
