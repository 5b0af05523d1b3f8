"""The items source: emits the items of an iterable (a sequence is split over the instances)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..core.outbox import Outbox
from ..core.processor import ProcessorContext
from .builder_kind import Kind, Param, Reader, eval_expr
from .emitter import EmittingProcessor
from .supplier import ProcessorSupplier, made_by


class ItemsSourceP(EmittingProcessor):
    """Emits the items of an iterable in batches.

    A sequence (list, tuple, range) is split over the vertex's instances by stride (instance
    k of n emits items k, k+n, ...); any other iterable is read once, by instance 0 only.
    """

    def __init__(self, items: Iterable[Any]):
        self._items = items
        self._iterator = iter(())

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        items, n, k = self._items, context.total_parallelism, context.global_index
        if isinstance(items, Sequence):
            self._iterator = iter(items[k::n] if n > 1 else items)
        elif k == 0:
            self._iterator = iter(items)

    def complete(self) -> bool:
        return self._emitter.emit_from(self._iterator)


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
