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
from jetbench.spark.lowering import TypedAggregation, ddl, decode_key, encode_key, lower


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
    assert encode_key("fox") == ("fox", None, None, None, None, None)
    assert encode_key(-(2**63)) == (None, -(2**63), None, None, None, None)
    assert encode_key(True) == (None, None, None, True, None, None)  # a column of its own: never grouped with 1
    assert encode_key(1.0) == (None, None, 1.0, None, None, None)
    assert encode_key(b"raw") == (None, None, None, None, b"raw", None)
    assert encode_key(None) == (None,) * 6 and encode_key(()) == (None,) * 5 + (b"",)
    assert encode_key(("a", 1, None)) == (None,) * 5 + (b"s\x00\x00\x00\x01a" + b"i" + (1).to_bytes(8, "big") + b"n",)
    # not a Spark type, or Spark would group them otherwise than Python (NaN, -0.0 given back as 0.0)
    for key in (Level.LOW, 2**63, "\ud800", float("nan"), -0.0, ("a", ("b",)), ("a", float("nan")), ("a", Level.LOW),
                frozenset({1}), 1j):
        assert encode_key(key) is None, key


@pytest.mark.parametrize("key", [None, "fox", 7, -(2**63), 2.5, float("inf"), 0.0, True, False, b"", b"\x00raw", (),
                                 ("a", 1, 2.5, True, b"y", None), (None,), (False, 0, 0.0, "", b"")])
def test_a_key_survives_its_columns(key):
    from jetbench.spark.lowering import KEY_FIELDS

    through_arrow = [pa.array([value], t).to_pylist()[0] for value, (_, t) in zip(encode_key(key), KEY_FIELDS,
                                                                                   strict=True)]
    decoded = decode_key(through_arrow)
    assert decode_key(encode_key(key)) == decoded
    assert decoded == key and type(decoded) is type(key)
    if isinstance(key, tuple):
        assert [type(x) for x in decoded] == [type(x) for x in key]


def roundtrip(op, pairs):
    """Encode pairs as the producer does, decode them as Spark's one row per key would give them."""
    typed = TypedAggregation(5, lower(op))
    columns, rest = typed.encode_pairs(pairs, seq=100)
    names = [f.name for f in typed.fields()]
    assert names[:7] == ["c5_k_s", "c5_k_i", "c5_k_f", "c5_k_b", "c5_k_y", "c5_k_t", "c5_g"]
    batch = pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(columns, typed.fields(), strict=True)],
                                       names=names)
    form, decoded = typed.form, []
    for row in batch.to_pylist():
        values = [row[n] for n in names[7:]]
        decoded.append((decode_key([row[n] for n in names[:6]]), form.decode(_as_aggregated(form, values))))
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
    (aggregate.counting(), (float("nan"), 3)),  # a NaN key (Spark groups NaNs together)
    (aggregate.counting(), (-0.0, 3)),          # Spark would give it back as 0.0
    (aggregate.counting(), (("a", ("b",)), 3)),  # a nested tuple key
    (aggregate.counting(), (Level.LOW, 3)),     # an int subclass
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
    values, seqs = columns[7], columns[8]
    assert values == [0.0, 0.0] and str(values[0]) == "0.0" and seqs == [7, 8]
    assert pickle.loads(columns[9][0]) == -0.0  # the item itself is kept as it is


def test_all_of_spans_the_columns_of_its_parts():
    op = aggregate.all_of(aggregate.counting(), aggregate.averaging(), aggregate.to_set())
    decoded, rest = roundtrip_all_of(op, [("k", (2, (6, 2), {"a"}))])
    assert decoded == [("k", (2, (6, 2), {"a"}))] and rest == []
    _, rest = roundtrip_all_of(op, [("k", (2, (0.5, 2), {"a"}))])
    assert len(rest) == 1  # one part that does not fit sends the whole pair the Python way
    assert ddl(TypedAggregation(3, lower(op)).fields()) == (
        ", c3_k_s string, c3_k_i bigint, c3_k_f double, c3_k_b boolean, c3_k_y binary, "
        "c3_k_t binary, c3_g bigint, c3_a_0_n bigint, c3_a_1_s bigint, c3_a_1_c bigint, "
        "c3_a_2_s array<string>, c3_a_2_i array<bigint>")


def roundtrip_all_of(op, pairs):
    typed = TypedAggregation(0, lower(op))
    columns, rest = typed.encode_pairs(pairs, seq=0)
    decoded = []
    for row in zip(*columns, strict=True):
        n, s, c, strs, ints = row[7:]
        decoded.append((decode_key(row[:6]), typed.form.decode([n, Decimal(s), c, strs, ints])))
    return decoded, rest


# -- windows (`jetbench.spark.window_lowering`) -----------------------------------------------------


def typed_window(op=None, size=100, slide=50):
    from jetbench.spark.window_lowering import TypedWindow

    op = op or aggregate.counting()
    return TypedWindow(2, lower(op), True, op, None, size, slide, "windows")


