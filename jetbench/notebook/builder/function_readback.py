"""Functions read back as code text, so a DAG built in code opens in the builder with editable
code fields.

`function_code` turns a function into the text a ``code`` parameter holds: an expression in the
parameter's arguments (``x * 2``) or a function body. It reads

- functions the builder compiled (they keep their text),
- lambdas, from their source (``inspect``), picking the right one when a line holds several,
- named functions: ``name(x)`` when the notebook namespace (or the builtins) has that name for
  that very function, ``from module import name`` + ``return name(x)`` when it can be imported,
  else the body of its ``def`` from the source,
- the small wrappers the pipeline planner adds (event keys, peek, co-group tags).

Text is only produced when it means the same function in the namespace the builder compiles
with: every free name must resolve there to the same object. Otherwise `Unreadable` says why,
and the builder keeps the function as an object (an opaque vertex).

>>> def double(v):
...     return v * 2
>>> function_code(double, ("x",), {"double": double})
'double(x)'
>>> function_code(lambda item: item % 5, ("x",), {})
'x % 5'
>>> function_code(lambda x: OFFSET + x, ("x",), {})
Traceback (most recent call last):
...
jetbench.processors.builder_kind.Unreadable: its code uses OFFSET, which the notebook namespace does not have
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import textwrap
import types
from typing import Any

from ...processors.builder_kind import Unreadable
from ...processors.function_source import body_without_docstring, copy_tree, lambda_node
from ...processors.supplier import builder_code
from .code_text import is_expression

_MISSING = object()
_SIMPLE = (int, float, complex, str, bytes, bool, type(None))




def function_code(fn: Any, args: tuple[str, ...] = ("x",), ns: dict[str, Any] | None = None,
                  asynchronous: bool = False) -> str:
    """The code text of ``fn`` as a function of ``args`` (see the module doc); raises `Unreadable`.

    ``args`` may hold expressions (``("x[1]",)``): the function applied to them. With
    ``asynchronous`` the text is the body of an ``async def`` (``fn``'s awaitable is awaited).
    """
    ns = {} if ns is None else ns
    if fn is None or not callable(fn):
        raise Unreadable(f"{fn!r} is not a function")
    code = builder_code(fn)
    if code is not None:
        own = tuple(getattr(fn, "__jetbench_args__", ("x",)))
        if asynchronous and not inspect.iscoroutinefunction(fn):
            raise Unreadable("a plain function where an async one is expected")
        return apply_args(code, own, args)
    wrapped = _wrapper_code(fn, args, ns)
    if wrapped is not None:
        return wrapped
    if isinstance(fn, functools.partial):
        raise Unreadable("a functools.partial (write it as a lambda to edit it here)")
    if getattr(fn, "__name__", None) == "<lambda>":
        text = _lambda_code(fn, args, ns)
        return f"await {_paren(text)}" if asynchronous else text
    return _named_code(fn, args, ns, asynchronous)


def code_or_reason(fn: Any, args: tuple[str, ...], ns: dict[str, Any],
                   asynchronous: bool = False) -> tuple[str | None, str]:
    """``(text, "")``, or ``(None, why)`` when `function_code` cannot read ``fn``."""
    try:
        return function_code(fn, args, ns, asynchronous), ""
    except Unreadable as exc:
        return None, str(exc)


# ------------------------------------------------------------------------------ wrappers


def _wrapper_code(fn: Any, args: tuple[str, ...], ns: dict[str, Any]) -> str | None:
    from ...processors.co_group import Tag
    from ...processors.planning import EventKey
    from ...processors.transform import Peek

    if isinstance(fn, EventKey) and len(args) == 1:
        return function_code(fn.key_fn, (f"{_paren(args[0])}[1]",), ns)
    if isinstance(fn, Peek) and len(args) == 1:
        inner = function_code(fn.fn, args, ns)
        if not is_expression(inner):
            raise Unreadable("a peek of a function that is not one expression")
        return f"{inner}\nreturn {args[0]}"
    if isinstance(fn, Tag) and len(args) == 1:
        key = function_code(fn.key_fn, args, ns)
        if not is_expression(key):
            raise Unreadable("a co-group key that is not one expression")
        return f"({fn.side!r}, {key}, {args[0]})"
    return None


# ------------------------------------------------------------------------------ lambdas


def _lambda_code(fn: types.FunctionType, args: tuple[str, ...], ns: dict[str, Any]) -> str:
    node = _find_lambda(fn)
    params = [a.arg for a in node.args.args]
    if len(params) != len(args):
        raise Unreadable(f"a lambda of {len(params)} argument(s) where {len(args)} are expected")
    _check_names(fn, _free_names(node.body, params), ns)
    return _substitute(node.body, params, args)


def _find_lambda(fn: types.FunctionType) -> ast.Lambda:
    found = lambda_node(fn.__code__)
    if isinstance(found, str):
        raise Unreadable(found)
    return found


# ------------------------------------------------------------------------------ named functions


def _named_code(fn: Any, args: tuple[str, ...], ns: dict[str, Any], asynchronous: bool) -> str:
    owner = getattr(fn, "__self__", None)
    if owner is not None and not inspect.ismodule(owner) and not isinstance(owner, type):
        raise Unreadable(f"a bound method ({_qualname(fn) or fn!r}) (wrap it in a lambda to edit it here)")
    qualname = _qualname(fn)
    if qualname is None:
        raise Unreadable(f"a {type(fn).__name__} object, not a function")
    is_async = inspect.iscoroutinefunction(fn)
    call = f"{qualname}({', '.join(args)})"
    if "<locals>" not in qualname:
        if _is(_lookup(qualname, ns), fn):
            return f"await {call}" if asynchronous else call
        module = getattr(fn, "__module__", None)
        if module and module not in ("__main__", "builtins") and _is(_imported(module, qualname), fn):
            head = qualname.split(".")[0]
            return f"from {module} import {head}\nreturn {'await ' if asynchronous else ''}{call}"
    if isinstance(fn, types.FunctionType):
        if asynchronous != is_async:
            raise Unreadable(f"{qualname} is {'an async' if is_async else 'a plain'} function and "
                             "cannot be found by name in the notebook namespace")
        return _def_body(fn, args, ns)
    raise Unreadable(f"{qualname} cannot be found by name in the notebook namespace or imported")


def _is(found: Any, fn: Any) -> bool:
    """``found`` is ``fn``: the same object, or an equal method bound to a class (``dict.fromkeys``)."""
    return found is fn or (getattr(fn, "__self__", None) is not None and found == fn)


def _qualname(fn: Any) -> str | None:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if not isinstance(name, str) or not all(part.isidentifier() or part == "<locals>" for part in name.split(".")):
        return None
    return name


def _lookup(qualname: str, ns: dict[str, Any]) -> Any:
    head, *rest = qualname.split(".")
    obj = ns[head] if head in ns else getattr(builtins, head, _MISSING)
    for part in rest:
        obj = getattr(obj, part, _MISSING)
    return obj


def _imported(module: str, qualname: str) -> Any:
    try:
        obj: Any = importlib.import_module(module)
    except Exception:  # any import failure: not importable
        return _MISSING
    for part in qualname.split("."):
        obj = getattr(obj, part, _MISSING)
    return obj


def _def_body(fn: types.FunctionType, args: tuple[str, ...], ns: dict[str, Any]) -> str:
    name = fn.__qualname__
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        raise Unreadable(f"{name} cannot be found by name in the notebook namespace, and its source is not "
                         "available") from None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.decorator_list:
        raise Unreadable(f"{name}: its source is not a plain def")
    a = node.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or len(a.args) != len(args):
        raise Unreadable(f"{name} takes other arguments than ({', '.join(args)})")
    params = [p.arg for p in a.args]
    body = body_without_docstring(node)
    if not body:
        raise Unreadable(f"{name} has an empty body")
    module = ast.Module(body=body, type_ignores=[])
    _check_names(fn, _free_names(module, params), ns)
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        # ``return <expression>``: the expression, as the builder writes one-line code
        expr = body[0].value
        segment = ast.get_source_segment(source, expr)
        if params == list(args) and segment is not None and "\n" not in segment:
            return segment
        return apply_args(ast.unparse(expr), tuple(params), args)
    if params == list(args):  # keep the text as written (comments too)
        lines = source.splitlines()
        return textwrap.dedent("\n".join(lines[body[0].lineno - 1:node.end_lineno])).strip("\n")
    return apply_args(ast.unparse(module), tuple(params), args)


# ------------------------------------------------------------------------------ names


def _free_names(node: ast.AST, params: list[str] | tuple[str, ...]) -> set[str]:
    """Names read in ``node`` that it does not bind itself (arguments, assignments, imports, ...)."""
    bound, loads = set(params), set[str]()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            (loads if isinstance(n.ctx, ast.Load) else bound).add(n.id)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.ExceptHandler):
            if n.name:  # an ``except E:`` binds no name
                bound.add(n.name)
        elif isinstance(n, ast.Global | ast.Nonlocal):
            loads.update(n.names)
    return loads - bound


def _check_names(fn: types.FunctionType, names: set[str], ns: dict[str, Any]) -> None:
    """Raise `Unreadable` unless every name means in ``ns`` what it means to ``fn``."""
    closure = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
        try:
            closure[name] = cell.cell_contents
        except ValueError:  # an empty cell
            closure[name] = _MISSING
    fn_globals = getattr(fn, "__globals__", {})
    missing, different = [], []
    for name in sorted(names):
        if name in closure:
            value = closure[name]
        elif name in fn_globals:
            value = fn_globals[name]
        else:
            value = getattr(builtins, name, _MISSING)
        there = ns[name] if name in ns else getattr(builtins, name, _MISSING)
        if there is _MISSING:
            missing.append(name)
        elif not _same(there, value):
            different.append(name)
    if missing:
        raise Unreadable(f"its code uses {', '.join(missing)}, which the notebook namespace does not have")
    if different:
        raise Unreadable(f"its code uses {', '.join(different)}, which the notebook namespace binds to something else")


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    return type(a) is type(b) and isinstance(a, _SIMPLE) and a == b


# ------------------------------------------------------------------------------ text


def _paren(text: str) -> str:
    """``text`` as an operand: parenthesised unless it is a name, call, attribute or subscript."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return f"({text})"
    return text.strip() if isinstance(node, ast.Name | ast.Call | ast.Attribute | ast.Subscript | ast.Constant) \
        else f"({text.strip()})"


def _substitute(expr: ast.expr, params: list[str] | tuple[str, ...], args: tuple[str, ...]) -> str:
    """The text of ``expr`` with each parameter replaced by the matching argument expression."""
    if list(params) == list(args):
        return ast.unparse(expr)
    new = {p: ast.parse(a, mode="eval").body for p, a in zip(params, args, strict=True) if p != a}
    arg_names = {n.id for a in new.values() for n in ast.walk(a) if isinstance(n, ast.Name)}
    if arg_names & (_free_names(expr, params) | _bound_names(expr)):
        raise Unreadable("renaming its arguments would capture another name")
    return ast.unparse(_Replace(new).visit(copy_tree(expr)))


def _bound_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)} | \
        {n.arg for n in ast.walk(node) if isinstance(n, ast.arg)}


