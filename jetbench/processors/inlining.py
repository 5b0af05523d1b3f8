"""Inlining a user's one-expression function into generated code, as a JIT inlines a call.

A fused `Transform` runs its steps in one generated list comprehension. Calling a step's
Python function costs a frame per item, often more than what the function computes (``x // 1000``,
``word != ""``). `inline_expression` gives the expression such a function returns, so the
comprehension can compute it in place: the same operations, in the same order, on the same
objects, without the call.

Only what provably means the same is inlined; anything else stays a call:

- a plain function (a ``lambda``, or a ``def`` whose body is one ``return``, a docstring
  allowed) of exactly one positional parameter, not a generator or coroutine, undecorated;
- its source is found and compiling it again gives the function's very code
  (`function_source`), so the source read is the code that runs;
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

import ast
import inspect
import os
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from types import CellType, CodeType, FunctionType
from typing import Any

from .function_source import copy_tree, returned_expression, written_node

#: code flags that rule a function out: it takes *args or **kwargs, or does not simply return
_RULED_OUT_FLAGS = (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS | inspect.CO_GENERATOR | inspect.CO_COROUTINE
                    | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE)
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
        expr = copy_tree(self.expr)
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
        node = written_node(code)  # its true positions, for tracebacks
        expr = None if isinstance(node, str) else returned_expression(node)
        if expr is not None and not any(isinstance(n, _SCOPED) for n in ast.walk(expr)):
            assert not isinstance(node, str)
            param = node.args.args[0].arg if node.args.args else node.args.posonlyargs[0].arg
            names = frozenset(n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and n.id != param)
            found = (expr, param, names)
    _FOUND[code] = found
    return found