def test_a_frame_crosses_typed_when_spark_holds_its_start_exactly():
    typed = typed_window()
    triples = [(100, "a", 3), (100.0, "b", 1), (-50, None, 2), (150.5, "a", 1), (2**51, "a", 1), ("x", "a", 1),
               (0, frozenset(), 1), (0, "a", 2.5)]
    columns, rest = typed.encode_pairs(triples, seq=0)
    names = [f.name for f in typed.fields()]
    assert names[-1] == "c2_fs" and len(columns) == len(names)
    assert columns[-1] == [100, 100, -50] and all(type(fs) is int for fs in columns[-1])
    assert [decode_key(row[:6]) for row in zip(*columns, strict=True)] == ["a", "b", None]
    assert rest == triples[3:]  # a fractional or out-of-range frame, a key or an accumulator Spark cannot hold


def test_pickled_frames_are_put_in_every_window_that_holds_them():
    typed = typed_window(size=100, slide=25)
    blob = pickle.dumps([(-25, "a", 3), (50.0, frozenset(), 1)])
    row = [None, None, *([None] * 6), 5, blob, None]  # start, end, the key columns, g, data, the count
    batch = pa.RecordBatch.from_pylist([dict(zip([f"c{i}" for i in range(len(row))], row, strict=True))])
    windows = typed.decode(batch)
    assert windows == [(s, s + 100, "a", 3) for s in (-100, -75, -50, -25)] + \
        [(s, s + 100, frozenset(), 1) for s in (-25, 0, 25, 50)]
    assert all(type(start) is int and type(end) is int for start, end, _, _ in windows)


def test_the_window_vertex_combines_and_emits_as_sliding_window_p_does():
    from jetbench.core.outbox import Outbox
    from jetbench.core.processor import ProcessorContext
    from jetbench.processors.window_definition import WindowResult
    from jetbench.spark.window_lowering import WindowCombineP

    op = aggregate.to_list()
    p = WindowCombineP(op)
    box = Outbox(ordinal_count=1)
    p.init(box, ProcessorContext("windows", 0, 0, 1, 1))
    shared = [1]  # a pickled frame's accumulator, in two windows: each gets a copy
    from jetbench.core.inbox import Inbox

    p.process(0, Inbox([(50, 150, "a", shared), (0, 100, "a", shared), (0, 100, 1, [2]), (0, 100, 1.0, [3])]))
    assert p.complete()
    out = box.take_bucket(0)
    assert out == [(100, WindowResult(0, 100, "a", [1])), (100, WindowResult(0, 100, 1, [2, 3])),
                   (150, WindowResult(50, 150, "a", [1]))]
    assert shared == [1]


def test_frames_and_windows_go_out_through_a_small_outbox():
    """More results than the outbox holds: complete() goes on over several calls, losing none."""
    from jetbench.core.inbox import Inbox
    from jetbench.core.outbox import Outbox
    from jetbench.core.processor import ProcessorContext
    from jetbench.spark.window_lowering import FrameAccumulateP, WindowCombineP

    def drain(p, items):
        box = Outbox(ordinal_count=1, capacity=3)
        p.init(box, ProcessorContext("windows", 0, 0, 1, 1))
        p.process(0, Inbox(items))
        out, calls = [], 0
        while True:
            calls += 1
            done = p.complete()
            out += box.take_bucket(0)
            if done:
                return out, calls

    events = [(ts, ts % 4) for ts in range(0, 1000, 7)]  # spans frames: item by item
    frames, calls = drain(FrameAccumulateP(lambda x: x, aggregate.counting(), 100), events)
    assert calls > 1 and sum(n for _, _, n in frames) == len(events)
    assert sorted((fs, k) for fs, k, _ in frames) == sorted({(ts - ts % 100, k) for ts, k in events})
    windows, calls = drain(WindowCombineP(aggregate.counting()), [(fs, fs + 100, k, n) for fs, k, n in frames])
    assert calls > 1 and len(windows) == len(frames)
    assert [end for end, _ in windows] == sorted(end for end, _ in windows)


@pytest.mark.parametrize("key_fn", [None, str])
def test_a_batch_within_one_frame_is_folded_at_once(key_fn):
    from jetbench.core.inbox import Inbox
    from jetbench.core.outbox import Outbox
    from jetbench.core.processor import ProcessorContext
    from jetbench.spark.window_lowering import FrameAccumulateP

    op = aggregate.counting()
    p = FrameAccumulateP(key_fn, op, 100)
    assert p._batch is (op.accumulate_all if key_fn is None else op.accumulate_groups) is not None
    box = Outbox(ordinal_count=1)
    p.init(box, ProcessorContext("windows", 0, 0, 1, 1))
    p.process(0, Inbox([(ts, ts % 2) for ts in range(200, 300, 3)]))
    p.process(0, Inbox([(299.5, 1)]))
    assert p.complete()
    expected = {None: 35} if key_fn is None else {"0": 17, "1": 18}
    assert {k: n for fs, k, n in box.take_bucket(0) if fs == 200} == expected


