"""The hash join: each probe item against broadcast build sides loaded first (one, or several
with Jet's `JoinClause`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from itertools import product
from typing import Any, ClassVar

from ..core.dag import Routing
from ..core.inbox import Inbox
from .builder_kind import Unreadable
from .emitter import EmittingProcessor
from .kind_params import KindParamError, KindParams, choice, code, flag, planned
from .planning import Output, Planner, PlanNode, StageSpec
from .snapshotting import instance_key, own_values

JOIN_KINDS = ("inner", "left")
Key = Callable[[Any], Hashable]


@dataclass(frozen=True)
class JoinClause:
    """How a probe item meets one build side: Jet's ``JoinClause``. ``left_key(item) ==
    right_key(build item)`` matches, and the probe item is joined with ``projection(build item)``
    (the build item itself by default).

    >>> clause = JoinClause.on_keys(len, str.lower).projecting(str.upper)
    >>> clause.left_key("abc"), clause.right_key("ABC"), clause.project("abc")
    (3, 'abc', 'ABC')
    >>> JoinClause.join_map_entries(len).project(("k", "v"))
    'v'
    >>> JoinClause.on_keys(len, 3)
    Traceback (most recent call last):
        ...
    jetbench.processors.kind_params.KindParamError: JoinClause: right_key must be callable, got 3
    """

    left_key: Key
    right_key: Key
    projection: Callable[[Any], Any] | None = None

    def __post_init__(self) -> None:
        for name in ("left_key", "right_key", "projection"):
            value = getattr(self, name)
            if not callable(value) and not (name == "projection" and value is None):
                raise KindParamError(f"JoinClause: {name} must be callable, got {value!r}")

    @classmethod
    def on_keys(cls, left_key: Key, right_key: Key) -> JoinClause:
        """Items match when ``left_key(item) == right_key(build item)`` (Jet's ``onKeys``)."""
        return cls(left_key, right_key)

    @classmethod
    def join_map_entries(cls, left_key: Key) -> JoinClause:
        """A build side of ``(key, value)`` pairs: ``left_key(item)`` meets the key and the item
        is joined with the value (Jet's ``joinMapEntries``)."""
        return cls(left_key, _entry_key, _entry_value)

    def projecting(self, projection: Callable[[Any], Any]) -> JoinClause:
        """This clause, joining ``projection(build item)`` (Jet's ``projecting``)."""
        return replace(self, projection=projection)

    def project(self, right: Any) -> Any:
        """What a build item is joined as."""
        return right if self.projection is None else self.projection(right)


def _entry_key(entry: tuple[Hashable, Any]) -> Hashable:
    return entry[0]


def _entry_value(entry: tuple[Hashable, Any]) -> Any:
    return entry[1]


class HashJoinP(EmittingProcessor):
    """Hash join: ordinal 0 is the probe side, ordinals 1..N the build sides.

    The build sides must arrive first (give their edges a lower priority value, e.g.
    ``Edge.from_(right, 0).to(join, 1).broadcast().priority(-1)``) and, broadcast, every
    instance holds all of them: per build side a dict ``right_key(right) -> [right items]``. With
    one build side each probe item then gives ``(left, right)`` per match; ``how="left"`` also
    gives ``(left, None)`` for a probe item without match. With ``timestamped`` probe items are
    ``(ts, left)`` and results ``(ts, (left, right))``. `MultiHashJoinP` is the same join with
    several build sides, each its own `JoinClause`.

    Snapshots: the results of probe items taken before the barrier go out first (a probe item
    is never held: it stays in the inbox until its results are in the emitter); then each
    instance saves its tables under a broadcast key. A restored instance takes its own tables (at
    another parallelism, an old instance's: the build sides are broadcast, so every instance held
    all of them). With a processing guarantee the job takes its first snapshot once the build
    sides have completed, as Jet does for inputs of different priorities.
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
        self.clauses: tuple[JoinClause, ...] = (JoinClause(left_key, right_key),)
        self.tables: list[dict[Hashable, list[Any]]] = [{}]
        self._ratio = 1.0  # observed results per probe item, to size input batches

    @property
    def table(self) -> dict[Hashable, list[Any]]:
        """The table of build side 1."""
        return self.tables[0]

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if ordinal >= 1:
            self._build(ordinal - 1, inbox.take())
        else:
            self._probe(inbox)

    def _build(self, side: int, items: list[Any]) -> None:
        table, clause = self.tables[side], self.clauses[side]
        key, project = clause.right_key, clause.projection
        for right in items:
            k = key(right)
            value = right if project is None else project(right)
            matches = table.get(k)
            if matches is None:
                table[k] = [value]
            else:
                matches.append(value)

    def _probe(self, inbox: Inbox) -> None:
        emitter = self._emitter
        room = emitter.free_room()
        if room <= 0:
            return
        batch = inbox.take(max(1, int(room / self._ratio)))
        out = self._joined(batch)
        self._ratio = max(1.0, 0.5 * self._ratio + 0.5 * len(out) / len(batch))
        if out:
            emitter.emit(out)

    def _joined(self, batch: list[Any]) -> list[Any]:
        """The results of a batch of probe items."""
        get, key = self.tables[0].get, self.left_key
        miss = [None] if self.how == "left" else ()
        if self.timestamped:
            return [(ts, (left, right)) for ts, left in batch for right in get(key(left)) or miss]
        return [(left, right) for left in batch for right in get(key(left)) or miss]

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():
            return False
        return self.outbox.offer_to_snapshot(instance_key("HashJoinP", self.context), self.tables)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        mine, every, _ = own_values(inbox, "HashJoinP", self.context)
        if mine or every:
            saved = (mine or every)[0]
            self.tables = [saved] if isinstance(saved, dict) else saved  # a dict: one table, as saved before


class MultiHashJoinP(HashJoinP):
    """The hash join of `HashJoinP` with build sides 1..N, each met by its `JoinClause`: each
    probe item gives ``(left, match 1, ..., match N)`` (or ``map_to_output(left, match 1, ...,
    match N)``, dropped when that is None) for every combination of its matches, one per build
    side; ``how="left"`` puts None for a build side without match, ``"inner"`` drops the item
    (Jet's ``hashJoin2``/``hashJoinBuilder`` and ``innerHashJoin``)."""

    def __init__(self, clauses: tuple[JoinClause, ...], how: str = "left", timestamped: bool = False,
                 map_to_output: Callable[..., Any] | None = None):
        super().__init__(clauses[0].left_key, clauses[0].right_key, how, timestamped)
        self.clauses = clauses
        self.tables = [{} for _ in clauses]
        self.map_to_output = map_to_output

    def _joined(self, batch: list[Any]) -> list[Any]:
        gets = [(table.get, clause.left_key) for table, clause in zip(self.tables, self.clauses, strict=True)]
        miss = [None] if self.how == "left" else []
        fn = self.map_to_output
        out: list[Any] = []
        for probe in batch:
            left = probe[1] if self.timestamped else probe
            combos = product(*(get(key(left)) or miss for get, key in gets))
            results = (((left, *c) for c in combos) if fn is None
                       else (r for r in (fn(left, *c) for c in combos) if r is not None))
            if self.timestamped:
                out.extend((probe[0], r) for r in results)
            else:
                out.extend(results)
        return out


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


@dataclass(frozen=True, eq=False, repr=False)
class MultiHashJoin(KindParams, StageSpec):
    """The parameters of a hash join with `JoinClause` s, its vertex supplier
    (``multi_hash_join``) and its pipeline stage (``stage.hash_join2``, ``inner_hash_join``,
    ``hash_join_builder``): probe items (input 0) against build sides 1 and 2 (``left_key2 =
    right_key2 = None``: build side 1 alone) and 3, 4, ... as ``more`` says (`JoinClause` s);
    ``map_to_output(item, match 1, ..., match N)`` makes the result (None: dropped), by default
    the tuple ``(item, match 1, ..., match N)``. Jet's ``hashJoin`` is left outer (None for a side
    without match); ``how="inner"`` drops an item a side has no match for.

    Planning: the probe side goes to input 0 as it is; each build side is broadcast to its input
    at a higher priority, so every build side is loaded before any probe item; the plan sets
    ``timestamped`` as the probe side's items are.

    >>> multi_hash_join(len, abs, left_key2=len, right_key2=abs, how="inner")
    multi_hash_join(2 build sides, how='inner')
    >>> multi_hash_join(len, abs, map_to_output=lambda x: x)
    Traceback (most recent call last):
        ...
    jetbench.processors.kind_params.KindParamError: multi_hash_join: map_to_output must take the item and a match of each of the 1 build sides (2 arguments): <lambda> takes 1
    """

    left_key1: Key = code("x", help="key of a probe item (input 0) for build side 1")
    right_key1: Key = code("x", help="key of an item of build side 1 (input 1)")
    projection1: Callable[[Any], Any] | None = code("", help="what a build item of side 1 is joined as (empty: itself)",
                                                   optional=True)
    left_key2: Key | None = code("x", help="key of a probe item for build side 2 (empty: no side 2)", optional=True)
    right_key2: Key | None = code("x", help="key of an item of build side 2 (input 2)", optional=True)
    projection2: Callable[[Any], Any] | None = code("", help="what a build item of side 2 is joined as (empty: itself)",
                                                   optional=True)
    how: str = choice(JOIN_KINDS, "left", help="inner: drop an item a build side has no match for")
    timestamped: bool = flag(help="probe items are (ts, item) pairs")
    more: tuple[JoinClause, ...] = planned(())
    map_to_output: Callable[..., Any] | None = planned(None)
    processor = MultiHashJoinP
    function = "multi_hash_join"
    kind: ClassVar[str] = "multi_hash_join"

    @property
    def clauses(self) -> tuple[JoinClause, ...]:
        first = JoinClause(self.left_key1, self.right_key1, self.projection1)
        if self.left_key2 is None or self.right_key2 is None:
            return (first, *self.more)
        return (first, JoinClause(self.left_key2, self.right_key2, self.projection2), *self.more)

    def check(self) -> None:
        if (self.left_key2 is None) != (self.right_key2 is None):
            raise KindParamError(f"{self.function}: left_key2 and right_key2 must both be functions (two build sides) "
                                 f"or both be None (one), got {self.left_key2!r} and {self.right_key2!r}")
        if self.left_key2 is None and (self.projection2 is not None or self.more):
            raise KindParamError(f"{self.function}: projection2 and more need build side 2 (left_key2, right_key2)")
        if not isinstance(self.more, tuple) or not all(isinstance(c, JoinClause) for c in self.more):
            raise KindParamError(f"{self.function}: more must be a tuple of JoinClause, got {self.more!r}")
        fn, sides = self.map_to_output, len(self.clauses)
        if fn is None:
            return
        if not callable(fn):
            raise KindParamError(f"{self.function}: map_to_output must be callable or None, got {fn!r}")
        try:
            inspect.signature(fn).bind(*range(sides + 1))
        except ValueError:  # no signature to check (some builtins)
            return
        except TypeError:
            params = inspect.signature(fn).parameters
            raise KindParamError(
                f"{self.function}: map_to_output must take the item and a match of each of the {sides} build sides "
                f"({sides + 1} arguments): {getattr(fn, '__name__', fn)} takes {len(params)}") from None

    def arguments(self) -> dict[str, Any]:
        return {"clauses": self.clauses, "how": self.how, "timestamped": self.timestamped,
                "map_to_output": self.map_to_output}

    def describe(self) -> str:
        n = len(self.clauses)
        return f"multi_hash_join({n} build side{'s' if n > 1 else ''}, how={self.how!r})"

    def plan(self, planner: Planner, node: PlanNode) -> None:
        left, *builds = node.upstream
        timestamped = planner.output(left).timestamped
        vertex = planner.vertex(node.name, replace(self, timestamped=timestamped), node.local_parallelism)
        planner.connect(left, vertex, ordinal=0)
        for ordinal, build in enumerate(builds, start=1):
            planner.connect(build, vertex, ordinal=ordinal, routing=Routing.BROADCAST, priority=-1, plain=True)
        planner.produce(node, Output(vertex, timestamped))

    @classmethod
    def read(cls, supplier: Any, reader: Any) -> dict[str, Any] | None:
        if isinstance(supplier, cls) and (supplier.more or supplier.map_to_output is not None):
            raise Unreadable("a hash join with more than two build sides or a map_to_output function (the palette's "
                             "multi_hash_join has two build sides and emits tuples)")
        return super().read(supplier, reader)


#: the vertex supplier of a hash join with join clauses (its declaration, see `MultiHashJoin`)
multi_hash_join = MultiHashJoin


# -- in the DAG builder ---------------------------------------------------------------------------


def _check(v: dict[str, Any], inbound: list[dict[str, Any]], outbound: list[dict[str, Any]]) -> list[tuple[str, str]]:
    found = []
    probe = [e for e in inbound if e["target_ordinal"] == 0]
    build = [e for e in inbound if e["target_ordinal"] >= 1]
    for e in build:
        side = f"the build side (input {e['target_ordinal']})"
        if e["routing"] != "broadcast" and v["parallelism"] != 1:
            found.append((f"{side} should be broadcast: every instance needs all of it", "warning"))
        if any(isinstance(p["priority"], int) and isinstance(e["priority"], int) and e["priority"] >= p["priority"]
               for p in probe):
            found.append((f"{side} should have a lower priority value than the probe side "
                          "(input 0), so it is loaded first", "warning"))
    return found


def _edge_defaults(p: dict[str, Any], ordinal: int) -> dict[str, Any]:
    return {"routing": "broadcast", "priority": -1} if ordinal >= 1 else {}


BUILDER_KINDS = (
    HashJoin.builder_kind(id="hash_join", label="hash join", category="join", inputs=True, outputs=True,
                          description="emits (probe item, build item) per key match; the build side is loaded first",
                          in_ports=("probe", "build"), edge_defaults=_edge_defaults, check=_check),
    MultiHashJoin.builder_kind(id="multi_hash_join", label="hash join (clauses)", category="join", inputs=True,
                               outputs=True, description="emits (probe item, match 1, match 2) per combination of "
                               "matches (None for a side without match, or dropped with how=inner); the build sides "
                               "are loaded first", in_ports=("probe", "build 1", "build 2"),
                               edge_defaults=_edge_defaults, check=_check),
)
