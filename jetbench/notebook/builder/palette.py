"""The DAG builder's palette: the kinds of vertex a user can place, their parameters, and how each
becomes a processor supplier (`Kind.build`) or Python source text (`Kind.code`).

Pure Python, no widget imports. Parameters hold *text* for anything that is code: a ``code``
parameter is a Python expression in its arguments (``x * 2``) or a function body (with
``return``); an ``expr`` parameter is an expression evaluated when the DAG is built
(``range(100)``). Text is compiled to check it (`check_code`), never run, until `Kind.build`.

>>> function_source("x * 2", ("x",), "f")
'def f(x):\\n    return (x * 2)\\n'
>>> check_code("x *", ("x",)) is not None
True
"""

from __future__ import annotations

import ast
import builtins
import importlib
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...core.errors import JetbenchError

#: categories, in palette order
CATEGORIES = ("source", "transform", "aggregate", "window", "sink", "custom")

#: aggregate operations offered by the aggregate and window kinds; those marked True take the
#: ``value`` function (``summing(value)``)
OPS = {"counting": False, "summing": True, "averaging": True, "min_by": True, "max_by": True,
       "to_list": False, "to_set": False}

ROUTINGS = ("unicast", "partitioned", "broadcast", "isolated", "all-to-one")


class BuilderError(JetbenchError):
    """A builder document that cannot become a DAG (the message lists the problems)."""


@dataclass(frozen=True)
class Param:
    """One parameter of a kind.

    ``type``: ``code`` (function of ``args``: an expression or a function body), ``expr`` (an
    expression evaluated at build time), ``int``, ``float``, ``str``, ``bool`` or ``choice``.
    ``optional`` code/expr/int parameters may be empty ("" / None), meaning "not given".
    """

    name: str
    type: str
    default: Any = None
    args: tuple[str, ...] = ("x",)
    choices: tuple[str, ...] = ()
    optional: bool = False
    help: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "default": self.default, "args": list(self.args),
                "choices": list(self.choices), "optional": self.optional, "help": self.help}


@dataclass
class Kind:
    """A palette entry: ``build(params, fns, ns)`` returns a supplier, ``code(params, fns)`` returns
    the supplier as Python source text plus the imports it needs.

    In both, ``fns`` maps each code parameter to what to use: a compiled function in ``build``,
    the name of a generated function (or a lambda's text) in ``code``; an empty optional code
    parameter maps to None.
    """

    id: str
    label: str
    category: str
    inputs: bool
    outputs: bool
    params: tuple[Param, ...]
    build: Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], Any]
    code: Callable[[dict[str, Any], dict[str, str | None]], tuple[str, set[str]]]
    description: str = ""
    preset: dict[str, Any] = field(default_factory=dict)

    def defaults(self) -> dict[str, Any]:
        values = {p.name: p.default for p in self.params}
        values.update(self.preset)
        return values

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "category": self.category, "inputs": self.inputs,
                "outputs": self.outputs, "params": [p.to_json() for p in self.params],
                "description": self.description, "defaults": self.defaults()}


# ------------------------------------------------------------------------------ code text


def is_expression(code: str) -> bool:
    try:
        ast.parse(code.strip(), mode="eval")
    except SyntaxError:
        return False
    return True


def function_source(code: str, args: tuple[str, ...], name: str) -> str:
    """``def name(args): ...`` for an expression (returned) or a function body (as written)."""
    text = code.strip()
    if is_expression(text):
        return f"def {name}({', '.join(args)}):\n    return ({text})\n"
    body = textwrap.indent(textwrap.dedent(code).strip("\n"), "    ")
    return f"def {name}({', '.join(args)}):\n{body}\n"


def lambda_source(code: str, args: tuple[str, ...]) -> str | None:
    """``lambda args: expr`` if ``code`` is one expression, else None (it needs a ``def``)."""
    text = code.strip()
    if not is_expression(text):
        return None
    if "\n" in text:
        text = f"({text})"
    return f"lambda {', '.join(args)}: {text}"