def test_tuple_keys_have_equal_bytes_exactly_when_python_groups_them_alike():
    """A tuple key's column (binary) groups in Spark as Python does within each member's type:
    equal members give equal bytes, another type or value other bytes, and no tuple's bytes are
    another's prefix (lengths before str and bytes), so two different tuples never meet."""
    from jetbench.spark.lowering import tuple_bytes

    keys = [("a", 1), ("a", 1.0), ("a", True), ("a", b"a"), ("a", None), ("a", "1"), ("ab",), ("a", "b"), ("a",),
            (1, 2), (12,), (-1,), (0.0,), (0,), (False,), ("",), (b"",), (None,), (), ("a\x00",), ("é", 2**63 - 1)]
    blobs = [tuple_bytes(k) for k in keys]
    assert len(set(blobs)) == len(keys)
    assert tuple_bytes(("a", 1)) == tuple_bytes(("".join(["a"]), int("1")))  # equal values, other objects
    assert decode_key((None,) * 5 + (tuple_bytes(("é", 2**63 - 1)),)) == ("é", 2**63 - 1)


def _pair_by_pair(typed, pairs, seq):
    """`encode_pairs` as it goes without the columnar way: each pair's `encode_row`."""
    columns = [[] for _ in typed.fields()]
    rest = []
    for key, acc in pairs:
        row = typed.encode_row(key, acc, seq)
        if row is None:
            rest.append((key, acc))
            continue
        seq += 1
        for column, value in zip(columns, row, strict=True):
            column.append(value)
    return columns, rest


@pytest.mark.parametrize("pairs", [
    [("fox", 3), ("the", 1)],                   # all str: made at once
    [("é", 2), ("fox", 1)],                     # not ASCII, still UTF-8
    [("\ud800", 1), ("fox", 2)],                # a lone surrogate: pair by pair, that one pickled
    [(7, 1), (-(2**63), 2)],                    # all 64-bit ints
    [(2**63, 1), (1, 1)],                       # a huge int among them
    [(None, 4)],                                # a global aggregation
    [(True, 1), (1, 1)],                        # bool is not int here
    [("a", 1), (1, 1), (("t", 1), 2)],          # mixed keys
    [("a", 2**63), ("b", 1)],                   # a count Spark cannot hold
    [("a", 1.5), ("b", 1)],                     # a float accumulator
])
@pytest.mark.parametrize("op", [aggregate.counting(), aggregate.summing(), aggregate.averaging()])
def test_columns_made_at_once_equal_pair_by_pair(pairs, op):
    if op is not aggregate.counting():
        pairs = [(k, (a, 1) if op.recipe[0] == "averaging" else a) for k, a in pairs]
    typed = TypedAggregation(5, lower(op))
    assert typed.encode_pairs(list(pairs), seq=10) == _pair_by_pair(typed, pairs, 10)


def test_counts_decoded_at_once_equal_row_by_row():
    """`TypedAggregation.decode` of Spark's summed counts: one scalar key column and no pickled
    rows take the columnar way; the pairs are those of the row by row way."""
    typed = TypedAggregation(5, lower(aggregate.counting()))
    names = [*typed.group_names(), "data", *[f.name for f in typed.fields()][7:]]
    types = {f.name: f.type for f in typed.fields()} | {"data": pa.binary()}

    def batch(keys, counts, data=None):
        columns = {name: [None] * len(keys) for name in names}
        for key, i in zip(keys, range(len(keys)), strict=True):
            for name, value in zip(names[:6], encode_key(key), strict=True):
                columns[name][i] = value
        columns["c5_g"] = [0] * len(keys)
        columns["c5_a_n"] = counts
        if data is not None:
            columns["data"] = data
        return pa.RecordBatch.from_arrays([pa.array(columns[n], types[n]) for n in names], names=names)

    def row_by_row(b):
        out = []
        for row in zip(*[c.to_pylist() for c in b.columns], strict=True):
            out += pickle.loads(row[7]) if row[7] is not None else [(decode_key(row[:6]), int(row[8]))]
        return out

    for b in (batch(["fox", "the"], [3, 1]), batch([7, -1], [2, 5]), batch([b"y"], [1]), batch(["a", 1], [1, 2]),
              batch([("t", 1)], [4]), batch([None], [9]),
              batch(["a", None], [1, None], [None, pickle.dumps([("z", 1.5)])])):
        assert typed.decode(b) == row_by_row(b)
    assert typed._decode_columns(batch(["fox", "the"], [3, 1])) == [("fox", 3), ("the", 1)]
    assert typed._decode_columns(batch(["a", 1], [1, 2])) is None  # two key columns: row by row
