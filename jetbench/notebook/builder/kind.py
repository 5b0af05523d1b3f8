"""What a palette entry is: `Param` (one parameter of a kind) and `Kind` (how a kind of vertex
is shown, checked, built into a processor supplier and exported as code), and `BuilderError`.

This module depends on nothing in the notebook layer (no widget, no document): a `Kind` is plain
data plus functions, so it can live beside the processor it describes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...core.errors import JetbenchError


class BuilderError(JetbenchError):
    """A builder document that cannot become a DAG (the message lists the problems)."""


@dataclass(frozen=True)
class Param:
    """One parameter of a kind.

    ``type``: ``code`` (function of ``args``: an expression or a function body; ``asynchronous``
    makes it the body of an ``async def``), ``expr`` (an expression evaluated at build time),
    ``steps`` (map/filter/flat_map steps, one ``kind: code`` a line, see `parse_steps`), ``int``,
    ``float``, ``str``, ``bool`` or ``choice``. ``optional`` parameters may be empty ("" / None),
    meaning "not given"; a required ``str`` must not be empty. Numbers must be >= ``minimum``
    (> with ``strict``). ``when=(other, values)``: the parameter only applies while parameter
    ``other`` has one of ``values`` (it is neither checked nor used otherwise).
    """

    name: str
    type: str
    default: Any = None
    args: tuple[str, ...] = ("x",)
    choices: tuple[str, ...] = ()
    optional: bool = False
    help: str = ""
    minimum: float | None = None
    strict: bool = False
    when: tuple[str, tuple[Any, ...]] | None = None
    asynchronous: bool = False

    def applies(self, params: dict[str, Any]) -> bool:
        """False while ``when`` rules the parameter out for these ``params``."""
        return self.when is None or params.get(self.when[0]) in self.when[1]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "default": self.default, "args": list(self.args),
                "choices": list(self.choices), "optional": self.optional, "help": self.help,
                "minimum": self.minimum, "strict": self.strict,
                "when": None if self.when is None else [self.when[0], list(self.when[1])],
                "asynchronous": self.asynchronous}


#: a kind-specific check: ``(vertex, inbound edges, outbound edges) -> [(message, level), ...]``
Check = Callable[[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]], list[tuple[str, str]]]


@dataclass
class Kind:
    """A palette entry: ``build(params, fns, ns)`` returns a supplier, ``code(params, fns)`` returns
    the supplier as Python source text plus the imports it needs.

    In both, ``fns`` maps each code parameter to what to use: a compiled function in ``build``,
    the name of a generated function (or a lambda's text) in ``code``; an empty optional code
    parameter (or one that does not apply) maps to None, and a ``steps`` parameter maps to a
    list, one entry per step.

    ``in_ports`` names the inputs of a kind with a fixed number of them (a join: probe, build);
    ``edge_defaults(params, ordinal)`` gives the routing (and key, priority) a new edge into
    that input starts with; ``parallelism`` is the local parallelism a new vertex starts with;
    ``check`` adds kind-specific problems.
    """

    id: str
    label: str
    category: str
    inputs: bool
    outputs: bool
    params: tuple[Param, ...]
    build: Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], Any]
    code: Callable[[dict[str, Any], dict[str, Any]], tuple[str, set[str]]]
    description: str = ""
    preset: dict[str, Any] = field(default_factory=dict)
    in_ports: tuple[str, ...] = ()
    edge_defaults: Callable[[dict[str, Any], int], dict[str, Any]] | None = None
    parallelism: int | None = None
    check: Check | None = None

    def defaults(self) -> dict[str, Any]:
        values = {p.name: p.default for p in self.params}
        values.update(self.preset)
        return values

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "category": self.category, "inputs": self.inputs,
                "outputs": self.outputs, "params": [p.to_json() for p in self.params],
                "description": self.description, "defaults": self.defaults(), "in_ports": list(self.in_ports),
                "parallelism": self.parallelism}
