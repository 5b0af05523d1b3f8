"""A kind's parameters, declared once: a frozen dataclass that is the kind's vertex supplier.

A kind module declares its parameters as the fields of one `KindParams` subclass, each field
made by a parameter function of this module (`code`, `expr`, `number`, `flag`, `choice`, `text`):
its name, type and default are the dataclass field's, and what the DAG builder shows (help, the
arguments of a code parameter, the starting text) is the field's metadata. From that one
declaration the kind gets, without restating a parameter:

* the supplier's checks, each written once: a code parameter must be callable (or None when
  optional), a choice one of its choices, a number a number within its bounds; a kind adds the
  checks that relate two parameters in `KindParams.check`;
* the vertex supplier itself: the declaration *is* a `ProcessorSupplier` of the kind's processor
  (``processor``), made with the fields as keyword arguments, so ``params``, read-back
  (``made_by``), code fingerprints and pickling work as for any supplier; the kind's public
  supplier function is the class (``hash_join = HashJoin``);
* the Pipeline API's stage: a declaration that is also a `jetbench.processors.planning.StageSpec`
  plans itself (``stage.apply(hash_join(...))``), and a planning rule changes what the plan
  decides with `dataclasses.replace`;
* the DAG builder's kind (`KindParams.builder_kind`): its `Param`s, its build, its code export
  (a call of the supplier function with the parameters that differ from their defaults) and
  its read-back.

>>> from dataclasses import dataclass
>>> from jetbench.processors.callback_sink import CallbackSinkP
>>> @dataclass(frozen=True, eq=False, repr=False)
... class Callback(KindParams):
...     fn: Any = code("print(x)", help="called with every item")
...     processor = CallbackSinkP
...     function = "callback"
>>> Callback(len)
callback(len)
>>> Callback(3)
Traceback (most recent call last):
    ...
jetbench.processors.kind_params.KindParamError: callback: fn must be callable, got 3
>>> kind = Callback.builder_kind(id="cb", label="callback", category="sink", inputs=True, outputs=False)
>>> [p.name for p in kind.params], kind.code({"fn": "print(x)"}, {"fn": "print"})
(['fn'], ('callback(print)', {'from jetbench.processors.kind_params import callback'}))
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar

from ..core.errors import JetbenchError
from .builder_kind import (
    AGGREGATE_IMPORT,
    OP,
    OPS,
    VALUE,
    VALUE_OPS,
    BuilderError,
    Check,
    Kind,
    Param,
    Reader,
    eval_expr,
    operation,
    operation_code,
    read_operation,
)
from .supplier import ProcessorSupplier
from .window_definition import WindowDefinition, session, sliding, tumbling

#: the metadata key of a declared parameter
_PARAM = "jetbench.param"


class KindParamError(JetbenchError, ValueError):
    """An argument of a kind's supplier that it refuses; the message names the kind and the
    parameter."""


@dataclass(frozen=True)
class Declared:
    """How a field of a `KindParams` is checked and shown in the DAG builder (its metadata).

    ``type`` is the builder's parameter type (`jetbench.processors.builder_kind.Param`) or
    ``op`` (an aggregate operation: the builder's ``op`` and ``value`` parameters); ``shown`` the
    text or value a new builder vertex starts with; ``builder=False`` keeps the parameter out of
    the builder (set by the plan or fixed by the kind).
    """

    type: str
    shown: Any = None
    help: str = ""
    args: tuple[str, ...] = ("x",)
    choices: tuple[Any, ...] = ()
    optional: bool = False
    minimum: float | None = None
    strict: bool = False
    integer: bool = False
    when: tuple[str, tuple[Any, ...]] | None = None
    asynchronous: bool = False
    builder: bool = True
    was: tuple[str, ...] = ()

    def check(self, kind: str, name: str, value: Any) -> None:
        """Raise `KindParamError` unless ``value`` is a valid value of parameter ``name``."""
        if value is None and self.optional:
            return
        if self.type == "code" and not callable(value):
            raise KindParamError(f"{kind}: {name} must be callable{' or None' if self.optional else ''}, got {value!r}")
        if self.type == "choice" and value not in self.choices:
            raise KindParamError(f"{kind}: {name} must be one of {self.choices}, got {value!r}")
        if self.type in ("int", "float"):
            wanted = int if self.integer or self.type == "int" else (int, float)
            bound = "" if self.minimum is None else f" {'>' if self.strict else '>='} {self.minimum:g}"
            what = f"{'an int' if wanted is int else 'a number'}{bound}{' or None' if self.optional else ''}"
            if isinstance(value, bool) or not isinstance(value, wanted) or math.isnan(value):
                raise KindParamError(f"{kind}: {name} must be {what}, got {value!r}")
            if self.minimum is not None and (value <= self.minimum if self.strict else value < self.minimum):
                raise KindParamError(f"{kind}: {name} must be {what}, got {value!r}")
            if self.type == "float" and math.isinf(value):
                raise KindParamError(f"{kind}: {name} must be finite, got {value!r}")
        if self.type == "str" and not isinstance(value, str):
            raise KindParamError(f"{kind}: {name} must be a str, got {value!r}")

    def params(self, name: str) -> tuple[Param, ...]:
        """The builder's parameters for this one."""
        if self.type == "op":
            if name == "op":
                return OP, VALUE
            op, value = op_names(name)
            return (dataclasses.replace(OP, name=op),
                    dataclasses.replace(VALUE, name=value, when=(op, VALUE.when[1] if VALUE.when else ())))
        if self.type == "window":
            return WINDOW_PARAMS
        shown = self.shown
        return (Param(name, self.type, shown, args=self.args, choices=tuple(self.choices), optional=self.optional,
                      help=self.help, minimum=self.minimum, strict=self.strict, when=self.when,
                      asynchronous=self.asynchronous, was=self.was),)

    def value(self, name: str, p: dict[str, Any], f: dict[str, Any], ns: dict[str, Any], default: Any) -> Any:
        """The argument the builder's parameter values mean (at build time)."""
        if self.when is not None and p.get(self.when[0]) not in self.when[1]:
            return default
        if self.type == "op":
            op, value = op_names(name)
            return operation(p[op], f.get(value) if p.get(op) in VALUE_OPS else None)
        if self.type == "window":
            return window_of(p)
        if self.type in ("code", "steps"):
            return f.get(name)
        raw = p.get(name)
        if self.optional and raw in ("", None):
            return None
        if self.type == "expr":
            return eval_expr(str(raw), ns, name)
        return raw

    def code(self, name: str, p: dict[str, Any], f: dict[str, Any], default: Any) -> str | None:
        """The argument as code text; None when it is the parameter's default (left out)."""
        if self.when is not None and p.get(self.when[0]) not in self.when[1]:
            return None
        if self.type == "op":
            op, value = op_names(name)
            return operation_code(p[op], f.get(value) if p.get(op) in VALUE_OPS else None)
        if self.type == "window":
            return window_code(p)
        if self.type in ("code", "steps"):
            text = f.get(name)
            return None if text is None and default is None else str(text)
        raw = p.get(name)
        if self.optional and raw in ("", None):
            return None if default is None else "None"
        if self.type == "expr":
            return str(raw).strip()
        same = default is not MISSING and raw == default and isinstance(raw, bool) == isinstance(default, bool)
        return None if same else repr(raw)

    def read(self, name: str, value: Any, reader: Reader) -> dict[str, Any]:
        """The builder's parameter values that show ``value``."""
        if self.type == "op":
            names = dict(zip(("op", "value"), op_names(name), strict=True))
            return {names[k]: v for k, v in read_operation(value, reader).items()}
        if self.type == "window":
            return read_window(value)
        if value is None and self.optional:
            return {name: ""}
        if self.type == "code":
            return {name: reader.code(value, name, self.args, self.asynchronous)}
        if self.type == "expr":
            return {name: reader.literal(value, name)}
        if self.type == "bool":
            return {name: bool(value)}
        if self.type == "float":
            return {name: float(value)}
        return {name: value}


def op_names(name: str) -> tuple[str, str]:
    """The builder's names of an aggregate operation field ``name``: its choice and its value
    function, ``op`` and ``value`` for a field named ``op``, ``op1`` and ``value1`` for ``op1``.

    >>> op_names("op"), op_names("op1")
    (('op', 'value'), ('op1', 'value1'))
    """
    return name, name.replace("op", "value", 1) if "op" in name else f"{name}_value"


def _field(declared: Declared, default: Any = MISSING) -> Any:
    return dataclasses.field(default=default, metadata={_PARAM: declared})


def code(shown: str = "x", *, help: str = "", args: tuple[str, ...] = ("x",), optional: bool = False,
         required: bool | None = None, when: tuple[str, tuple[Any, ...]] | None = None,
         asynchronous: bool = False, was: tuple[str, ...] = ()) -> Any:
    """A function parameter; ``optional``: it may be None (the builder shows None as empty),
    its default unless ``required``. The builder shows it as code in ``args``, starting as
    ``shown``; ``was``: the names it had in the builder before (documents using them load)."""
    required = not optional if required is None else required
    return _field(Declared("code", shown, help, args, optional=optional, when=when, asynchronous=asynchronous,
                           was=was), MISSING if required else None)


def expr(shown: str, *, help: str = "") -> Any:
    """A required parameter the builder shows as a Python expression (evaluated at build time)."""
    return _field(Declared("expr", shown, help))


def number(default: Any = MISSING, *, shown: Any = MISSING, help: str = "", minimum: float | None = None,
           strict: bool = False, integer: bool = False, optional: bool = False) -> Any:
    """A number (``integer``: an int) >= ``minimum`` (> with ``strict``); ``optional``: may be
    None, which the builder shows as empty."""
    shown = default if shown is MISSING else shown
    kind = "int" if integer else "float"
    return _field(Declared(kind, shown, help, minimum=minimum, strict=strict, integer=integer, optional=optional),
                  default)


def flag(default: bool = False, *, shown: bool | None = None, help: str = "",
         when: tuple[str, tuple[Any, ...]] | None = None) -> Any:
    """A bool (the builder starts it as ``shown``, by default as ``default``)."""
    return _field(Declared("bool", default if shown is None else shown, help, when=when), default)


def choice(choices: tuple[str, ...], default: str, *, help: str = "") -> Any:
    """One of ``choices``."""
    return _field(Declared("choice", default, help, choices=choices), default)


def text(default: Any = MISSING, *, shown: str = "", help: str = "", was: tuple[str, ...] = ()) -> Any:
    """A str."""
    return _field(Declared("str", default if shown == "" and default is not MISSING else shown, help, was=was),
                  default)


def aggregate_op() -> Any:
    """An aggregate operation of `jetbench.aggregate`: the builder's ``op`` and ``value`` (for a
    field named otherwise, see `op_names`)."""
    return _field(Declared("op"))


def window_definition() -> Any:
    """A `jetbench.window` definition: the builder's ``window`` (tumbling, sliding, session) and
    its ``size``, ``slide`` or ``gap``."""
    return _field(Declared("window"))


def planned(default: Any, *, check: str | None = None) -> Any:
    """A parameter the Pipeline planner sets and the builder does not show (``check``: the
    builder type it is checked as, e.g. ``bool``)."""
    return _field(Declared(check or "any", default, builder=False), default)


def param_fields(declaration: Any) -> list[dataclasses.Field[Any]]:
    """The parameters of a kind's declaration (a `KindParams` class or instance): its dataclass
    fields made by a parameter function. Not the other fields a module compiled with mypyc gives
    it: mypyc annotates each class attribute it assigns (``processor = ...``, ``combines =
    False``) in ``__annotations__``, where `dataclass` takes it for a field."""
    return [f for f in fields(declaration) if _declared(f) is not None]


def _declared(f: dataclasses.Field[Any]) -> Declared | None:
    found = f.metadata.get(_PARAM)
    return found if isinstance(found, Declared) else None


class KindParams(ProcessorSupplier):
    """Base of a kind's declaration: a frozen dataclass (``@dataclass(frozen=True, eq=False,
    repr=False)``) of the processor's parameters, and the vertex supplier of ``processor``.

    A subclass sets ``processor`` (called with the fields as keyword arguments, once per
    instance) and ``function`` (the name of its public supplier function, for errors and code
    export), and may override `check` (checks across parameters), `describe` (the supplier's
    repr), `arguments` (what the processor is called with, when it differs from the fields) and
    ``merge_results``.
    """

    function: ClassVar[str] = ""

    def __post_init__(self) -> None:
        name = self.function or type(self).__name__
        for f in param_fields(self):
            declared = _declared(f)
            if declared is not None:
                declared.check(name, f.name, getattr(self, f.name))
        self.check()
        merge = getattr(type(self), "merge_results", None)
        self._bind(self.processor, (), self.arguments(), None, merge)
        object.__setattr__(self, "label", self.describe())  # after binding: it may read ``params``

    def check(self) -> None:
        """Checks that relate two parameters (raise `KindParamError`)."""

    def arguments(self) -> dict[str, Any]:
        """The processor's keyword arguments: the fields."""
        return {f.name: getattr(self, f.name) for f in param_fields(self)}

    def describe(self) -> str:
        """The supplier's repr: ``function(first argument's name)``, as a user reads it."""
        first = next(iter(param_fields(self)), None)
        if first is None:
            return f"{self.function}()"
        value = getattr(self, first.name)
        return f"{self.function}({getattr(value, '__name__', None) or type(value).__name__})"

    # -- the DAG builder's kind ------------------------------------------------------------------

    @classmethod
    def builder_fields(cls) -> list[tuple[dataclasses.Field[Any], Declared]]:
        found = []
        for f in param_fields(cls):
            declared = _declared(f)
            if declared is not None and declared.builder:
                found.append((f, declared))
        return found

    @classmethod
    def builder_params(cls) -> tuple[Param, ...]:
        """The builder's `Param`s, one per field (two for an aggregate operation)."""
        return tuple(p for f, d in cls.builder_fields() for p in d.params(f.name))

    @classmethod
    def build(cls, p: dict[str, Any], f: dict[str, Any], ns: dict[str, Any]) -> KindParams:
        """The supplier the builder's parameter values ``p`` (and compiled functions ``f``) mean."""
        values = {fd.name: d.value(fd.name, p, f, ns, _default(fd)) for fd, d in cls.builder_fields()}
        made: KindParams = cls(**values)  # type: ignore[call-arg]  # the dataclass's own __init__
        return made

    @classmethod
    def code(cls, p: dict[str, Any], f: dict[str, Any]) -> tuple[str, set[str]]:
        """The supplier as code: a call of ``function``, required parameters by position, the
        others by name where they differ from their defaults."""
        args = []
        for fd, d in cls.builder_fields():
            default = _default(fd)
            value = d.code(fd.name, p, f, default)
            if default is MISSING:
                args.append(str(value))
            elif value is not None:
                args.append(f"{fd.name}={value}")
        imports = {f"from {cls.__module__} import {cls.function}"}
        if any(d.type == "op" for _, d in cls.builder_fields()):
            imports.add(AGGREGATE_IMPORT)
        if any(d.type == "window" for _, d in cls.builder_fields()):
            imports.add(WINDOW_IMPORT)
        return f"{cls.function}({', '.join(args)})", imports

    @classmethod
    def read(cls, supplier: Any, reader: Reader) -> dict[str, Any] | None:
        """The builder's parameter values of ``supplier``, None if it is not of this kind."""
        if not isinstance(supplier, cls):
            return None
        values: dict[str, Any] = {}
        for fd, d in cls.builder_fields():
            values.update(d.read(fd.name, getattr(supplier, fd.name), reader))
        return values

    @classmethod
    def builder_kind(cls, *, id: str, label: str, category: str, inputs: bool, outputs: bool,
                     description: str = "", in_ports: tuple[str, ...] = (),
                     edge_defaults: Callable[[dict[str, Any], int], dict[str, Any]] | None = None,
                     parallelism: int | None = None, check: Check | None = None) -> Kind:
        """The palette entry of this kind, all of it derived from the declaration but how it is
        shown (``id``, ``label``, ``category``, its inputs and outputs ...)."""
        return Kind(id=id, label=label, category=category, inputs=inputs, outputs=outputs,
                    params=cls.builder_params(), build=cls.build, code=cls.code, description=description,
                    read=cls.read, in_ports=in_ports, edge_defaults=edge_defaults, parallelism=parallelism,
                    check=check)


#: the builder's parameters of a window definition
WINDOW_PARAMS = (
    Param("window", "choice", "tumbling", choices=("tumbling", "sliding", "session")),
    Param("size", "int", 1000, minimum=0, strict=True, when=("window", ("tumbling", "sliding")), help="ms"),
    Param("slide", "int", 1000, minimum=0, strict=True, when=("window", ("sliding",)), help="ms (sliding)"),
    Param("gap", "int", 1000, minimum=0, strict=True, when=("window", ("session",)), help="ms (session)"),
    Param("early", "int", 0, minimum=0, help="early results every that many ms (0: none)"),
)
WINDOW_IMPORT = "from jetbench import window"


def window_of(p: dict[str, Any]) -> WindowDefinition:
    """The window definition the builder's ``window``/``size``/``slide``/``gap`` mean."""
    kind = p.get("window")
    if kind == "tumbling":
        wd = tumbling(p["size"])
    elif kind == "sliding":
        wd = sliding(p["size"], p["slide"])
    elif kind == "session":
        wd = session(p["gap"])
    else:
        raise BuilderError(f"unknown window kind {kind!r}")
    return wd.early_results_period(p["early"]) if p.get("early") else wd


def window_code(p: dict[str, Any]) -> str:
    """`window_of` as code."""
    early = f".early_results_period({p['early']})" if p.get("early") else ""
    if p.get("window") == "sliding":
        return f"window.sliding({p['size']}, {p['slide']}){early}"
    if p.get("window") == "session":
        return f"window.session({p['gap']}){early}"
    return f"window.tumbling({p['size']}){early}"


def read_window(wd: WindowDefinition) -> dict[str, Any]:
    """The builder's parameters of a window definition."""
    early = {"early": wd.early_results_ms} if wd.early_results_ms else {}
    if wd.kind == "session":
        return {"window": "session", "gap": wd.gap, **early}
    return {"window": "tumbling" if wd.is_tumbling else "sliding", "size": wd.size, "slide": wd.slide, **early}


def _default(f: dataclasses.Field[Any]) -> Any:
    return f.default


__all__ = ["OPS", "KindParamError", "KindParams", "aggregate_op", "choice", "code", "expr", "flag", "number",
           "planned", "text"]
