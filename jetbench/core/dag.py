"""The DAG model: vertices (processor suppliers) joined by edges with a routing policy.

>>> from jetbench import DAG, Edge
>>> from jetbench.processors import items_source, map_processor, collect_sink
>>> dag = DAG()
>>> src = dag.new_vertex("source", items_source(range(3)))
>>> double = dag.new_vertex("double", map_processor(lambda x: 2 * x))
>>> sink = dag.new_vertex("sink", collect_sink())
>>> dag.edge(Edge.between(src, double)).edge(Edge.between(double, sink))
DAG(vertices=['source', 'double', 'sink'], edges=2)
>>> dag.validate()
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from .errors import DagError
from .queues import DEFAULT_QUEUE_SIZE
from .render import drawing_bundle, to_dot, to_svg
from .routing import Routing

__all__ = ["DAG", "DEFAULT_QUEUE_SIZE", "Edge", "Routing", "Vertex"]


class Vertex:
    """A node of the DAG: a name, a supplier of `Processor` instances and a local parallelism.

    ``supplier`` is called once per parallel instance with no arguments and must return a new
    `Processor` each time (a `Processor` subclass itself is a fine supplier).
    """

    __slots__ = ("_name", "supplier", "_local_parallelism")

    def __init__(self, name: str, supplier: Callable[[], Any], local_parallelism: int | None = None):
        if not isinstance(name, str) or not name:
            raise DagError(f"vertex name must be a non-empty string, got {name!r}")
        if not callable(supplier):
            raise DagError(f"vertex {name!r}: supplier must be callable, got {supplier!r}")
        self._name = name
        self.supplier = supplier
        self._local_parallelism: int | None = None
        self.local_parallelism = local_parallelism

    @property
    def name(self) -> str:
        return self._name

    @property
    def local_parallelism(self) -> int | None:
        """Parallel instances of this vertex; ``None`` means the execution service's default."""
        return self._local_parallelism

    @local_parallelism.setter
    def local_parallelism(self, value: int | None) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise DagError(f"vertex {self._name!r}: local_parallelism must be an int or None, got {value!r}")
        self._local_parallelism = value

    def __repr__(self) -> str:
        lp = "default" if self._local_parallelism is None else self._local_parallelism
        return f"Vertex({self._name!r}, local_parallelism={lp})"


