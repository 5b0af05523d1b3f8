"""The pipeline graph: one `Node` per stage, holding the stage's typed form and the nodes it
reads from; what `Pipeline` builds and the planner plans."""

from __future__ import annotations

from dataclasses import dataclass

from ..processors.planning import StageSpec


@dataclass(eq=False)
class Node:
    """One stage in the pipeline graph: its typed form ``spec`` (what the user's call gave, and
    its planning rule), its name and the nodes it reads from (earlier in ``Pipeline.nodes``)."""

    spec: StageSpec
    name: str
    upstream: list[Node]
    local_parallelism: int | None = None
    timestamped: bool = False  # items leaving this node are (ts, item) tuples
    streaming: bool = False  # fed by an unbounded source

    @property
    def kind(self) -> str:
        return self.spec.kind

    def __repr__(self) -> str:
        return f"Node({self.kind}, {self.name!r})"
