"""Code as text: what the builder's ``code``, ``expr`` and ``steps`` parameters hold, checked
(compiled, never run), turned into a ``def`` or a ``lambda`` for exported code, and defined as
functions or evaluated only when a DAG is built. Also classes named by text (`class_path`,
`resolve_class`).

A ``code`` text is a Python expression in its arguments (``x * 2``) or a function body (with
``return``); an ``expr`` text is an expression evaluated when the DAG is built (``range(100)``).

>>> function_source("x * 2", ("x",), "f")
'def f(x):\\n    return (x * 2)\\n'
>>> check_code("x *", ("x",)) is not None
True
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import symtable
import textwrap
from collections.abc import Callable
from typing import Any

from ...processors.builder_kind import BuilderError, parse_steps


def is_expression(code: str) -> bool:
    try:
        ast.parse(code.strip(), mode="eval")
    except SyntaxError:
        return False
    return True


def function_source(code: str, args: tuple[str, ...], name: str, asynchronous: bool = False) -> str:
    """``def name(args): ...`` for an expression (returned) or a function body (as written);
    ``async def`` when ``asynchronous``."""
    text = code.strip()
    head = f"{'async ' if asynchronous else ''}def {name}({', '.join(args)}):"
    if is_expression(text):
        return f"{head}\n    return ({text})\n"
    body = textwrap.indent(textwrap.dedent(code).strip("\n"), "    ")
    return f"{head}\n{body}\n"


def lambda_source(code: str, args: tuple[str, ...]) -> str | None:
    """``lambda args: expr`` if ``code`` is one expression, else None (it needs a ``def``)."""
    text = code.strip()
    if not is_expression(text):
        return None
    if "\n" in text:
        text = f"({text})"
    return f"lambda {', '.join(args)}: {text}"


@functools.lru_cache(maxsize=8192)
def check_code(code: str, args: tuple[str, ...], asynchronous: bool = False) -> str | None:
    """Compile (never run) ``code`` as a function of ``args``; the error text, or None if it compiles."""
    if not isinstance(code, str) or not code.strip():
        return "empty code"
    try:
        compile(function_source(code, args, "_f", asynchronous), "<code>", "exec")
    except SyntaxError as exc:
        return f"{exc.msg}{_position(code, exc)}"
    except (ValueError, TypeError) as exc:  # e.g. a null byte
        return str(exc)
    text = code.strip()
    if not is_expression(text) and not _has_return(text):
        return "a function body needs a return statement"
    return None


def _position(code: str, exc: SyntaxError) -> str:
    """`` at line L, column C`` of a syntax error in ``code`` as the user wrote it (``exc`` is from
    compiling `function_source` of it: line 1 there is the ``def``, and each line is the user's
    line, dedented, then indented by 4 or, for an expression, after ``    return (``)."""
    if not exc.lineno or exc.lineno < 2:
        return ""
    text = code.strip() if is_expression(code.strip()) else textwrap.dedent(code).strip("\n")
    prefix = len("    return (") if is_expression(code.strip()) else 4
    lead = 0 if is_expression(code.strip()) else len(code) - len(code.lstrip("\n"))
    user_lines = code.split("\n")
    shown_lines = text.split("\n")
    line = exc.lineno - 1  # 1-based in the text shown to the compiler
    if line > len(shown_lines):
        return f" at line {len(user_lines)}"
    column = (exc.offset or 1) - (prefix if line == 1 or not is_expression(code.strip()) else 0)
    original = user_lines[line - 1 + lead] if line - 1 + lead < len(user_lines) else ""
    shift = len(original) - len(original.lstrip()) - (len(shown_lines[line - 1]) - len(shown_lines[line - 1].lstrip()))
    if is_expression(code.strip()) and line == 1:
        shift = len(user_lines[lead]) - len(user_lines[lead].lstrip()) if user_lines else 0
    return f" at line {line + lead}, column {max(1, column + max(0, shift))}"


@functools.lru_cache(maxsize=8192)
def check_expr(code: str) -> str | None:
    if not isinstance(code, str) or not code.strip():
        return "empty expression"
    try:
        compile(code.strip(), "<expr>", "eval")
    except SyntaxError as exc:
        where = f" at line {exc.lineno}, column {exc.offset}" if exc.lineno and exc.offset else ""
        return f"{exc.msg}{where}"
    except (ValueError, TypeError) as exc:
        return str(exc)
    return None


@functools.lru_cache(maxsize=8192)
def check_steps(text: Any) -> str | None:
    """The first problem of a ``steps`` text (parse error, or code that does not compile), or None."""
    try:
        steps = parse_steps(text)
    except BuilderError as exc:
        return str(exc)
    for i, (kind, code) in enumerate(steps):
        msg = check_code(code, ("x",))
        if msg:
            return f"step {i + 1} ({kind}): {msg}"
    return None


@functools.lru_cache(maxsize=8192)
def _global_names(source: str) -> frozenset[str]:
    """The names ``source`` (a module's text) reads from its globals, in any nested scope."""
    try:
        top = symtable.symtable(source, "<code>", "exec")
    except (SyntaxError, ValueError, TypeError):
        return frozenset()
    found: set[str] = set()
    stack = list(top.get_children())
    while stack:
        table = stack.pop()
        stack.extend(table.get_children())
        for sym in table.get_symbols():
            if sym.is_referenced() and sym.is_global():
                found.add(sym.get_name())
    return frozenset(found)


def undefined_names(code: Any, args: tuple[str, ...], ns: dict[str, Any], kind: str = "code",
                    asynchronous: bool = False) -> list[str]:
    """Names a ``code`` (function of ``args``) or ``expr`` text reads that neither ``ns`` (the
    notebook's namespace) nor the builtins define, sorted; [] when it does not compile.

    >>> undefined_names("tokenize(x) + [y for y in x if y in STOP]", ("x",), {"tokenize": str})
    ['STOP']
    """
    if not isinstance(code, str) or not code.strip():
        return []
    if kind == "expr":
        source = f"def _f():\n    return ({code.strip()})\n"
    else:
        source = function_source(code, args, "_f", asynchronous)
    return sorted(n for n in _global_names(source) if n not in ns and not hasattr(builtins, n))


def _has_return(body: str) -> bool:
    try:
        tree = ast.parse(textwrap.dedent(body))
    except SyntaxError:
        return False
    return any(isinstance(node, ast.Return | ast.Yield | ast.YieldFrom) for node in ast.walk(tree))


def compile_function(code: str, args: tuple[str, ...], ns: dict[str, Any], label: str,
                     asynchronous: bool = False) -> Callable[..., Any]:
    """Define the function (its globals are ``ns``, so it sees the notebook's names); runs nothing
    of the user's code but the ``def`` itself. The function keeps its text in ``__jetbench_code__``
    (and its parameters in ``__jetbench_args__``), so a DAG built from it imports back unchanged."""
    local: dict[str, Any] = {}
    source = function_source(code, args, "_fn", asynchronous)
    exec(compile(source, f"<jetbench builder: {label}>", "exec"), ns, local)  # noqa: S102
    fn = local["_fn"]
    fn.__jetbench_code__ = code
    fn.__jetbench_args__ = tuple(args)
    fn.__name__ = fn.__qualname__ = label.replace(".", "_").replace(" ", "_").replace("-", "_")
    return fn


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
