"""Every built-in processor passes Jet's three snapshot modes of `verify_processor` (issue 16):
each snapshot restored into a new instance, every other one, none; the output (or a sink's
result) of every mode equals the plain run's."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import pkgutil
from typing import Any

import pytest

import jetbench.processors as processors_package
from jetbench.core.items import Watermark
from jetbench.core.processor import Processor
from jetbench.core.snapshot import snapshot_support
from jetbench.processors import (
    accumulate_by_key,
    aggregate_by_key,
    collect_sink,
    combine_by_key,
    counting,
    filter_processor,
    flat_map_processor,
    global_accumulate,
    global_aggregate,
    global_combine,
    items_source,
    map_processor,
    noop_sink,
)
from jetbench.processors.aggregate_operation import summing, to_list
from jetbench.processors.callback_sink import callback_sink
from jetbench.processors.co_group import co_group
from jetbench.processors.distinct import distinct
from jetbench.processors.event_stream_source import event_stream_source
from jetbench.processors.files_sink import files_sink
from jetbench.processors.files_source import files_source
from jetbench.processors.generator_source import generator_source
from jetbench.processors.hash_join import hash_join
from jetbench.processors.insert_watermarks import insert_watermarks
from jetbench.processors.latency_sink import latency_sink
from jetbench.processors.map_stateful import map_stateful
from jetbench.processors.map_using_service import map_using_service
from jetbench.processors.map_using_service_async import map_using_service_async
from jetbench.processors.rolling_aggregate import rolling_aggregate
from jetbench.processors.sort import sort
from jetbench.processors.to_dict_sink import to_dict_sink
from jetbench.processors.window_aggregate import window_aggregate
from jetbench.processors.window_definition import session, sliding, tumbling
from jetbench.testing import verify_processor

SNAPSHOT_MODES = ["inbox_limit=1, restore every snapshot", "inbox_limit=1, restore every other snapshot",
                  "inbox_limit=1, snapshots never restored"]

#: (ts, item) events, out of order, with watermarks between them
EVENTS: list[Any] = [(1, "a"), (3, "b"), (12, "a"), Watermark(5), (7, "c"), (14, "b"), (2, "late"),
                     Watermark(15), (21, "a"), (16, "a"), (33, "c"), Watermark(30), (31, "b"), (45, "a")]


class _Service:
    def __init__(self) -> None:
        self.factor = 10

    def apply(self, x: int) -> int:
        return self.factor * x

    async def apply_async(self, x: int) -> int:
        await asyncio.sleep(0)
        return self.factor * x


def _lookup(service: _Service, x: int) -> int:
    return service.apply(x)


async def _lookup_async(service: _Service, x: int) -> int:
    return await service.apply_async(x)


def _first_letter(item: Any) -> Any:
    return item[0]


# name -> (supplier, verify_processor arguments, any_order)
def _append_state(state: list[Any], key: Any, item: Any) -> tuple[Any, int]:
    state.append(item)
    return key, len(state)


def _evicted(state: list[Any], key: Any, wm: Any) -> tuple[Any, list[Any]]:
    return key, state


CASES: dict[str, tuple[Any, dict[str, Any], bool]] = {
    "items_source": (items_source(list(range(9))), {}, False),
    "items_source-parallel": (items_source(list(range(9))),
                              {"context": {"global_index": 1, "total_parallelism": 2}}, False),
    "event_stream_source": (event_stream_source([(0, "a"), (5, "b"), (9, "c")]), {}, False),
    "generator_source": (generator_source(1e9, timestamped=False, count=12), {}, False),
    "map": (map_processor(lambda x: 2 * x), {"input": list(range(7))}, False),
    "filter": (filter_processor(lambda x: x % 2), {"input": list(range(7))}, False),
    "flat_map": (flat_map_processor(lambda x: [x] * (x % 3)), {"input": list(range(7))}, False),
    "map_using_service": (map_using_service(_Service, _lookup), {"input": list(range(7))}, False),
    "map_using_service_async": (map_using_service_async(_Service, _lookup_async, max_concurrent=3),
                                {"input": list(range(12)), "progress_assertion": False}, False),
    "aggregate_by_key": (aggregate_by_key(lambda x: x % 3, counting()), {"input": list(range(10))}, True),
    "accumulate_by_key": (accumulate_by_key(lambda x: x % 3, summing(lambda x: x)),
                          {"input": list(range(10))}, True),
    "combine_by_key": (combine_by_key(counting()), {"input": [(k % 4, 1) for k in range(10)]}, True),
    "global_aggregate": (global_aggregate(counting()), {"input": list(range(10))}, False),
    "global_accumulate": (global_accumulate(counting()), {"input": list(range(10))}, False),
    "global_combine": (global_combine(counting()), {"input": [(None, 2), (None, 3)]}, False),
    "global_combine-empty": (global_combine(counting()), {"input": []}, False),
    "hash_join": (hash_join(_first_letter, _first_letter),
                  {"inputs": [["ax", "by", "az", "cq"], ["a1", "b2", "a3"]], "priorities": [0, -1]}, False),
    "hash_join-left": (hash_join(_first_letter, _first_letter, how="left"),
                       {"inputs": [["ax", "by", "cq"], ["a1", "b2"]], "priorities": [0, -1]}, False),
    "co_group": (co_group(_first_letter, _first_letter),
                 {"inputs": [["ax", "by", "az", "cq"], ["a1", "b2", "d3"]]}, False),
    "insert_watermarks": (insert_watermarks(lambda x: 10 * x, allowed_lag=5, throttle_frame=20),
                          {"input": [1, 3, 2, 6, 9, 4, 12, 15]}, False),
    "window-tumbling": (window_aggregate(lambda x: x, counting(), tumbling(10)), {"input": EVENTS}, False),
    "window-tumbling-global": (window_aggregate(None, to_list(), tumbling(10)), {"input": EVENTS}, False),
    "window-sliding-deduct": (window_aggregate(lambda x: x, counting(), sliding(20, 10)), {"input": EVENTS}, False),
    "window-sliding-recombine": (window_aggregate(lambda x: x, to_list(), sliding(20, 5)), {"input": EVENTS}, False),
    "window-session": (window_aggregate(lambda x: x, to_list(), session(4)), {"input": EVENTS}, False),
    "window-session-global": (window_aggregate(None, counting(), session(3)), {"input": EVENTS}, False),
    "rolling_aggregate": (rolling_aggregate(lambda x: x % 3, to_list()), {"input": list(range(10))}, False),
    "rolling_aggregate-global": (rolling_aggregate(None, counting()), {"input": list(range(10))}, False),
    "distinct": (distinct(lambda x: x % 4), {"input": list(range(10))}, False),
    "sort": (sort(lambda x: -x), {"input": [3, 9, 1, 7, 5]}, False),
    "map_stateful": (map_stateful(lambda x: x % 3, list, _append_state), {"input": list(range(10))}, False),
    "map_stateful-ttl": (map_stateful(lambda x: x, list, _append_state, ttl=4, on_evict=_evicted, timestamped=True),
                         {"input": EVENTS}, False),
}

SINKS: dict[str, tuple[Any, list[Any]]] = {
    "collect_sink": (collect_sink(), ["a", 1, None, ("t",), "a"]),
    "to_dict_sink": (to_dict_sink(), [("a", 1), ("b", 2), ("a", 3)]),
    "noop_sink": (noop_sink(), [1, 2, 3]),
}


def _plain_output(supplier: Any, kwargs: dict[str, Any]) -> list[Any]:
    report = verify_processor(supplier, snapshots=False, assert_output=lambda output: None, **kwargs)
    return report.runs[0].output


@pytest.mark.parametrize("name", list(CASES))
def test_every_snapshot_mode_gives_the_plain_output(name):
    supplier, kwargs, any_order = CASES[name]
    expected = _plain_output(supplier, kwargs)
    assert expected, "the case must produce output"
    report = verify_processor(supplier, expected=expected, any_order=any_order, snapshots=True, **kwargs)
    assert report.modes[-3:] == SNAPSHOT_MODES
    assert all(run.output == expected or any_order for run in report.runs)


def test_the_snapshot_modes_run_by_default_for_a_processor_that_supports_snapshots():
    report = verify_processor(aggregate_by_key(lambda x: x % 2, counting()), input=[1, 2, 3],
                              expected=[(1, 2), (0, 1)])
    assert report.modes == ["inbox_limit=1", "inbox_limit=1024", *SNAPSHOT_MODES]
    assert verify_processor(aggregate_by_key(lambda x: x % 2, counting()), input=[1, 2, 3],
                            expected=[(1, 2), (0, 1)], snapshots=False).modes == ["inbox_limit=1", "inbox_limit=1024"]


@pytest.mark.parametrize("name", list(SINKS))
def test_every_snapshot_mode_gives_a_sink_the_plain_result(name):
    supplier, items = SINKS[name]
    plain = verify_processor(supplier, input=items, output_ordinals=0, snapshots=False)
    report = verify_processor(supplier, input=items, output_ordinals=0, snapshots=True)
    assert report.modes[-3:] == SNAPSHOT_MODES
    expected = plain.runs[0].processor.result_part()
    assert all(run.processor.result_part() == expected for run in report.runs)


def test_the_latency_sink_counts_every_item_once_in_every_mode():
    events = [(0.0, "a"), (1.0, "b"), (2.0, "c"), (3.0, "d")]
    report = verify_processor(latency_sink(), input=events, output_ordinals=0, snapshots=True)
    assert report.modes[-3:] == SNAPSHOT_MODES
    for run in report.runs:
        count, _, _, samples = run.processor.result_part()
        assert count == 4 and len(samples) == 4


def test_the_callback_sink_is_stateless_and_passes_the_modes():
    seen: list[Any] = []
    report = verify_processor(callback_sink(seen.append), input=[1, 2, 3], output_ordinals=0, snapshots=True)
    assert report.modes[-3:] == SNAPSHOT_MODES  # at-least-once by nature: every call happened once here
    assert seen == [1, 2, 3] * len(report.runs)


def test_the_files_source_goes_on_from_its_file_and_line(tmp_path):
    for name, lines in (("a.txt", ["a1", "a2", "a3"]), ("b.txt", []), ("c.txt", ["c1", "c2"])):
        (tmp_path / name).write_text("".join(f"{line}\n" for line in lines))
    report = verify_processor(files_source(str(tmp_path / "*.txt")), expected=["a1", "a2", "a3", "c1", "c2"],
                              snapshots=True)
    assert report.modes[-3:] == SNAPSHOT_MODES


def _committed_or_pending(directory) -> str:
    """Instance 0's lines: its one file without a guarantee; else its committed files and its
    pending ones (what the phase 2 of the snapshot holding its final state commits), in epoch
    order."""
    names = sorted(os.listdir(directory), key=lambda n: n.lstrip("."))
    return "".join((directory / n).read_text() for n in names if n == "part-00000" or n.startswith("part-00000-")
                   or (n.startswith(".part-00000-") and n.endswith(".pending")))


def test_the_files_sink_ends_with_each_line_once_in_every_mode(tmp_path):
    items = list(range(7))
    contents: list[str] = []
    report = verify_processor(files_sink(tmp_path), input=items, output_ordinals=0, snapshots=True,
                              assert_output=lambda output: contents.append(_committed_or_pending(tmp_path)))
    assert report.modes[-3:] == SNAPSHOT_MODES
    assert contents == ["".join(f"{x}\n" for x in items)] * len(report.runs)


def _files(directory) -> list[str]:
    return sorted(os.listdir(directory))


def test_the_files_sink_commits_in_phase_two_and_a_restore_takes_back_nothing_a_reader_saw(tmp_path):
    """Two-phase files (issue 36): lines go to a hidden in-progress file per epoch, pending at
    phase 1, visible (renamed whole) at phase 2; a restored instance commits what its snapshot
    left pending and deletes what came later, so no committed line is ever taken back."""
    from jetbench.core.inbox import Inbox
    from jetbench.core.outbox import Outbox
    from jetbench.core.processor import ProcessorContext

    context = ProcessorContext("out", 0, 0, 1, 1, processing_guarantee="exactly_once")
    (tmp_path / "part-00000").write_text("an earlier run's\n")  # another run's files go at the start
    (tmp_path / "part-00000-000000007").write_text("an earlier run's\n")
    first = files_sink(tmp_path)()
    first.init(Outbox(0), context)
    first.process(0, Inbox(["a"]))
    assert first.save_to_snapshot() and first.snapshot_commit_prepare()  # snapshot 1
    assert first.snapshot_commit_finish(True)
    assert _files(tmp_path) == ["part-00000-000000001"]
    first.process(0, Inbox(["b"]))
    assert first.save_to_snapshot() and first.snapshot_commit_prepare()  # snapshot 2, stored ...
    entries = first.outbox.take_snapshot()
    first.process(0, Inbox(["after the snapshot"]))
    first.close()  # ... and the process dies before phase 2
    assert _files(tmp_path) == [".part-00000-000000002.pending", ".part-00000-000000003.inprogress",
                                "part-00000-000000001"]
    assert (tmp_path / "part-00000-000000001").read_text() == "a\n"  # all a reader sees

    second = files_sink(tmp_path)()
    second.init(Outbox(0), context)
    second.restore_from_snapshot(Inbox(entries[-1:]))
    assert second.finish_snapshot_restore()
    second.process(0, Inbox(["c"]))
    assert _files(tmp_path) == [".part-00000-000000003.inprogress", "part-00000-000000001", "part-00000-000000002"]
    assert second.complete()
    assert second.save_to_snapshot()  # the final state: epoch 3 pending
    assert _files(tmp_path) == [".part-00000-000000003.pending", "part-00000-000000001", "part-00000-000000002"]
    assert second.snapshot_commit_finish(True)
    second.close()
    assert [(tmp_path / n).read_text() for n in _files(tmp_path)] == ["a\n", "b\n", "c\n"]


def test_the_files_sink_without_a_guarantee_writes_one_file_as_items_come(tmp_path):
    from jetbench.core.inbox import Inbox
    from jetbench.core.outbox import Outbox
    from jetbench.core.processor import ProcessorContext

    (tmp_path / "part-00000-000000003").write_text("a two-phase run's\n")
    p = files_sink(tmp_path)()
    p.init(Outbox(0), ProcessorContext("out", 0, 0, 1, 1))
    p.process(0, Inbox(["a", "b"]))
    assert p.complete()
    p.close()
    assert _files(tmp_path) == ["part-00000"] and (tmp_path / "part-00000").read_text() == "a\nb\n"


def _builtin_processor_classes() -> list[type]:
    found = []
    for info in pkgutil.iter_modules(processors_package.__path__):
        module = importlib.import_module(f"jetbench.processors.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Processor) and cls.__module__ == module.__name__:
                found.append(cls)
    return found


def test_no_built_in_processor_refuses_a_guarantee():
    classes = _builtin_processor_classes()
    assert len(classes) > 20
    refusing = [cls.__name__ for cls in classes if cls.snapshot_support == "unsupported"]
    assert refusing == []


def test_a_source_over_a_one_shot_iterator_still_refuses_snapshots():
    p = items_source(iter(range(3)))()
    assert snapshot_support(p) == "unsupported"
    with pytest.raises(AssertionError, match="snapshots=True"):
        verify_processor(items_source(iter(range(3))), expected=[0, 1, 2], snapshots=True)
