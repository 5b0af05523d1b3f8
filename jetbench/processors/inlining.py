"""Inlining a user's one-expression function into generated code, as a JIT inlines a call.

A fused `Transform` runs its steps in one generated list comprehension. Calling a step's
Python function costs a frame per item, often more than what the function computes (``x // 1000``,
``word != ""``). `inline_expression` gives the expression such a function returns, so the
comprehension can compute it in place: the same operations, in the same order, on the same
objects, without the call.

Only what provably means the same is inlined; anything else stays a call:

- a plain function (a ``lambda``, or a ``def`` whose body is one ``return``, a docstring
  allowed) of exactly one positional parameter, not a generator or coroutine, undecorated;
- its source is found (`linecache`: files, IPython cells, doctests) and compiling that source
  again gives the very bytecode, constants and names of the function's code, so the source read
  is the code that runs;
- the expression opens no scope of its own (no lambda, comprehension or ``:=``) and does not
  ``yield`` or ``await``;
- its global names are looked up in the function's own globals and its free variables read the
  function's own closure cells, so later rebinding is seen exactly as the function would see it.

The generated code carries the user's file and positions for the inlined expression, so a
failure's traceback shows the user's line (with its caret under the failing part), as a call
would. ``JETBENCH_INLINE=0`` turns inlining off.

>>> step = inline_expression(lambda word: word != "")
>>> ast.unparse(step.expr), step.param
("word != ''", 'word')
>>> inline_expression(print) is None  # a builtin: nothing to inline, it stays a call
True
"""

from __future__ import annotations
import __future__

import ast
import copy
import functools
import hashlib
import inspect
import linecache
import operator
import os
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from types import CellType, CodeType, FunctionType
from typing import Any

#: code flags that rule a function out: it takes *args or **kwargs, or does not simply return
_RULED_OUT_FLAGS = (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS | inspect.CO_GENERATOR | inspect.CO_COROUTINE
                    | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE)
#: the compiler flags of ``__future__`` imports, which a code object's flags carry
FUTURE_FLAGS = functools.reduce(operator.or_, (getattr(__future__, name).compiler_flag for name in __future__.all_feature_names))
#: expression nodes that open a scope or suspend: an expression holding one stays a call
_SCOPED = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.NamedExpr,
           ast.Yield, ast.YieldFrom, ast.Await)


@dataclass(frozen=True)
class InlineExpression:
    """What a call ``fn(v)`` computes, as an expression of ``v``: `expr` (positions as in
    `filename`), with `param` standing for the argument."""

    fn: FunctionType
    expr: ast.expr
    param: str
    filename: str
    #: the names `expr` reads from the function's globals (or builtins)
    global_names: frozenset[str]
    #: the function's closure cells by variable name, for the free variables `expr` reads
    cells: dict[str, CellType]

    def applied_to(self, name: str) -> ast.expr:
        """A fresh copy of `expr` reading the variable ``name`` where the function read its parameter."""
        expr = copy.deepcopy(self.expr)
        for node in ast.walk(expr):
            if isinstance(node, ast.Name) and node.id == self.param:
                node.id = name
        return expr


def inlining_enabled() -> bool:
    """Whether inlining is on (``JETBENCH_INLINE=0`` turns it off)."""
    return os.environ.get("JETBENCH_INLINE", "1") != "0"


def inline_expression(fn: Callable[..., Any]) -> InlineExpression | None:
    """The expression ``fn`` returns, if ``fn`` can be inlined (see the module's docstring), else None.

    >>> def window_key(x):
    ...     return x // 1000
    >>> ast.unparse(inline_expression(window_key).applied_to("x0"))
    'x0 // 1000'
    >>> inline_expression(lambda x, y=1: x + y) is None  # more than one parameter
    True
    """
    if not inlining_enabled() or type(fn) is not FunctionType:
        return None
    code = fn.__code__
    found = _expression_of(code)
    if found is None:
        return None
    expr, param, names = found
    cells = dict(zip(code.co_freevars, fn.__closure__ or (), strict=True))
    try:  # an unbound free variable (the function would raise NameError): leave it a call
        for cell in cells.values():
            cell.cell_contents  # noqa: B018 - read to test
    except ValueError:
        return None
    return InlineExpression(fn, expr, param, code.co_filename, frozenset(names - set(cells)),
                            {name: cells[name] for name in names & set(cells)})


