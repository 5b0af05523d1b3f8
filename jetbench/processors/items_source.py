"""The items source: emits the items of an iterable (a sequence is split over the instances)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, ClassVar

from ..core.inbox import Inbox
from ..core.native import mypyc_attr
from ..core.outbox import Outbox
from ..core.processor import ProcessorContext
from .builder_kind import Kind, Param, Reader, eval_expr
from .emitter import EmittingProcessor
from .snapshotting import restored_position, save_position
from .supplier import ProcessorSupplier, made_by


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


def items_source(items: Iterable[Any]) -> ProcessorSupplier:
    """A vertex supplier that emits ``items`` (a sequence is split over instances).

    >>> from jetbench import DAG, Edge, ExecutionService
    >>> from jetbench.processors import collect_sink
    >>> dag = DAG()
    >>> src = dag.new_vertex("src", items_source("abc"))
    >>> _ = dag.edge(Edge.between(src, dag.new_vertex("out", collect_sink())))
    >>> ExecutionService().run(dag)
    ['a', 'b', 'c']
    """
    return ProcessorSupplier(ItemsSourceP, items, label=f"items_source({type(items).__name__})")


def _read(supplier: Any, reader: Reader) -> dict[str, Any] | None:
    if not made_by(supplier, ItemsSourceP):
        return None
    return {"items": reader.literal(supplier.items, "items")}


BUILDER_KINDS = (
    Kind("items", "items", "source", False, True,
         (Param("items", "expr", "range(10)", help="a Python expression giving the items (evaluated at run)"),),
         lambda p, f, ns: items_source(eval_expr(p["items"], ns, "items")),
         lambda p, f: (f"items_source({p['items'].strip()})", {"from jetbench.processors import items_source"}),
         "emits the items of an iterable", read=_read),
)
