"""Hash joins with Jet's JoinClause (hashJoin2, innerHashJoin, hashJoinBuilder): `MultiHashJoinP`
in every `verify_processor` mode (snapshots included) against a plain Python model on random
inputs, 1 to 3 build sides, left outer and inner, with projections and map_to_output; timestamped
probe items; `JoinClause` and the declaration's checks; the builder's kind."""

from __future__ import annotations

import importlib
import operator

import pytest
from hash_join_model import hash_join_model
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from jetbench import JetbenchError, Watermark
from jetbench.processors.hash_join import JoinClause, MultiHashJoin, MultiHashJoinP, multi_hash_join
from jetbench.processors.kind_params import KindParamError
from jetbench.testing import verify_processor

SETTINGS = settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])

first = operator.itemgetter(0)
second = operator.itemgetter(1)


def supplier(clauses, how, map_to_output=None):
    c1, *rest = clauses
    c2 = rest.pop(0) if rest else None
    return multi_hash_join(c1.left_key, c1.right_key, c1.projection, c2 and c2.left_key, c2 and c2.right_key,
                           c2 and c2.projection, how=how, more=tuple(rest), map_to_output=map_to_output)


def keep_odd_sums(left, *matches):
    """A map_to_output that drops some results (None) and reshapes the others."""
    total = left[1] + sum(m[1] for m in matches if m is not None)
    return None if total % 2 == 0 else (left[0], total)


CLAUSES = [
    JoinClause.on_keys(first, first),
    JoinClause.on_keys(second, first).projecting(lambda r: (r[0], r[1] * 10)),
    JoinClause.on_keys(lambda x: x[0] % 2, lambda r: r[0] % 2),
]
pairs = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), max_size=8)


@SETTINGS
@given(data=st.data(), n=st.integers(1, 3), how=st.sampled_from(["left", "inner"]), mapped=st.booleans())
def test_the_join_equals_the_model_in_every_mode(data, n, how, mapped):
    probe = data.draw(pairs)
    builds = [data.draw(pairs) for _ in range(n)]
    clauses = CLAUSES[:n]
    fn = keep_odd_sums if mapped else None
    verify_processor(supplier(clauses, how, fn), inputs=[probe, *builds], priorities=[0] + [-1] * n,
                     expected=hash_join_model(probe, builds, clauses, how, fn))


def test_timestamped_probe_items_keep_their_timestamps_and_watermarks_pass():
    people = [(1, "ann"), (3, "bob")]
    prices = [("tea", 4), ("tea", 5)]
    join = multi_hash_join(second, first, left_key2=first, right_key2=first, projection2=second, timestamped=True)
    verify_processor(join, inputs=[[(10, ("tea", 1)), Watermark(10), (20, ("pen", 3))], people, prices],
                     priorities=[0, -1, -1],
                     expected=[(10, (("tea", 1), (1, "ann"), 4)), (10, (("tea", 1), (1, "ann"), 5)), Watermark(10),
                               (20, (("pen", 3), (3, "bob"), None))])


def test_the_processor_of_one_clause_is_the_hash_join_with_a_projection():
    join = multi_hash_join(first, first, second, how="inner")
    assert isinstance(join(), MultiHashJoinP) and len(join().tables) == 1
    verify_processor(join, inputs=[[("a", 1), ("b", 2)], [("a", "x"), ("a", "y")]], priorities=[0, -1],
                     expected=[(("a", 1), "x"), (("a", 1), "y")])


def test_join_clause():
    clause = JoinClause.on_keys(first, second)
    assert clause.project("r") == "r" and clause.projecting(str.upper).project("r") == "R"
    entries = JoinClause.join_map_entries(len)
    assert entries.right_key(("k", "v")) == "k" and entries.project(("k", "v")) == "v"
    with pytest.raises(KindParamError, match="JoinClause: left_key must be callable, got None"):
        JoinClause.on_keys(None, first)
    with pytest.raises(KindParamError, match="JoinClause: projection must be callable, got 'x'"):
        clause.projecting("x")


@pytest.mark.parametrize("args, kwargs, message", [
    ((first, first), {"how": "outer"}, "multi_hash_join: how must be one of ('inner', 'left'), got 'outer'"),
    ((first, first, None, first), {}, "left_key2 and right_key2 must both be functions (two build sides) or both be "
                                      "None (one)"),
    ((first, first), {"more": (JoinClause(first, first),)}, "projection2 and more need build side 2"),
    ((first, first, None, first, first), {"more": (first,)}, "more must be a tuple of JoinClause"),
    ((first, first), {"map_to_output": lambda x, y, z: x}, "map_to_output must take the item and a match of each of "
                                                           "the 1 build sides (2 arguments): <lambda> takes 3"),
    ((first, first), {"map_to_output": 5}, "map_to_output must be callable or None, got 5"),
    ((first, 7), {}, "multi_hash_join: right_key1 must be callable, got 7"),
])
def test_arguments_are_checked_naming_the_parameter(args, kwargs, message):
    with pytest.raises(KindParamError) as info:
        multi_hash_join(*args, **kwargs)
    assert message in str(info.value) and isinstance(info.value, JetbenchError)


def test_the_builder_shows_two_build_sides():
    kind = next(k for k in importlib.import_module("jetbench.processors.hash_join").BUILDER_KINDS
                if k.id == "multi_hash_join")
    assert [p.name for p in kind.params] == ["left_key1", "right_key1", "projection1", "left_key2", "right_key2",
                                             "projection2", "how", "timestamped"]
    assert kind.in_ports == ("probe", "build 1", "build 2")
    built = kind.build({"how": "inner", "timestamped": False},
                       {"left_key1": first, "right_key1": second, "left_key2": None, "right_key2": None}, {})
    assert isinstance(built, MultiHashJoin) and len(built.clauses) == 1 and built.how == "inner"
    code, _ = kind.code({"how": "left", "timestamped": False}, {"left_key1": "a", "right_key1": "b",
                                                                "left_key2": "c", "right_key2": "d"})
    assert code == "multi_hash_join(a, b, left_key2=c, right_key2=d)"
