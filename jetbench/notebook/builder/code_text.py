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
        line = exc.lineno - 1 if exc.lineno else None  # line 1 is the def
        where = f" (line {line})" if line and "\n" in code.strip() else ""
        return f"{exc.msg}{where}"
    except (ValueError, TypeError) as exc:  # e.g. a null byte
        return str(exc)
    text = code.strip()
    if not is_expression(text) and not _has_return(text):
        return "a function body needs a return statement"
    return None


@functools.lru_cache(maxsize=8192)
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
