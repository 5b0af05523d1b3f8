"""How the DAG builder offers a vertex kind: `Param` (one parameter), `Kind` (how the kind is
shown, checked, built into a processor supplier, read back from a supplier and written as
code), and what kinds share (the aggregate-operation parameters, the read-back helpers). A
kind module makes its `Kind` from its parameters' one declaration
(`jetbench.processors.kind_params`); the builder's own kinds are written out here.

A processor module declares its kinds in ``BUILDER_KINDS`` beside its processor; the builder
(`jetbench.notebook.builder`) collects them. Plain data plus functions: nothing here imports the
notebook layer.

Parameters hold *text* for anything that is code: a ``code`` parameter is a Python expression in
its arguments (``x * 2``) or a function body; an ``expr`` parameter is an expression evaluated
when the DAG is built (``range(100)``).

>>> from jetbench.processors.items_source import BUILDER_KINDS, items_source
>>> (kind,) = BUILDER_KINDS
>>> kind.read(items_source(range(3)), LiteralReader())
{'items': 'range(3)'}
>>> kind.code({"items": "range(3)"}, {})
('items_source(range(3))', {'from jetbench.processors.items_source import items_source'})
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..core.errors import JetbenchError
from .aggregate_operation import AggregateOperation


class BuilderError(JetbenchError):
    """A builder document that cannot become a DAG (the message lists the problems)."""


class Unreadable(JetbenchError):
    """A supplier or function that cannot be shown as builder parameters; the message says why."""


@dataclass(frozen=True)
class Param:
    """One parameter of a kind.

    ``type``: ``code`` (function of ``args``: an expression or a function body; ``asynchronous``
    makes it the body of an ``async def``), ``expr`` (an expression evaluated at build time),
    ``steps`` (map/filter/flat_map steps, one ``kind: code`` a line), ``int``, ``float``,
    ``str``, ``bool`` or ``choice``. ``optional`` parameters may be empty ("" / None), meaning
    "not given"; a required ``str`` must not be empty. Numbers must be >= ``minimum`` (> with
    ``strict``). ``when=(other, values)``: the parameter only applies while parameter ``other``
    has one of ``values`` (it is neither checked nor used otherwise). ``was``: the names the
    parameter had before (a document that still uses one loads, see `Kind.upgrade`).
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
    was: tuple[str, ...] = ()

    def applies(self, params: dict[str, Any]) -> bool:
        """False while ``when`` rules the parameter out for these ``params``."""
        return self.when is None or params.get(self.when[0]) in self.when[1]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "default": self.default, "args": list(self.args),
                "choices": list(self.choices), "optional": self.optional, "help": self.help,
                "minimum": self.minimum, "strict": self.strict,
                "when": None if self.when is None else [self.when[0], list(self.when[1])],
                "asynchronous": self.asynchronous}


class Reader(Protocol):
    """What a kind's ``read`` uses to turn a supplier's values back into parameter text; each
    method raises `Unreadable` (saying why) for a value it cannot show."""

    #: the namespace the builder compiles code in (a notebook's globals)
    namespace: dict[str, Any]

    def code(self, fn: Any, what: str, args: tuple[str, ...] = ("x",), asynchronous: bool = False) -> str:
        """The text of a ``code`` parameter for function ``fn`` (its parameter ``what``)."""
        ...

    def optional(self, fn: Any, what: str, args: tuple[str, ...] = ("x",)) -> str:
        """As `code`, and "" for None."""
        ...

    def literal(self, value: Any, what: str) -> str:
        """The text of an ``expr`` parameter that evaluates to ``value``."""
        ...


#: a kind-specific check: ``(vertex, inbound edges, outbound edges) -> [(message, level), ...]``
Check = Callable[[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]], list[tuple[str, str]]]
#: ``build(params, functions, namespace) -> supplier``
Build = Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], Any]
#: ``code(params, function texts) -> (supplier expression, import lines)``
Code = Callable[[dict[str, Any], dict[str, Any]], tuple[str, set[str]]]
#: ``read(supplier, reader) -> params``, or None when the supplier is not of this kind
Read = Callable[[Any, Reader], "dict[str, Any] | None"]