class Edge:
    """A directed link from an outbound ordinal of one vertex to an inbound ordinal of another.

    Build with `Edge.between` (ordinals 0 -> 0) or ``Edge.from_(a, 1).to(b, 2)``; then configure
    fluently: ``Edge.between(a, b).partitioned(lambda w: w).queue_size(256)``.
    """

    def __init__(self, source: Vertex, source_ordinal: int = 0):
        _check_vertex(source, "source")
        _check_ordinal(source_ordinal, f"edge from {source.name!r}: source ordinal")
        self.source = source
        self.source_ordinal = source_ordinal
        self.destination: Vertex | None = None
        self.destination_ordinal = 0
        self.routing = Routing.UNICAST
        self.key_fn: Callable[[Any], Hashable] | None = None
        self.edge_priority = 0
        self.edge_queue_size = DEFAULT_QUEUE_SIZE

    @classmethod
    def between(cls, source: Vertex, destination: Vertex) -> Edge:
        """An edge from ordinal 0 of ``source`` to ordinal 0 of ``destination``."""
        return cls(source, 0).to(destination, 0)

    @classmethod
    def from_(cls, source: Vertex, ordinal: int = 0) -> Edge:
        """Start an edge at ``ordinal`` of ``source``; finish it with `to`."""
        return cls(source, ordinal)

    @property
    def target(self) -> Vertex:
        """The destination of a finished edge (one given `to`); `DagError` on an unfinished one."""
        if self.destination is None:
            raise DagError(f"{self}: destination missing; finish the edge with .to(vertex)")
        return self.destination

    def to(self, destination: Vertex, ordinal: int = 0) -> Edge:
        _check_vertex(destination, f"edge from {self.source.name!r}: destination")
        _check_ordinal(ordinal, f"edge {self.source.name!r} -> {destination.name!r}: destination ordinal")
        self.destination = destination
        self.destination_ordinal = ordinal
        return self

    def partitioned(self, key_fn: Callable[[Any], Hashable]) -> Edge:
        """Route each item by ``hash(key_fn(item))``: equal keys reach the same consumer instance."""
        if not callable(key_fn):
            raise DagError(f"edge {self}: partitioned() needs a callable key function, got {key_fn!r}")
        self.routing, self.key_fn = Routing.PARTITIONED, key_fn
        return self

    def broadcast(self) -> Edge:
        """Send every item to every consumer instance."""
        self.routing, self.key_fn = Routing.BROADCAST, None
        return self

    def isolated(self) -> Edge:
        """Connect producer instance i only to consumers j with ``j % producers == i``."""
        self.routing, self.key_fn = Routing.ISOLATED, None
        return self

    def all_to_one(self) -> Edge:
        """Send every item to one consumer instance (instance 0)."""
        self.routing, self.key_fn = Routing.ALL_TO_ONE, None
        return self

    def unicast(self) -> Edge:
        """The default: each batch goes to one consumer instance, round-robin."""
        self.routing, self.key_fn = Routing.UNICAST, None
        return self

    def priority(self, priority: int) -> Edge:
        """Lower priorities are drained to completion before higher ones (Jet's rule)."""
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise DagError(f"edge {self}: priority must be an int, got {priority!r}")
        self.edge_priority = priority
        return self

    def queue_size(self, size: int) -> Edge:
        """Capacity, in items, of each queue on this edge (default 1024)."""
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise DagError(f"edge {self}: queue_size must be a positive int, got {size!r}")
        self.edge_queue_size = size
        return self

    def __repr__(self) -> str:
        dest = "?" if self.destination is None else f"{self.destination.name!r}[{self.destination_ordinal}]"
        return f"Edge({self.source.name!r}[{self.source_ordinal}] -> {dest}, {self.routing.value})"

    __str__ = __repr__