def check_code(code: str, args: tuple[str, ...]) -> str | None:
    """Compile (never run) ``code`` as a function of ``args``; the error text, or None if it compiles."""
    if not isinstance(code, str) or not code.strip():
        return "empty code"
    try:
        compile(function_source(code, args, "_f"), "<code>", "exec")
    except SyntaxError as exc:
        line = exc.lineno - 1 if exc.lineno else None  # line 1 is the def
        where = f" (line {line})" if line and "\n" in code.strip() else ""
        return f"{exc.msg}{where}"
    except (ValueError, TypeError) as exc:  # e.g. a null byte
        return str(exc)
    text = code.strip()
    if not is_expression(text) and not _has_return(text):
        return "a function body needs a return statement"
    return None


def check_expr(code: str) -> str | None:
    if not isinstance(code, str) or not code.strip():
        return "empty expression"
    try:
        compile(code.strip(), "<expr>", "eval")
    except SyntaxError as exc:
        return exc.msg
    except (ValueError, TypeError) as exc:
        return str(exc)
    return None


def _has_return(body: str) -> bool:
    try:
        tree = ast.parse(textwrap.dedent(body))
    except SyntaxError:
        return False
    return any(isinstance(node, ast.Return | ast.Yield | ast.YieldFrom) for node in ast.walk(tree))


def compile_function(code: str, args: tuple[str, ...], ns: dict[str, Any], label: str) -> Callable[..., Any]:
    """Define the function (its globals are ``ns``, so it sees the notebook's names); runs nothing
    of the user's code but the ``def`` itself."""
    local: dict[str, Any] = {}
    exec(compile(function_source(code, args, "_fn"), f"<jetbench builder: {label}>", "exec"), ns, local)  # noqa: S102
    fn = local["_fn"]
    fn.__jetbench_code__ = code
    fn.__name__ = fn.__qualname__ = label.replace(".", "_").replace(" ", "_").replace("-", "_")
    return fn


def eval_expr(code: str, ns: dict[str, Any], label: str) -> Any:
    return eval(compile(code.strip(), f"<jetbench builder: {label}>", "eval"), ns)  # noqa: S307


# ------------------------------------------------------------------------------ built-in kinds


def _op(name: str, value_fn: Callable[[Any], Any] | None) -> Any:
    from ... import aggregate

    if name not in OPS:
        raise BuilderError(f"unknown aggregate operation {name!r}; one of {sorted(OPS)}")
    op = getattr(aggregate, name)
    return op(value_fn) if OPS[name] and value_fn is not None else (op() if OPS[name] else op)


def _op_code(name: str, value: str | None) -> str:
    if OPS.get(name):
        return f"aggregate.{name}({value or ''})"
    return f"aggregate.{name}"


def _window_def(p: dict[str, Any]) -> Any:
    from ...processors.windowing import session, sliding, tumbling

    kind = p.get("window")
    if kind == "tumbling":
        return tumbling(p["size"])
    if kind == "sliding":
        return sliding(p["size"], p["slide"])
    if kind == "session":
        return session(p["gap"])
    raise BuilderError(f"unknown window kind {kind!r}")


def _window_code(p: dict[str, Any]) -> str:
    if p.get("window") == "sliding":
        return f"window.sliding({p['size']}, {p['slide']})"
    if p.get("window") == "session":
        return f"window.session({p['gap']})"
    return f"window.tumbling({p['size']})"


_P = "from jetbench.processors import "
_C = "from jetbench.processors.connectors import "
_AGG = "from jetbench import aggregate"
_WIN = "from jetbench import window"

KEY = Param("key", "code", "x", help="grouping key: an expression in x, or a function body")
OP = Param("op", "choice", "counting", choices=tuple(OPS), help="aggregate operation")
VALUE = Param("value", "code", "x", help="value summed / averaged / compared (for summing, averaging, min_by, max_by)")


def _value(p: dict[str, Any], f: dict[str, Any]) -> Any:
    return f.get("value") if OPS.get(p.get("op")) else None


