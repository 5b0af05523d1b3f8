"""The DAG builder's palette: the kinds of vertex on offer, the built-in ones (`builtin_kinds`)
plus registered `Processor` subclasses, in category order.
"""

from __future__ import annotations

from typing import Any

from ...processors.builder_kind import BuilderError, Kind
from .builtin_kinds import builtin_kinds
from .code_text import class_path

#: categories, in palette order
CATEGORIES = ("source", "transform", "aggregate", "join", "window", "sink", "custom")


class Palette:
    """The kinds on offer: the built-ins plus registered `Processor` subclasses.

    >>> from jetbench.processors.noop_sink import NoopSinkP
    >>> p = Palette()
    >>> p.register(NoopSinkP).id, p.kind("processor:NoopSinkP").preset
    ('processor:NoopSinkP', {'cls': 'jetbench.processors.noop_sink.NoopSinkP'})
    """

    def __init__(self) -> None:
        self._kinds: dict[str, Kind] = {k.id: k for k in builtin_kinds()}

    def kind(self, kind_id: str) -> Kind | None:
        return self._kinds.get(kind_id)

    def kinds(self) -> list[Kind]:
        order = {c: i for i, c in enumerate(CATEGORIES)}
        return sorted(self._kinds.values(), key=lambda k: order.get(k.category, len(order)))

    def register(self, cls: type, label: str | None = None, inputs: bool = True, outputs: bool = True) -> Kind:
        """Offer a `Processor` subclass (or any class whose instances are processors) in the palette."""
        if not isinstance(cls, type):
            raise BuilderError(f"register() takes a Processor subclass, got {cls!r}")
        base = self._kinds["processor"]
        kind = Kind(id=f"processor:{cls.__name__}", label=label or cls.__name__, category="custom", inputs=inputs,
                    outputs=outputs, params=base.params, build=base.build, code=base.code,
                    description=(cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else "",
                    preset={"cls": class_path(cls)})
        self._kinds[kind.id] = kind
        return kind

    def register_namespace(self, ns: dict[str, Any]) -> list[Kind]:
        """Register every `Processor` subclass defined in ``ns`` (a notebook's namespace)."""
        from ...core.processor import Processor

        found = []
        for value in list(ns.values()):
            if isinstance(value, type) and issubclass(value, Processor) and value is not Processor \
                    and not value.__module__.startswith("jetbench."):
                found.append(self.register(value))
        return found

    def to_json(self) -> list[dict[str, Any]]:
        return [k.to_json() for k in self.kinds() if k.id not in ("custom",)]