class DAG:
    """A directed acyclic graph of vertices and edges; vertices and edges keep insertion order."""

    def __init__(self) -> None:
        self._vertices: dict[str, Vertex] = {}
        self._edges: list[Edge] = []

    @property
    def vertices(self) -> list[Vertex]:
        return list(self._vertices.values())

    @property
    def edges(self) -> list[Edge]:
        return list(self._edges)

    def vertex(self, name: str) -> Vertex:
        try:
            return self._vertices[name]
        except KeyError:
            raise DagError(f"no vertex named {name!r} in this DAG") from None

    def new_vertex(self, name: str, supplier: Callable[[], Any], local_parallelism: int | None = None) -> Vertex:
        """Create, add and return a vertex; names must be unique within the DAG."""
        if name in self._vertices:
            raise DagError(f"duplicate vertex name {name!r}")
        vertex = Vertex(name, supplier, local_parallelism)
        self._vertices[name] = vertex
        return vertex

    def add_vertex(self, vertex: Vertex) -> Vertex:
        if vertex.name in self._vertices:
            raise DagError(f"duplicate vertex name {vertex.name!r}")
        self._vertices[vertex.name] = vertex
        return vertex

    def edge(self, edge: Edge) -> DAG:
        """Add an edge; both ends must already be vertices of this DAG. Returns the DAG for chaining."""
        if not isinstance(edge, Edge):
            raise DagError(f"DAG.edge() takes an Edge, got {edge!r}")
        if edge.destination is None:
            raise DagError(f"{edge}: destination missing; finish the edge with .to(vertex)")
        for end in (edge.source, edge.target):
            if self._vertices.get(end.name) is not end:
                raise DagError(f"{edge}: vertex {end.name!r} is not in this DAG; add it with new_vertex()")
        self._edges.append(edge)
        return self

    def inbound_edges(self, vertex: Vertex) -> list[Edge]:
        return [e for e in self._edges if e.destination is vertex]

    def outbound_edges(self, vertex: Vertex) -> list[Edge]:
        return [e for e in self._edges if e.source is vertex]

    def topological_order(self) -> list[Vertex]:
        """Vertices with every producer before its consumers; raises `DagError` on a cycle."""
        indegree = {name: 0 for name in self._vertices}
        for e in self._edges:
            indegree[e.target.name] += 1
        ready = [v for v in self._vertices.values() if indegree[v.name] == 0]
        order: list[Vertex] = []
        while ready:
            v = ready.pop(0)
            order.append(v)
            for e in self._edges:
                if e.source is v:
                    indegree[e.target.name] -= 1
                    if indegree[e.target.name] == 0:
                        ready.append(e.target)
        if len(order) < len(self._vertices):
            stuck = [name for name, d in indegree.items() if d > 0]
            raise DagError(f"the DAG has a cycle through vertices {stuck}")
        return order

    def validate(self, default_parallelism: int | None = None) -> None:
        """Raise `DagError` naming the vertex or edge at fault, or return None if the DAG can run.

        Checks: parallelism >= 1, edges between known vertices, inbound and outbound ordinals
        contiguous from 0 without duplicates, no cycles, and isolated edges whose consumer has at
        least as many instances as the producer. ``default_parallelism`` resolves vertices left at
        ``None`` for that last check.
        """
        for v in self._vertices.values():
            lp = v.local_parallelism
            if lp is not None and lp < 1:
                raise DagError(f"vertex {v.name!r}: local_parallelism must be >= 1, got {lp}")
        for e in self._edges:
            for end in (e.source, e.target):
                if self._vertices.get(end.name) is not end:
                    raise DagError(f"{e}: vertex {end.name!r} is not in this DAG")
            if e.source is e.target:
                raise DagError(f"{e}: an edge from vertex {e.source.name!r} to itself is a cycle")
        for v in self._vertices.values():
            _check_ordinals(v, [e.destination_ordinal for e in self.inbound_edges(v)], "inbound")
            _check_ordinals(v, [e.source_ordinal for e in self.outbound_edges(v)], "outbound")
        self.topological_order()
        for e in self._edges:
            if e.routing is Routing.ISOLATED:
                up = e.source.local_parallelism or default_parallelism
                down = e.target.local_parallelism or default_parallelism
                if up is not None and down is not None and down < up:
                    raise DagError(
                        f"{e}: an isolated edge needs the consumer's parallelism ({down}) to be at "
                        f"least the producer's ({up})"
                    )

    def to_dot(self) -> str:
        """The DAG in Graphviz's DOT language."""
        return to_dot(self)

    def _repr_svg_(self) -> str | None:
        """Notebooks show the DAG as an SVG drawn by Graphviz (when ``dot`` is installed). Never
        raises: None (the notebook then shows the repr) if it cannot be drawn."""
        try:
            return to_svg(self)
        except Exception:
            return None

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str] | None:
        """The drawing as SVG and as HTML that fits a wide DAG to the cell's width, full size on
        click (`drawing_bundle`); None (the repr) if it cannot be drawn."""
        return drawing_bundle(self._repr_svg_())

    def __repr__(self) -> str:
        return f"DAG(vertices={list(self._vertices)}, edges={len(self._edges)})"


def _check_vertex(vertex: Any, role: str) -> None:
    if not isinstance(vertex, Vertex):
        raise DagError(f"{role} must be a Vertex (from DAG.new_vertex), got {vertex!r}")


def _check_ordinal(ordinal: Any, what: str) -> None:
    if isinstance(ordinal, bool) or not isinstance(ordinal, int) or ordinal < 0:
        raise DagError(f"{what} must be an int >= 0, got {ordinal!r}")


def _check_ordinals(vertex: Vertex, ordinals: list[int], direction: str) -> None:
    seen = sorted(ordinals)
    for expected, actual in enumerate(seen):
        if actual != expected:
            if expected > 0 and actual == seen[expected - 1]:
                raise DagError(f"vertex {vertex.name!r}: duplicate {direction} ordinal {actual}")
            raise DagError(
                f"vertex {vertex.name!r}: {direction} ordinals must be 0..{len(seen) - 1} without gaps, "
                f"got {seen}"
            )