_FOUND: weakref.WeakKeyDictionary[CodeType, tuple[ast.expr, str, frozenset[str]] | None] = weakref.WeakKeyDictionary()


def _expression_of(code: CodeType) -> tuple[ast.expr, str, frozenset[str]] | None:
    """The returned expression, the parameter's name and the names the expression reads, for
    a function whose code is ``code``, if it can be inlined; cached per code object."""
    if code in _FOUND:
        return _FOUND[code]
    found = None
    if (code.co_argcount == 1 and not code.co_kwonlyargcount and not code.co_flags & _RULED_OUT_FLAGS
            and not code.co_cellvars):
        tree = _module_tree(code.co_filename)
        if tree is not None:
            found = _matching_expression(tree, code)
    _FOUND[code] = found
    return found


_TREES: dict[str, tuple[str, ast.Module | None]] = {}


def _module_tree(filename: str) -> ast.Module | None:
    """The parsed source of ``filename`` as `linecache` has it now (parsed again when it changed)."""
    lines = linecache.getlines(filename)
    if not lines:
        return None
    source = "".join(lines)
    digest = hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()
    known = _TREES.get(filename)
    if known is not None and known[0] == digest:
        return known[1]
    try:
        tree: ast.Module | None = ast.parse(source, filename)
    except (SyntaxError, ValueError):
        tree = None
    _TREES[filename] = (digest, tree)
    return tree


def _matching_expression(tree: ast.Module, code: CodeType) -> tuple[ast.expr, str, frozenset[str]] | None:
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Lambda, ast.FunctionDef)) or node.lineno != code.co_firstlineno:
            continue
        found = _returned_expression(node)
        if found is not None and _compiles_to(node, code):
            expr, param = found
            names = frozenset(n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and n.id != param)
            return expr, param, names
    return None


def _returned_expression(node: ast.Lambda | ast.FunctionDef) -> tuple[ast.expr, str] | None:
    args = node.args
    params = args.posonlyargs + args.args
    if len(params) != 1 or args.vararg or args.kwonlyargs or args.kwarg:
        return None
    if isinstance(node, ast.Lambda):
        expr = node.body
    else:
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # the docstring
        if node.decorator_list or len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
            return None
        expr = body[0].value
    if any(isinstance(n, _SCOPED) for n in ast.walk(expr)):
        return None
    return expr, params[0].arg


def _compiles_to(node: ast.Lambda | ast.FunctionDef, code: CodeType) -> bool:
    """Whether ``node``, compiled where its free variables are an enclosing function's locals
    (as where it was written), gives ``code``'s bytecode, constants and names."""
    free = [ast.Assign([ast.Name(name, ast.Store())], ast.Constant(None)) for name in code.co_freevars]
    inner: ast.stmt = (ast.Return(copy.deepcopy(node)) if isinstance(node, ast.Lambda)
                       else copy.deepcopy(node))
    outer = ast.FunctionDef("_jetbench_outer", ast.arguments([], [], None, [], [], None, []),
                            [*free, inner], [], None, None)
    module = ast.fix_missing_locations(ast.Module([outer], []))
    try:
        compiled = compile(module, code.co_filename, "exec", flags=code.co_flags & FUTURE_FLAGS, dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    outer_code = next(c for c in compiled.co_consts if isinstance(c, CodeType))
    same = ("co_code", "co_consts", "co_names", "co_varnames", "co_freevars", "co_cellvars", "co_argcount",
            "co_posonlyargcount", "co_kwonlyargcount", "co_name")
    return any(
        isinstance(c, CodeType)
        and all(getattr(c, a) == getattr(code, a) for a in same)
        and (c.co_flags | inspect.CO_NESTED) == (code.co_flags | inspect.CO_NESTED)
        for c in outer_code.co_consts
    )
