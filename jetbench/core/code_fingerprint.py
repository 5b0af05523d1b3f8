"""The fingerprint of a vertex's code, kept with each snapshot so that a job resumed with changed
code is noticed (`jetbench.core.snapshot` compares them).

A vertex's fingerprint is a digest per part: for a supplier that names its processor and
arguments (``processor`` and ``params``, as `ProcessorSupplier` does) the processor class and
each argument that holds code; for any other supplier, the supplier itself. A part's digest is
sha256 over what its code *is*, never over a pickle nor an ``id()`` or ``hash()`` (which change
from process to process):

* a function: its code object (bytecode, names, constants, recursively into nested code), the
  functions and classes of its own module that it names (so an edited helper is seen), and the
  code in its defaults and closure;
* a class: each method's code, and its bases'; a class or function of jetbench itself (or of
  any module outside the user's) by its qualified name only: jetbench's own saved state is
  covered by `SNAPSHOT_FORMAT`, and the compiled and interpreted builds must agree;
* an object: its class and the code in its attributes (a ``functools.partial``, an aggregate
  operation holding the user's functions); data (numbers, strings, large collections) is not
  code and counts for nothing, so a changed constant argument is not a changed fingerprint,
  while a changed constant inside a function is.

Line numbers and file names are left out: moving a function in its file changes nothing.

>>> notebook = {"__name__": "__main__"}  # a user's module: its functions are walked
>>> exec("def area(r): return 3.14 * r * r", notebook)
>>> first = fingerprint(notebook["area"])
>>> exec("def area(r): return 3.14159 * r * r", notebook)
>>> first == fingerprint(notebook["area"]), len(first)
(False, 16)
>>> fingerprint(len) == fingerprint(len), fingerprint(12) is None
(True, True)
"""

from __future__ import annotations

import functools
import hashlib
import sys
import types
from collections.abc import Iterable
from typing import Any

__all__ = ["changed_parts", "fingerprint", "vertex_fingerprints"]

#: collections longer than this are data, not code: they are not walked
_MAX_ITEMS = 64
#: how deep into objects' attributes the walk goes
_MAX_DEPTH = 6
_DATA = (int, float, complex, str, bytes, bytearray, bool, type(None), range, memoryview)


def _foreign(obj: Any) -> bool:
    """Whether ``obj`` (a class or function) belongs to jetbench or to a module outside the
    user's code (the standard library, an installed package): named, not walked."""
    module = getattr(obj, "__module__", None) or ""
    if module == "jetbench" or module.startswith("jetbench."):
        return True
    if module in ("__main__", "") or module.startswith("__"):
        return False
    top = sys.modules.get(module.partition(".")[0])
    path = getattr(top, "__file__", None) or ""
    return module in sys.stdlib_module_names or module.partition(".")[0] in sys.stdlib_module_names or \
        "site-packages" in path or "dist-packages" in path or module == "builtins"