def apply_args(code: str, params: tuple[str, ...], args: tuple[str, ...]) -> str:
    """``code`` (an expression or body in ``params``) rewritten as one in ``args``.

    >>> apply_args("v % 5", ("v",), ("x[1]",))
    'x[1] % 5'
    >>> print(apply_args("y = x\\nreturn y", ("x",), ("x[1]",)))
    x = x[1]
    y = x
    return y
    """
    if tuple(params) == tuple(args):
        return code
    if len(params) != len(args):
        raise Unreadable(f"a function of {len(params)} argument(s) where {len(args)} are expected")
    if is_expression(code):
        return _substitute(ast.parse(code.strip(), mode="eval").body, params, args)
    if all(a.isidentifier() for a in args):
        tree = ast.parse(textwrap.dedent(code))
        arg_names = set(args) - set(params)
        if arg_names & (_free_names(tree, params) | _bound_names(tree)):
            raise Unreadable("renaming its arguments would capture another name")
        return ast.unparse(_Replace({p: ast.Name(a, ast.Load()) for p, a in zip(params, args, strict=True)})
                           .visit(tree))
    if len(params) == 1:  # a body in x applied to an expression: bind it first
        return f"{params[0]} = {args[0]}\n{textwrap.dedent(code).strip()}"
    raise Unreadable("cannot apply a multi-argument function body to expressions")


class _Replace(ast.NodeTransformer):
    """Replace the names in ``new`` (loads and stores alike for plain renames), not inside a
    lambda that shadows them."""

    def __init__(self, new: dict[str, ast.expr]):
        self.new = new

    def visit_Name(self, node: ast.Name) -> ast.AST:
        target = self.new.get(node.id)
        if target is None:
            return node
        if isinstance(target, ast.Name):
            return ast.copy_location(ast.Name(target.id, node.ctx), node)
        if not isinstance(node.ctx, ast.Load):
            raise Unreadable("cannot assign to an argument replaced by an expression")
        return ast.copy_location(copy_tree(target), node)

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        shadowed = {a.arg for a in node.args.args} & set(self.new)
        if shadowed:
            saved = self.new
            self.new = {k: v for k, v in saved.items() if k not in shadowed}
            self.generic_visit(node)
            self.new = saved
            return node
        self.generic_visit(node)
        return node
