"""A kind without a Stage method of its own joins a pipeline through ``Stage.apply(spec)``: one
module (processor, supplier function, spec) is all a new operator needs."""

from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from jetbench import Pipeline, PipelineError, run, sinks, sources
from jetbench.core.inbox import Inbox
from jetbench.processors.emitter import EmittingProcessor
from jetbench.processors.planning import Planner, PlanNode, StageSpec, plan_unary
from jetbench.processors.supplier import ProcessorSupplier


class DistinctP(EmittingProcessor):
    """Emits each item the first time this instance sees it."""

    def __init__(self) -> None:
        self.seen: set[Any] = set()

    def process(self, ordinal: int, inbox: Inbox) -> None:
        fresh = [x for x in inbox.take() if not (x in self.seen or self.seen.add(x))]
        if fresh:
            self._emitter.emit(fresh)


@dataclass(frozen=True)
class DistinctSpec(StageSpec):
    kind: ClassVar[str] = "distinct"

    def plan(self, planner: Planner, node: PlanNode) -> None:
        plan_unary(planner, node, lambda timestamped: ProcessorSupplier(DistinctP, label="distinct"))


def test_a_spec_applied_to_a_stage_plans_and_runs():
    p = Pipeline()
    p.read_from(sources.items([3, 1, 3, 2, 1])).set_local_parallelism(1) \
        .apply(DistinctSpec(), name="distinct").set_local_parallelism(1).write_to(sinks.collect())
    assert "distinct" in p.explain()
    assert run(p) == [3, 1, 2]


def test_apply_names_what_it_refuses():
    p, q = Pipeline(), Pipeline()
    stage = p.read_from(sources.items([1]))
    with pytest.raises(PipelineError, match="apply\\(\\) takes a StageSpec, got 42"):
        stage.apply(42)
    with pytest.raises(PipelineError, match="belong to different pipelines"):
        stage.apply(DistinctSpec(), q.read_from(sources.items([2])))
    sink = stage.write_to(sinks.collect())
    with pytest.raises(PipelineError, match="is a sink: nothing can follow it"):
        sink.apply(DistinctSpec())