class _Walk:
    """One digest: the parts of an object's code fed to sha256, each object once."""

    def __init__(self) -> None:
        self.h = hashlib.sha256()
        self.seen: set[int] = set()
        self.found = False  # whether any code was fed

    def feed(self, *words: str) -> None:
        for w in words:
            self.h.update(w.encode("utf-8", "surrogatepass"))
            self.h.update(b"\0")

    def code(self, co: types.CodeType) -> None:
        self.found = True
        self.feed("code", co.co_name, repr(co.co_argcount), repr(co.co_kwonlyargcount), repr(co.co_flags))
        self.h.update(co.co_code)
        self.feed(*co.co_names, "|", *co.co_varnames, "|", *co.co_freevars, "|", *co.co_cellvars)
        for const in co.co_consts:
            self.const(const)

    def const(self, c: Any) -> None:
        if isinstance(c, types.CodeType):
            self.code(c)
        elif isinstance(c, tuple):
            self.feed("(")
            for x in c:
                self.const(x)
            self.feed(")")
        elif isinstance(c, frozenset):
            self.feed("{", *sorted(repr(x) for x in c), "}")
        else:
            self.feed(type(c).__name__, repr(c))

    def value(self, obj: Any, depth: int = 0) -> None:
        """Feed the code in ``obj``; data feeds nothing."""
        if isinstance(obj, _DATA) or depth > _MAX_DEPTH:
            return
        if id(obj) in self.seen:
            return
        self.seen.add(id(obj))
        if isinstance(obj, types.FunctionType):
            self.function(obj, depth)
        elif isinstance(obj, type):
            self.cls(obj, depth)
        elif isinstance(obj, types.MethodType):
            self.value(obj.__func__, depth + 1)
            self.value(type(obj.__self__), depth + 1)
        elif isinstance(obj, functools.partial):
            self.feed("partial")
            self.value(obj.func, depth + 1)
            self.items(obj.args, depth)
            self.items(sorted(obj.keywords.items()), depth)
        elif isinstance(obj, types.BuiltinFunctionType | types.ModuleType):
            self.found = True
            self.feed(getattr(obj, "__module__", None) or "", getattr(obj, "__qualname__", obj.__name__))
        elif isinstance(obj, dict):
            if len(obj) <= _MAX_ITEMS:
                self.items(sorted(obj.items(), key=lambda kv: repr(kv[0])), depth)
        elif isinstance(obj, list | tuple):
            if len(obj) <= _MAX_ITEMS:
                self.items(obj, depth)
        elif isinstance(obj, set | frozenset):
            if len(obj) <= _MAX_ITEMS:
                self.items(sorted(obj, key=repr), depth)
        else:  # an instance: its class, and the code among its attributes
            self.cls(type(obj), depth + 1)
            attributes = _attributes(obj)
            if _foreign(type(obj)):  # jetbench's caches (a chain's generated function) are not the user's code
                attributes = {k: v for k, v in attributes.items() if not k.startswith("_")}
            self.value(attributes, depth + 1)

    def items(self, values: Iterable[Any], depth: int) -> None:
        for v in values:
            self.value(v, depth + 1)

    def function(self, fn: types.FunctionType, depth: int) -> None:
        if _foreign(fn):
            self.found = True
            self.feed("function", fn.__module__, fn.__qualname__)
            return
        self.code(fn.__code__)
        self.items(fn.__defaults__ or (), depth)
        self.items(sorted((fn.__kwdefaults__ or {}).items()), depth)
        for cell in fn.__closure__ or ():
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            self.value(contents, depth + 1)
        # the functions and classes of its own module it names (helpers it calls)
        module = fn.__module__
        for name in sorted(_names(fn.__code__)):
            target = fn.__globals__.get(name)
            if isinstance(target, types.FunctionType | type) and getattr(target, "__module__", None) == module:
                self.feed("global", name)
                self.value(target, depth + 1)

    def cls(self, cls: type, depth: int) -> None:
        self.found = True
        self.feed("class", cls.__qualname__)
        if _foreign(cls):
            self.feed(cls.__module__)
            return
        for name, attr in sorted(vars(cls).items()):
            if isinstance(attr, staticmethod | classmethod):
                attr = attr.__func__
            if isinstance(attr, property):
                for accessor in (attr.fget, attr.fset, attr.fdel):
                    if accessor is not None:
                        self.feed(name)
                        self.value(accessor, depth + 1)
            elif isinstance(attr, types.FunctionType | type):
                self.feed(name)
                self.value(attr, depth + 1)
        for base in cls.__bases__:
            self.value(base, depth + 1)


def _attributes(obj: Any) -> dict[str, Any]:
    """An instance's attributes: its ``__dict__`` and its slots."""
    attributes = dict(getattr(obj, "__dict__", None) or {})
    for klass in type(obj).__mro__:
        slots = vars(klass).get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                attributes[name] = getattr(obj, name)
    return attributes


def _names(co: types.CodeType) -> set[str]:
    names = set(co.co_names)
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names(c)
    return names


def fingerprint(obj: Any) -> str | None:
    """The digest (16 hex digits) of the code in ``obj``, or None if it holds none (data) or
    cannot be walked (an object whose attributes raise: it is then not compared, never a
    failed job)."""
    walk = _Walk()
    try:
        walk.value(obj)
    except Exception:
        return None
    return walk.h.hexdigest()[:16] if walk.found else None


def vertex_fingerprints(supplier: Any) -> dict[str, str]:
    """A vertex supplier's fingerprint, part name to digest: ``processor`` and ``argument
    'name'`` for a supplier naming its processor and arguments, else ``supplier``."""
    processor, params = getattr(supplier, "processor", None), getattr(supplier, "params", None)
    if processor is None or not isinstance(params, dict):
        digest = fingerprint(supplier)
        return {"supplier": digest} if digest is not None else {}
    parts = {"processor": fingerprint(processor) or ""}
    for name, value in params.items():
        digest = fingerprint(value)
        if digest is not None:
            parts[f"argument {name!r}"] = digest
    return parts


def changed_parts(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """What differs between a vertex's fingerprint then (``old``) and now, in words."""
    changes = [f"{part} changed" for part in sorted(old.keys() & new.keys()) if old[part] != new[part]]
    changes += [f"{part} is new" for part in sorted(new.keys() - old.keys())]
    changes += [f"{part} is gone" for part in sorted(old.keys() - new.keys())]
    return changes
