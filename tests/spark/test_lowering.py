"""The typed form of the built-in aggregations (`jetbench.spark.lowering`), without Spark: which
operations lower, which pairs fit Spark's types, and that an accumulator survives its typed
columns unchanged."""

from __future__ import annotations

import pickle
from decimal import Decimal
from enum import IntEnum

import pyarrow as pa
import pytest

from jetbench import aggregate
from jetbench.processors.aggregate_operation import FACTORIES, AggregateOperation
from jetbench.spark.lowering import TypedAggregation, ddl, encode_key, lower


class Level(IntEnum):
    LOW = 1


#: the library's operations: each one lowers (a typed form) or says why not; a factory missing
#: here fails the walk (add it when you add one)
LOWERS = {
    "counting": aggregate.counting(),
    "summing": aggregate.summing(len),
    "averaging": aggregate.averaging(),
    "min_by": aggregate.min_by(abs),
    "max_by": aggregate.max_by(),
    "to_list": aggregate.to_list(),
    "to_set": aggregate.to_set(),
    "all_of": aggregate.all_of(aggregate.counting(), aggregate.to_set()),
}
STAYS_IN_PYTHON = {"top_n": aggregate.top_n(2)}


def test_every_library_operation_lowers_or_says_why():
    assert set(LOWERS) | set(STAYS_IN_PYTHON) == set(FACTORIES)
    for name, op in LOWERS.items():
        assert not isinstance(lower(op), str), name
    for op in STAYS_IN_PYTHON.values():
        assert lower(op) == "top_n has no Spark form here"
    hand_made = AggregateOperation(create=lambda: 0, accumulate=lambda a, x: a + x)
    assert "hand-made" in lower(hand_made)
    assert lower(aggregate.all_of(aggregate.counting(), aggregate.top_n(1))) == "all_of: top_n has no Spark form here"


def test_keys_spark_groups_as_python_does():
    assert encode_key("fox") == ("fox", None) and encode_key(-(2**63)) == (None, -(2**63))
    # equal to an int or a str in Python, not in Spark's grouping; or not a Spark type at all
    for key in (True, 1.0, Level.LOW, 2**63, "\ud800", ("a", 1), None, b"raw"):
        assert encode_key(key) is None, key


def roundtrip(op, pairs):
    """Encode pairs as the producer does, decode them as Spark's one row per key would give them."""
    typed = TypedAggregation(5, lower(op))
    columns, rest = typed.encode_pairs(pairs, seq=100)
    names = [f.name for f in typed.fields()]
    assert names[:3] == ["c5_k_s", "c5_k_i", "c5_g"]
    batch = pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(columns, typed.fields(), strict=True)],
                                       names=names)
    form, decoded = typed.form, []
    for row in batch.to_pylist():
        ks, ki = row[names[0]], row[names[1]]
        values = [row[n] for n in names[3:]]
        decoded.append((ks if ks is not None else ki, form.decode(_as_aggregated(form, values))))
    return decoded, rest


def _as_aggregated(form, values):
    """What Spark's aggregation gives for a group of one row (sums as decimals, lists wrapped)."""
    name = form.name
    if name.startswith("sum(decimal"):
        return [Decimal(values[0]), *values[1:]]
    if name in ("min_by", "max_by"):
        return [values[2]]
    if name.startswith("sort_array"):
        return [[{"q": values[0], "x": values[1]}]]
    return values


@pytest.mark.parametrize(("op", "pairs"), [
    (aggregate.counting(), [("a", 3), (7, 1)]),
    (aggregate.summing(), [("a", 2**63 - 1), ("b", -5)]),
    (aggregate.averaging(), [("a", (10, 4))]),
    (aggregate.min_by(abs), [("a", -3), ("b", 2.5)]),
    (aggregate.max_by(), [(1, 7)]),
    (aggregate.to_list(), [("a", [1, "x", (2, 3)])]),
    (aggregate.to_set(), [("a", {"x", 1, -(2**63)})]),
])
def test_an_accumulator_survives_its_typed_columns(op, pairs):
    decoded, rest = roundtrip(op, pairs)
    assert decoded == pairs and rest == []
    assert [type(acc) for _, acc in decoded] == [type(acc) for _, acc in pairs]


@pytest.mark.parametrize(("op", "pair"), [
    (aggregate.counting(), (1.0, 3)),           # a float key (equal to 1 in Python)
    (aggregate.counting(), (True, 3)),          # a bool key
    (aggregate.counting(), (("a", 1), 3)),      # a tuple key
    (aggregate.summing(), ("a", 2.5)),          # a float sum: Spark would add in another order
    (aggregate.summing(), ("a", 2**63)),        # beyond 64 bits
    (aggregate.summing(), ("a", Decimal(2))),
    (aggregate.averaging(), ("a", (0.5, 2))),
    (aggregate.min_by(lambda x: x), ("a", float("nan"))),
    (aggregate.min_by(lambda x: x), ("a", 2**53 + 1)),  # not exact as a double
    (aggregate.min_by(lambda x: 1 // (x - 7)), ("a", 7)),  # fn raises: the combine vertex reports it
    (aggregate.max_by(lambda x: str(x) if x == 7 else x), ("a", 7)),  # not a number
    (aggregate.to_set(), ("a", {1, 2.5})),
    (aggregate.to_set(), ("a", {True})),
])
def test_a_pair_that_does_not_fit_keeps_the_python_path(op, pair):
    decoded, rest = roundtrip(op, [pair, ("ok", _fitting(op))])
    assert rest == [pair]
    assert [k for k, _ in decoded] == ["ok"]


def _fitting(op):
    return {"counting": 1, "summing": 1, "averaging": (1, 1), "min_by": 1, "max_by": 1, "to_set": {1}}[op.recipe[0]]


def test_min_by_orders_minus_zero_as_zero_and_ties_by_order():
    typed = TypedAggregation(0, lower(aggregate.min_by(lambda x: x)))
    columns, _ = typed.encode_pairs([("a", -0.0), ("b", 0.0)], seq=7)
    values, seqs = columns[3], columns[4]
    assert values == [0.0, 0.0] and str(values[0]) == "0.0" and seqs == [7, 8]
    assert pickle.loads(columns[5][0]) == -0.0  # the item itself is kept as it is


def test_all_of_spans_the_columns_of_its_parts():
    op = aggregate.all_of(aggregate.counting(), aggregate.averaging(), aggregate.to_set())
    decoded, rest = roundtrip_all_of(op, [("k", (2, (6, 2), {"a"}))])
    assert decoded == [("k", (2, (6, 2), {"a"}))] and rest == []
    _, rest = roundtrip_all_of(op, [("k", (2, (0.5, 2), {"a"}))])
    assert len(rest) == 1  # one part that does not fit sends the whole pair the Python way
    assert ddl(TypedAggregation(3, lower(op)).fields()) == (
        ", c3_k_s string, c3_k_i bigint, c3_g bigint, c3_a_0_n bigint, c3_a_1_s bigint, c3_a_1_c bigint, "
        "c3_a_2_s array<string>, c3_a_2_i array<bigint>")


def roundtrip_all_of(op, pairs):
    typed = TypedAggregation(0, lower(op))
    columns, rest = typed.encode_pairs(pairs, seq=0)
    decoded = []
    for row in zip(*columns, strict=True):
        ks, ki, _g, n, s, c, strs, ints = row
        decoded.append((ks if ks is not None else ki, typed.form.decode([n, Decimal(s), c, strs, ints])))
    return decoded, rest