def _builtin_kinds() -> list[Kind]:
    from ...processors import (
        accumulate_by_key,
        aggregate_by_key,
        collect_sink,
        combine_by_key,
        filter_processor,
        flat_map_processor,
        items_source,
        map_processor,
        noop_sink,
    )
    from ...processors.connectors import FilesSource, GeneratorSource
    from ...processors.watermarks import insert_watermarks
    from ...processors.windows import window_aggregate

    kinds = [
        Kind("items", "items", "source", False, True,
             (Param("items", "expr", "range(10)", help="a Python expression giving the items (evaluated at run)"),),
             lambda p, f, ns: items_source(eval_expr(p["items"], ns, "items")),
             lambda p, f: (f"items_source({p['items'].strip()})", {_P + "items_source"}),
             "emits the items of an iterable"),
        Kind("generator", "generator", "source", False, True,
             (Param("rate_per_s", "float", 1000.0, help="items per second over all instances"),
              Param("count", "int", 1000, optional=True, help="total items (empty: never ends)"),
              Param("timestamped", "bool", False, help="emit (ts, item) pairs"),
              Param("item_fn", "code", "", args=("s",), optional=True, help="item for sequence number s (empty: s)")),
             lambda p, f, ns: GeneratorSource(p["rate_per_s"], f.get("item_fn"), p["timestamped"], p["count"]),
             lambda p, f: (f"GeneratorSource({p['rate_per_s']!r}, {f.get('item_fn')}, {p['timestamped']!r}, "
                           f"{p['count']!r})", {_C + "GeneratorSource"}),
             "items at a rate on the wall clock"),
        Kind("files", "files", "source", False, True,
             (Param("pattern", "str", "data/*.txt", help="glob of the files to read (lines)"),
              Param("encoding", "str", "utf-8")),
             lambda p, f, ns: FilesSource(p["pattern"], p["encoding"]),
             lambda p, f: (f"FilesSource({p['pattern']!r}, {p['encoding']!r})", {_C + "FilesSource"}),
             "the lines of files matching a glob"),
        Kind("map", "map", "transform", True, True,
             (Param("fn", "code", "x", help="the new item: an expression in x, or a function body"),),
             lambda p, f, ns: map_processor(f["fn"]),
             lambda p, f: (f"map_processor({f['fn']})", {_P + "map_processor"}), "one item out per item in"),
        Kind("filter", "filter", "transform", True, True,
             (Param("fn", "code", "True", help="keep the item when true: an expression in x, or a function body"),),
             lambda p, f, ns: filter_processor(f["fn"]),
             lambda p, f: (f"filter_processor({f['fn']})", {_P + "filter_processor"}), "keeps matching items"),
        Kind("flat_map", "flat_map", "transform", True, True,
             (Param("fn", "code", "[x]", help="an iterable of items: an expression in x, or a function body"),),
             lambda p, f, ns: flat_map_processor(f["fn"]),
             lambda p, f: (f"flat_map_processor({f['fn']})", {_P + "flat_map_processor"}),
             "any number of items out per item in"),
        Kind("aggregate_by_key", "aggregate by key", "aggregate", True, True, (KEY, OP, VALUE),
             lambda p, f, ns: aggregate_by_key(f["key"], _op(p["op"], _value(p, f))),
             lambda p, f: (f"aggregate_by_key({f['key']}, {_op_code(p['op'], _value(p, f))})",
                           {_P + "aggregate_by_key", _AGG}),
             "emits (key, result) when the input completes"),
        Kind("accumulate_by_key", "accumulate by key", "aggregate", True, True, (KEY, OP, VALUE),
             lambda p, f, ns: accumulate_by_key(f["key"], _op(p["op"], _value(p, f))),
             lambda p, f: (f"accumulate_by_key({f['key']}, {_op_code(p['op'], _value(p, f))})",
                           {_P + "accumulate_by_key", _AGG}),
             "stage 1 of two: emits (key, accumulator)"),
        Kind("combine_by_key", "combine by key", "aggregate", True, True, (OP, VALUE),
             lambda p, f, ns: combine_by_key(_op(p["op"], _value(p, f))),
             lambda p, f: (f"combine_by_key({_op_code(p['op'], _value(p, f))})", {_P + "combine_by_key", _AGG}),
             "stage 2 of two: combines (key, accumulator) pairs"),
        Kind("insert_watermarks", "insert watermarks", "window", True, True,
             (Param("ts", "code", "", optional=True, help="event time (ms) of x (empty: x is a (ts, item) pair)"),
              Param("allowed_lag", "float", 0.0, help="ms"), Param("throttle_frame", "int", 1000, help="ms")),
             lambda p, f, ns: insert_watermarks(f.get("ts"), p["allowed_lag"], p["throttle_frame"]),
             lambda p, f: (f"insert_watermarks({f.get('ts')}, {p['allowed_lag']!r}, {p['throttle_frame']!r})",
                           {"from jetbench.processors.watermarks import insert_watermarks"}),
             "timestamps items and emits watermarks"),
        Kind("window", "window aggregate", "window", True, True,
             (Param("window", "choice", "tumbling", choices=("tumbling", "sliding", "session")),
              Param("size", "int", 1000, help="ms"), Param("slide", "int", 1000, help="ms (sliding)"),
              Param("gap", "int", 1000, help="ms (session)"),
              Param("key", "code", "", optional=True, help="grouping key (empty: one global window)"), OP, VALUE),
             lambda p, f, ns: window_aggregate(f.get("key"), _op(p["op"], _value(p, f)), _window_def(p)),
             lambda p, f: (f"window_aggregate({f.get('key')}, {_op_code(p['op'], _value(p, f))}, {_window_code(p)})",
                           {"from jetbench.processors.windows import window_aggregate", _AGG, _WIN}),
             "aggregates (ts, item) pairs per window"),
        Kind("collect", "collect", "sink", True, False, (),
             lambda p, f, ns: collect_sink(), lambda p, f: ("collect_sink()", {_P + "collect_sink"}),
             "the job's result is the list of items"),
        Kind("noop", "discard", "sink", True, False, (),
             lambda p, f, ns: noop_sink(), lambda p, f: ("noop_sink()", {_P + "noop_sink"}), "discards items"),
        Kind("processor", "processor class", "custom", True, True,
             (Param("cls", "str", "", help="a Processor subclass: a name in the notebook or module.Class"),),
             lambda p, f, ns: resolve_class(p["cls"], ns), _processor_code,
             "any Processor subclass"),
        Kind("custom", "custom supplier", "custom", True, True,
             (Param("label", "str", "", help="what the supplier was (kept from the DAG it came from)"),),
             _no_build, lambda p, f: ("custom_suppliers[{name!r}]", set()),
             "a supplier from code the palette does not know; kept as the object itself"),
    ]
    return kinds


