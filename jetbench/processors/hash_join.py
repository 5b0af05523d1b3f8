"""The hash join: each probe item against a broadcast build side loaded first.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from ..core.dag import Routing
from ..core.inbox import Inbox
from .emitter import EmittingProcessor
from .kind_params import KindParams, choice, code, flag
from .planning import Output, Planner, PlanNode, StageSpec
from .snapshotting import instance_key, own_values

JOIN_KINDS = ("inner", "left")


class HashJoinP(EmittingProcessor):
    """Hash join: ordinal 1 is the build side, ordinal 0 the probe side.

    The build side must arrive first (give its edge a lower priority value, e.g.
    ``Edge.from_(right, 0).to(join, 1).broadcast().priority(-1)``) and, broadcast, every
    instance holds all of it: a dict ``right_key(right) -> [right items]``. Each probe item
    then gives ``(left, right)`` per match; ``how="left"`` also gives ``(left, None)`` for a
    probe item without match. With ``timestamped`` probe items are ``(ts, left)`` and results
    ``(ts, (left, right))``.

    Snapshots: the results of probe items taken before the barrier go out first (a probe item
    is never held: it stays in the inbox until its results are in the emitter); then each
    instance saves its table under a broadcast key. A restored instance takes its own table (at
    another parallelism, an old instance's table: the build side is broadcast, so every
    instance held all of it). With a processing guarantee the job takes its first snapshot
    once the build side has completed, as Jet does for inputs of different priorities.
    """

    snapshot_support: ClassVar[str] = "supported"

    def __init__(
        self,
        left_key: Callable[[Any], Hashable],
        right_key: Callable[[Any], Hashable],
        how: str = "inner",
        timestamped: bool = False,
    ):
        self.left_key = left_key
        self.right_key = right_key
        self.how = how
        self.timestamped = timestamped
        self.table: dict[Hashable, list[Any]] = {}
        self._ratio = 1.0  # observed results per probe item, to size input batches

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if ordinal == 1:
            self._build(inbox.take())
        else:
            self._probe(inbox)

    def _build(self, items: list[Any]) -> None:
        table, key = self.table, self.right_key
        for right in items:
            k = key(right)
            matches = table.get(k)
            if matches is None:
                table[k] = [right]
            else:
                matches.append(right)

    def _probe(self, inbox: Inbox) -> None:
        emitter = self._emitter
        room = emitter.free_room()
        if room <= 0:
            return
        batch = inbox.take(max(1, int(room / self._ratio)))
        get, key = self.table.get, self.left_key
        miss = [None] if self.how == "left" else ()
        out: list[Any]
        if self.timestamped:
            out = [(ts, (left, right)) for ts, left in batch for right in get(key(left)) or miss]
        else:
            out = [(left, right) for left in batch for right in get(key(left)) or miss]
        self._ratio = max(1.0, 0.5 * self._ratio + 0.5 * len(out) / len(batch))
        if out:
            emitter.emit(out)

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():
            return False
        return self.outbox.offer_to_snapshot(instance_key("HashJoinP", self.context), self.table)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        mine, every, _ = own_values(inbox, "HashJoinP", self.context)
        if mine or every:
            self.table = (mine or every)[0]


@dataclass(frozen=True, eq=False, repr=False)
class HashJoin(KindParams, StageSpec):
    """The hash join's parameters, its vertex supplier (``hash_join``) and its pipeline stage
    (``stage.hash_join(other, left_key, right_key, how)``): probe items (input 0) against a
    build side (input 1).

    Planning: the probe side (this stage) goes to input 0 as it is; the build side (``other``)
    is broadcast to input 1 at a higher priority, so it is loaded before any probe item; the
    plan sets ``timestamped`` as the probe side's items are.

    >>> hash_join(len, abs, how="left")
    hash_join(how='left')
    >>> hash_join(len, abs, how="outer")
    Traceback (most recent call last):
        ...
    jetbench.processors.kind_params.KindParamError: hash_join: how must be one of ('inner', 'left'), got 'outer'
    """

    left_key: Callable[[Any], Hashable] = code("x", help="key of a probe item (input 0)")
    right_key: Callable[[Any], Hashable] = code("x", help="key of a build item (input 1)")
    how: str = choice(JOIN_KINDS, "inner", help="left: also (item, None) without match")
    timestamped: bool = flag(help="probe items are (ts, item) pairs")
    processor = HashJoinP
    function = "hash_join"
    kind: ClassVar[str] = "hash_join"

    def describe(self) -> str:
        return f"hash_join(how={self.how!r})"

    def plan(self, planner: Planner, node: PlanNode) -> None:
        left, right = node.upstream
        timestamped = planner.output(left).timestamped
        vertex = planner.vertex(node.name, replace(self, timestamped=timestamped), node.local_parallelism)
        planner.connect(left, vertex, ordinal=0)
        planner.connect(right, vertex, ordinal=1, routing=Routing.BROADCAST, priority=-1, plain=True)
        planner.produce(node, Output(vertex, timestamped))


#: the hash join's vertex supplier (its declaration, see `HashJoin`)
hash_join = HashJoin
#: the hash join as a pipeline stage (``stage.apply(HashJoinSpec(left_key, right_key))``)
HashJoinSpec = HashJoin


# -- in the DAG builder ---------------------------------------------------------------------------


def _check(v: dict[str, Any], inbound: list[dict[str, Any]], outbound: list[dict[str, Any]]) -> list[tuple[str, str]]:
    found = []
    probe = [e for e in inbound if e["target_ordinal"] == 0]
    build = [e for e in inbound if e["target_ordinal"] == 1]
    for e in build:
        if e["routing"] != "broadcast" and v["parallelism"] != 1:
            found.append(("the build side (input 1) should be broadcast: every instance needs all of it", "warning"))
        if any(isinstance(p["priority"], int) and isinstance(e["priority"], int) and e["priority"] >= p["priority"]
               for p in probe):
            found.append(("the build side (input 1) should have a lower priority value than the probe side "
                          "(input 0), so it is loaded first", "warning"))
    return found


def _edge_defaults(p: dict[str, Any], ordinal: int) -> dict[str, Any]:
    return {"routing": "broadcast", "priority": -1} if ordinal == 1 else {}


BUILDER_KINDS = (
    HashJoin.builder_kind(id="hash_join", label="hash join", category="join", inputs=True, outputs=True,
                          description="emits (probe item, build item) per key match; the build side is loaded first",
                          in_ports=("probe", "build"), edge_defaults=_edge_defaults, check=_check),
)
