"""The keyed aggregation's restore (issue 16, restart time): into an empty instance the entries
become its groups in one dict build; a key saved by two instances is combined, and the
broadcast marker of an aggregation that had begun emitting is honoured, as on the per-entry path."""

from __future__ import annotations

from jetbench.core.inbox import Inbox
from jetbench.core.items import BroadcastKey
from jetbench.processors.aggregate_operation import counting, to_list
from jetbench.processors.aggregation import AccumulateByKeyP


def _restored(op, *batches):
    p = AccumulateByKeyP(lambda x: x, op)
    for batch in batches:
        p.restore_from_snapshot(Inbox(list(batch)))
    return p


def test_unique_keys_become_the_groups():
    entries = [(k, k + 1) for k in range(1000)]
    assert _restored(counting(), entries).groups == dict(entries)


def test_a_key_from_two_instances_is_combined():
    p = _restored(counting(), [("a", 2), ("b", 1), ("a", 3)])
    assert p.groups == {"a": 5, "b": 1}


def test_a_second_batch_combines_into_the_first():
    p = _restored(to_list(), [("a", [1]), ("b", [2])], [("a", [3])])
    assert p.groups == {"a": [1, 3], "b": [2]}


def test_the_emitting_marker_is_not_a_group():
    p = AccumulateByKeyP(lambda x: x, counting(), emit_empty=True)
    p.restore_from_snapshot(Inbox([(BroadcastKey("emitting"), True), ("a", 1)]))
    assert p.groups == {"a": 1} and p._emit_empty is False
