"""A Core API processor in a pipeline: Jet's ``customTransform(name, supplier)``.

Any vertex supplier (a `Processor` subclass, a `ProcessorSupplier`, any zero-argument callable
making a processor) becomes a stage: one vertex of that name behind a unicast edge. Its
processor gets the stage's items as they are (``(ts, item)`` pairs when the stage is
timestamped, with the watermarks) and what it emits is the next stage's items, taken to be
timestamped as its input was. In the DAG builder such a vertex is a "processor class" vertex
(a `Processor` subclass) or, read back from code, a custom one.

>>> from jetbench import Pipeline, run, sinks, sources
>>> from jetbench.core.processor import Processor
>>> class Shout(Processor):
...     "Emits each word upper-cased, leaving in the inbox what the outbox refuses."
...     def process(self, ordinal, inbox):
...         while len(inbox) and self.outbox.offer(inbox.peek().upper()):
...             inbox.remove()
>>> p = Pipeline()
>>> _ = p.read_from(sources.items(["tea", "pen"])).custom_transform("shout", Shout).write_to(sinks.collect())
>>> sorted(run(p))
['PEN', 'TEA']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from .planning import Output, Planner, PlanNode, StageSpec


@dataclass(frozen=True)
class CustomTransform(StageSpec):
    """``stage.custom_transform(name, supplier)``: a vertex of ``supplier``, items in and out
    as they are (see the module)."""

    supplier: Callable[[], Any]
    kind: ClassVar[str] = "custom_transform"

    def plan(self, planner: Planner, node: PlanNode) -> None:
        (up,) = node.upstream
        timestamped = planner.output(up).timestamped
        vertex = planner.vertex(node.name, self.supplier, node.local_parallelism)
        planner.connect(up, vertex)
        planner.produce(node, Output(vertex, timestamped))
