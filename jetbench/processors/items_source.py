"""Source processors: they have no inbound edges and emit from ``complete()``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..core.outbox import Outbox
from ..core.processor import ProcessorContext
from .emitter import EmittingProcessor
from .supplier import ProcessorSupplier


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


class ItemsSource(ProcessorSupplier):
    """Supplier of `ItemsSourceP` over one iterable (its param ``items``).

    >>> from jetbench import DAG, Edge, ExecutionService
    >>> from jetbench.processors import collect_sink
    >>> dag = DAG()
    >>> src = dag.new_vertex("src", items_source("abc"))
    >>> _ = dag.edge(Edge.between(src, dag.new_vertex("out", collect_sink())))
    >>> ExecutionService().run(dag)
    ['a', 'b', 'c']
    """

    def __init__(self, items: Iterable[Any]):
        super().__init__(ItemsSourceP, items, label="items_source")

    def __repr__(self) -> str:
        return f"items_source({type(self.items).__name__})"


def items_source(items: Iterable[Any]) -> ItemsSource:
    """A vertex supplier that emits ``items`` (a sequence is split over instances)."""
    return ItemsSource(items)
