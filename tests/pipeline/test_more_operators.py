"""Jet's operators added to the Pipeline API with issue 33: the service filter and flat_map, a
Core API processor as a stage (custom_transform), and how they plan."""

from __future__ import annotations

import pytest

from jetbench import Pipeline, run, sinks, sources
from jetbench.core.processor import Processor
from jetbench.pipeline.errors import PipelineError
from jetbench.processors.map_using_service import MapUsingServiceP, map_using_service
from jetbench.testing import verify_processor


class Stock:
    closed = 0

    def __init__(self):
        self.table = {"tea": 3, "pen": 0, "ink": 2}

    def close(self):
        Stock.closed += 1


def test_filter_and_flat_map_using_service_on_timestamped_items():
    verify_processor(map_using_service(Stock, lambda s, x: s.table[x] > 0, timestamped=True, mode="filter"),
                     input=[(1, "tea"), (2, "pen"), (3, "ink")], expected=[(1, "tea"), (3, "ink")])
    verify_processor(map_using_service(Stock, lambda s, x: [x] * s.table[x], mode="flat_map"),
                     input=["tea", "pen", "ink"], expected=["tea"] * 3 + ["ink"] * 2)


def test_service_stages_in_a_pipeline_close_their_services():
    Stock.closed = 0
    p = Pipeline()
    words = p.read_from(sources.items(["tea", "pen", "ink", "tea"]))
    words.filter_using_service(Stock, lambda s, x: s.table[x] > 0).write_to(sinks.collect())
    assert sorted(run(p)) == ["ink", "tea", "tea"]
    assert Stock.closed >= 1
    q = Pipeline()
    q.read_from(sources.items(["ink"])).flat_map_using_service(Stock, lambda s, x: range(s.table[x])) \
        .write_to(sinks.collect())
    assert run(q) == [0, 1]
    explained = q.to_dag().vertices
    assert any(isinstance(v.supplier, type(map_using_service(Stock, len))) and v.supplier.mode == "flat_map"
               for v in explained)
    assert MapUsingServiceP in {getattr(v.supplier, "processor", None) for v in explained}


class Double(Processor):
    def process(self, ordinal, inbox):
        while len(inbox) and self.outbox.offer(inbox.peek() * 2):
            inbox.remove()


def test_custom_transform_runs_a_processor_class_as_a_stage():
    p = Pipeline()
    stage = p.read_from(sources.items([1, 2, 3])).custom_transform("double", Double)
    assert stage.name == "double"
    stage.map(lambda x: x + 1).write_to(sinks.collect())
    assert sorted(run(p)) == [3, 5, 7]
    with pytest.raises(PipelineError, match="custom_transform needs a callable"):
        p.read_from(sources.items([1])).custom_transform("x", 42)
    with pytest.raises(PipelineError, match="needs a stage name"):
        p.read_from(sources.items([1])).custom_transform("", Double)
