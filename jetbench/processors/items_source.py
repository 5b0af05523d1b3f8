"""The items source: emits the items of an iterable (a sequence is split over the instances);
the stamped items source: a timestamped stream held as two columns, emitted as stamped chunks."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, ClassVar

from ..core.errors import JetbenchError
from ..core.inbox import Inbox
from ..core.native import mypyc_attr
from ..core.outbox import Outbox
from ..core.processor import ProcessorContext
from .emitter import EmittingProcessor
from .kind_params import KindParams, expr
from .snapshotting import restored_position, save_position
from .supplier import ProcessorSupplier


@mypyc_attr(allow_interpreted_subclasses=True)
class ItemsSourceP(EmittingProcessor):
    """Emits the items of an iterable in batches.

    A sequence (list, tuple, range) is split over the vertex's instances by stride (instance
    k of n emits items k, k+n, ...); any other iterable is read once, by instance 0 only.

    Snapshots: each instance saves how many of its items it has emitted (under a broadcast key
    naming the instance); a restored instance skips that many. An iterator cannot be read again,
    so a source over one refuses a processing guarantee (``replayable`` is False).
    """

    snapshot_support: ClassVar[str] = "supported"

    def __init__(self, items: Iterable[Any]):
        self._items = items
        self._iterator: Iterator[Any] = iter(())
        self._part: Iterable[Any] = ()
        self._position = 0  # items of this instance's part taken from the iterator so far
        self.replayable = not isinstance(items, Iterator)

    def _my_part(self, items: Iterable[Any], n: int, k: int) -> Iterable[Any]:
        if isinstance(items, Sequence):
            return items[k::n] if n > 1 else items
        return items if k == 0 else ()

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        self._part = self._my_part(self._items, context.total_parallelism, context.global_index)
        self._iterator = iter(self._part)

    def complete(self) -> bool:
        emitter = self._emitter
        room = emitter.free_room()
        if room <= 0:
            return False
        chunk = list(islice(self._iterator, room))
        self._position += len(chunk)
        if chunk:
            emitter.emit(chunk)
        return len(chunk) < room and not emitter.pending

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():  # items taken but not yet out belong before the barrier
            return False
        return save_position(self.outbox, type(self).__name__, self.context, self._position)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        saved = restored_position(inbox, type(self).__name__, self.context)
        if saved is None:
            return
        (position,) = saved
        part = self._part
        self._iterator = iter(part[position:]) if isinstance(part, Sequence) else islice(iter(part), position, None)
        self._position = position


@mypyc_attr(allow_interpreted_subclasses=True)
class StampedItemsSourceP(EmittingProcessor):
    """Emits a timestamped stream held in memory as two columns, ``items[i]`` at ``ts[i]``, in
    stamped chunks (`jetbench.core.items.Stamped`): no ``(ts, item)`` tuple is made, and a
    consumer that reads columns gets them as they are (any other gets the pairs).

    Instance k of n emits entries k, k+n, ... Snapshots: as `ItemsSourceP`, how many of its
    entries an instance has emitted.
    """

    snapshot_support: ClassVar[str] = "supported"

    def __init__(self, ts: Sequence[Any], items: Sequence[Any]):
        if len(ts) != len(items):
            raise JetbenchError(f"stamped_items_source: {len(ts)} timestamps for {len(items)} items")
        self._columns = (ts, items)
        self._ts: list[Any] = []
        self._items: list[Any] = []
        self._position = 0  # entries of this instance's part emitted so far
        self.replayable = True

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        n, k = context.total_parallelism, context.global_index
        ts, items = self._columns
        if n > 1:
            ts, items = ts[k::n], items[k::n]
        # a chunk is a slice: a new list, so the columns themselves are never handed on
        self._ts = ts if isinstance(ts, list) else list(ts)
        self._items = items if isinstance(items, list) else list(items)

    def complete(self) -> bool:
        emitter = self._emitter
        room = emitter.free_room()
        if room <= 0:
            return False
        start = self._position
        n = len(self._items)
        end = min(start + room, n)
        if end > start:
            self._position = end
            emitter.emit_stamped(self._ts[start:end], self._items[start:end])
        return end >= n and not emitter.pending

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():  # entries taken but not yet out belong before the barrier
            return False
        return save_position(self.outbox, type(self).__name__, self.context, self._position)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        saved = restored_position(inbox, type(self).__name__, self.context)
        if saved is not None:
            self._position = int(saved[0])


def stamped_items_source(ts: Sequence[Any], items: Sequence[Any]) -> ProcessorSupplier:
    """A vertex supplier emitting ``items`` with their timestamps ``ts`` (two sequences of one
    length) as a timestamped stream, in stamped chunks; split over instances as `items_source`.

    >>> from jetbench import DAG, Edge, ExecutionService
    >>> from jetbench.processors import collect_sink
    >>> dag = DAG()
    >>> src = dag.new_vertex("src", stamped_items_source([5, 7], ["a", "b"]))
    >>> _ = dag.edge(Edge.between(src, dag.new_vertex("out", collect_sink())))
    >>> ExecutionService().run(dag)
    [(5, 'a'), (7, 'b')]
    """
    if len(ts) != len(items):
        raise JetbenchError(f"stamped_items_source: {len(ts)} timestamps for {len(items)} items")
    return ProcessorSupplier(StampedItemsSourceP, ts, items, label=f"stamped_items_source({len(items)} items)")


@mypyc_attr(native_class=False)  # a plain dataclass (a ProcessorSupplier), not a native class
@dataclass(frozen=True, eq=False, repr=False)
class ItemsSource(KindParams):
    """The items source's parameter and vertex supplier (``items_source``): emits ``items`` (a
    sequence is split over instances).

    >>> from jetbench import DAG, Edge, ExecutionService
    >>> from jetbench.processors import collect_sink
    >>> dag = DAG()
    >>> src = dag.new_vertex("src", items_source("abc"))
    >>> _ = dag.edge(Edge.between(src, dag.new_vertex("out", collect_sink())))
    >>> ExecutionService().run(dag)
    ['a', 'b', 'c']
    """

    items: Iterable[Any] = expr("range(10)", help="a Python expression giving the items (evaluated at run)")
    processor = ItemsSourceP
    function = "items_source"

    def describe(self) -> str:
        return f"items_source({type(self.items).__name__})"


#: the items source's vertex supplier (its declaration, `ItemsSource`)
items_source = ItemsSource


BUILDER_KINDS = (
    ItemsSource.builder_kind(id="items", label="items", category="source", inputs=False, outputs=True,
                             description="emits the items of an iterable"),
)