@dataclass
class Kind:
    """A palette entry.

    ``build(params, fns, ns)`` returns a supplier; ``code(params, fns)`` returns the supplier as
    Python source text plus the imports it needs; ``read(supplier, reader)`` returns the
    parameters of a supplier of this kind (None for a supplier of another kind), so a DAG built
    in code opens as editable vertices. In ``build`` and ``code``, ``fns`` maps each code
    parameter to what to use: a compiled function in ``build``, the name of a generated function
    (or a lambda's text) in ``code``; an empty optional code parameter (or one that does not
    apply) maps to None, and a ``steps`` parameter maps to a list, one entry per step.

    ``in_ports`` names the inputs of a kind with a fixed number of them (a join: probe, build);
    ``edge_defaults(params, ordinal)`` gives the routing (and key, priority) a new edge into
    that input starts with; ``parallelism`` is the local parallelism a new vertex starts with;
    ``check`` adds kind-specific problems; ``requires`` names modules the kind needs installed
    (the palette leaves it out without them).
    """

    id: str
    label: str
    category: str
    inputs: bool
    outputs: bool
    params: tuple[Param, ...]
    build: Build
    code: Code
    description: str = ""
    read: Read | None = None
    preset: dict[str, Any] = field(default_factory=dict)
    in_ports: tuple[str, ...] = ()
    edge_defaults: Callable[[dict[str, Any], int], dict[str, Any]] | None = None
    parallelism: int | None = None
    check: Check | None = None
    requires: tuple[str, ...] = ()

    def defaults(self) -> dict[str, Any]:
        values = {p.name: p.default for p in self.params}
        values.update(self.preset)
        return values

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def upgrade(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` with each parameter's former name (`Param.was`) replaced by its name.

        >>> from jetbench.processors.map_using_service import BUILDER_KINDS
        >>> BUILDER_KINDS[0].upgrade({"service": "dict()", "fn": "x"})
        {'service_factory': 'dict()', 'fn': 'x'}
        """
        renamed = {old: p.name for p in self.params for old in p.was}
        if not renamed or not renamed.keys() & params.keys():
            return params
        return {renamed.get(name, name): value for name, value in params.items()}

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "category": self.category, "inputs": self.inputs,
                "outputs": self.outputs, "params": [p.to_json() for p in self.params],
                "description": self.description, "defaults": self.defaults(), "in_ports": list(self.in_ports),
                "parallelism": self.parallelism}


# -- shared by several kinds ----------------------------------------------------------------------

#: the steps of a ``steps`` parameter (a fused transform), in its text: one ``kind: code`` per step
STEP_KINDS = ("map", "filter", "flat_map")

_STEP_LINE = re.compile(r"(\w+)\s*:(.*)")


def parse_steps(text: str) -> list[tuple[str, str]]:
    r"""The steps of a ``steps`` parameter: ``[(kind, code), ...]``.

    A step starts at a line ``kind: code`` (kind one of map, filter, flat_map; code an
    expression in x); a step whose code is a function body writes ``kind:`` alone and the body
    indented below it. Raises `BuilderError` naming the line at fault.

    >>> parse_steps("map: x.lower()\nfilter:\n    if x:\n        return True\n    return False")
    [('map', 'x.lower()'), ('filter', 'if x:\n    return True\nreturn False')]
    """
    if not isinstance(text, str):
        raise BuilderError(f"steps must be text, got {text!r}")
    steps: list[list[Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            if steps:
                steps[-1][2].append("")
            continue
        if line[0] in " \t":
            if not steps:
                raise BuilderError(f"line {number}: an indented line before the first step")
            steps[-1][2].append(line)
            continue
        match = _STEP_LINE.fullmatch(line.rstrip())
        if match is None or match[1] not in STEP_KINDS:
            raise BuilderError(f"line {number}: expected 'map: ...', 'filter: ...' or 'flat_map: ...', got {line.strip()!r}")
        steps.append([match[1], match[2].strip(), [], number])
    out = []
    for kind, inline, more, number in steps:
        body = textwrap.dedent("\n".join(more)).strip("\n")
        code = "\n".join(part for part in (inline, body) if part)
        if not code:
            raise BuilderError(f"line {number}: {kind} has no code")
        out.append((kind, code))
    return out


def steps_text(steps: list[tuple[str, str]]) -> str:
    r"""The ``steps`` text of ``[(kind, code), ...]`` (inverse of `parse_steps`).

    >>> print(steps_text([("map", "x + 1"), ("filter", "y = x % 2\nreturn y")]))
    map: x + 1
    filter:
        y = x % 2
        return y
    """
    lines = []
    for kind, code in steps:
        text = code.strip()
        if "\n" in text:
            lines.append(f"{kind}:")
            lines.append(textwrap.indent(textwrap.dedent(code).strip("\n"), "    "))
        else:
            lines.append(f"{kind}: {text}")
    return "\n".join(lines)





def eval_expr(code: str, ns: dict[str, Any], label: str) -> Any:
    """Evaluate an ``expr`` parameter in the builder's namespace."""
    return eval(compile(code.strip(), f"<jetbench builder: {label}>", "eval"), ns)  # noqa: S307


def literal_code(value: Any) -> str | None:
    """Source text that evaluates to ``value``: a range, or a literal (checked by `ast.literal_eval`).

    >>> literal_code(range(3)), literal_code(range(2, 9, 3)), literal_code([1, "a"]), literal_code(object())
    ('range(3)', 'range(2, 9, 3)', "[1, 'a']", None)
    """
    if isinstance(value, range):
        if value.step != 1:
            return repr(value)
        return f"range({value.stop})" if value.start == 0 else f"range({value.start}, {value.stop})"
    if isinstance(value, list | tuple | str | bytes | dict | set | frozenset):
        text = repr(value)
        if len(text) > 10_000:
            return None
        try:
            if ast.literal_eval(text) == value:
                return text
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    return None


class LiteralReader:
    """A `Reader` that shows literals only (no functions): for kinds without code parameters, and
    examples."""

    def __init__(self, namespace: dict[str, Any] | None = None):
        self.namespace = {} if namespace is None else namespace

    def code(self, fn: Any, what: str, args: tuple[str, ...] = ("x",), asynchronous: bool = False) -> str:
        raise Unreadable(f"{what}: this reader shows no functions")

    def optional(self, fn: Any, what: str, args: tuple[str, ...] = ("x",)) -> str:
        return "" if fn is None else self.code(fn, what, args)

    def literal(self, value: Any, what: str) -> str:
        text = literal_code(value)
        if text is None:
            raise Unreadable(f"its {what} are a {type(value).__name__}, not a literal the builder can show")
        return text


#: aggregate operations offered by the aggregate and window kinds; those marked True take the
#: ``value`` function (``summing(value)``)
OPS = {"counting": False, "summing": True, "averaging": True, "min_by": True, "max_by": True,
       "to_list": False, "to_set": False}
#: the operations that take a value function
VALUE_OPS = tuple(name for name, takes in OPS.items() if takes)

OP = Param("op", "choice", "counting", choices=tuple(OPS), help="aggregate operation")
VALUE = Param("value", "code", "x", when=("op", VALUE_OPS),
              help="value summed / averaged / compared (for summing, averaging, min_by, max_by)")
AGGREGATE_IMPORT = "from jetbench import aggregate"


def operation(name: str, value: Callable[[Any], Any] | None) -> AggregateOperation:
    """The library operation ``name`` (called with ``value`` when it takes one)."""
    from . import aggregate_operation

    if name not in OPS:
        raise BuilderError(f"unknown aggregate operation {name!r}; one of {sorted(OPS)}")
    factory: Callable[..., AggregateOperation] = getattr(aggregate_operation, name)
    return factory(value) if OPS[name] and value is not None else factory()


def operation_code(name: str, value: str | None) -> str:
    """``aggregate.<name>(<value>)``: the code of `operation`."""
    return f"aggregate.{name}({(value or '') if OPS.get(name) else ''})"


def read_operation(op: Any, reader: Reader) -> dict[str, Any]:
    """The ``op`` / ``value`` params of an aggregate operation made by the library."""
    recipe = getattr(op, "recipe", None)
    if recipe is None:
        raise Unreadable("its aggregate operation is hand-made; the palette offers " + ", ".join(OPS))
    name, args = recipe
    if name not in OPS:
        raise Unreadable(f"its aggregate operation {name} is not one the palette offers ({', '.join(OPS)})")
    params: dict[str, Any] = {"op": name}
    if OPS[name]:
        params["value"] = reader.code(args[0], "value")
    return params


def single_instance(what: str) -> Check:
    """A check that warns when a vertex giving one result per instance runs more than one."""

    def check(v: dict[str, Any], inbound: list[dict[str, Any]], outbound: list[dict[str, Any]]) -> list[tuple[str, str]]:
        if v["parallelism"] != 1:
            lp = "the default" if v["parallelism"] is None else v["parallelism"]
            return [(f"{what} gives one result per instance: run it with local parallelism 1 (now {lp})", "warning")]
        return []

    return check