def _no_build(p: dict[str, Any], f: dict[str, Any], ns: dict[str, Any]) -> Any:
    raise BuilderError("a custom supplier must be attached with set_supplier()")


def _processor_code(p: dict[str, Any], f: dict[str, Any]) -> tuple[str, set[str]]:
    path = p["cls"].strip()
    module, _, name = path.rpartition(".")
    if module:
        return name, {f"from {module} import {name}"}
    return path, set()


def resolve_class(path: str, ns: dict[str, Any]) -> Any:
    """A name from the notebook namespace, else ``module.Class`` imported (at build time only)."""
    path = (path or "").strip()
    if not path:
        raise BuilderError("processor: no class given")
    if path in ns:
        return ns[path]
    module, _, name = path.rpartition(".")
    if not module:
        if hasattr(builtins, path):
            return getattr(builtins, path)
        raise BuilderError(f"processor: no {path!r} in the notebook namespace")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise BuilderError(f"processor: cannot import {path!r}: {exc}") from exc


def class_path(cls: type) -> str:
    module = getattr(cls, "__module__", "") or ""
    name = cls.__qualname__
    if module in ("__main__", "builtins") or "<locals>" in name:
        return cls.__name__  # found by name in the notebook namespace
    return f"{module}.{name}"


# ------------------------------------------------------------------------------ registry


class Palette:
    """The kinds on offer: the built-ins plus registered `Processor` subclasses.

    >>> from jetbench.processors.sinks import NoopSinkP
    >>> p = Palette()
    >>> p.register(NoopSinkP).id, p.kind("processor:NoopSinkP").preset
    ('processor:NoopSinkP', {'cls': 'jetbench.processors.sinks.NoopSinkP'})
    """

    def __init__(self) -> None:
        self._kinds: dict[str, Kind] = {k.id: k for k in _builtin_kinds()}

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
        kind = Kind(f"processor:{cls.__name__}", label or cls.__name__, "custom", inputs, outputs, base.params,
                    base.build, base.code, (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else "",
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
