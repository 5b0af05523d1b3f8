"""Where a function was written: its ``lambda`` or ``def`` node in its source, found through
`linecache` (files, IPython cells, doctests) and trusted only when compiling that node again
gives the function's very code (bytecode, constants, names), so the text read is what runs.

The builder reads functions back as editable code with it (`function_readback`), and fused
chains inline one-expression functions with it (`inlining`).

>>> node = lambda_node((lambda item: item % 5).__code__)
>>> ast.unparse(node.body)
'item % 5'
>>> def double(v):
...     'Twice v.'
...     return v * 2
>>> ast.unparse(returned_expression(written_node(double.__code__)))
'v * 2'
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import io
import linecache
import textwrap
import tokenize
from types import CodeType
from typing import TypeVar

_Node = TypeVar("_Node")


@functools.lru_cache(maxsize=4096)
def lambda_node(code: CodeType) -> ast.Lambda | str:
    """The lambda's node in its source, or why not (cached: reading source is the slow part;
    callers never change the node)."""
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) or code.co_kwonlyargcount \
            or code.co_posonlyargcount:
        return "its source is not a plain lambda"
    written = written_node(code)
    if isinstance(written, ast.Lambda):
        return written
    fast = _lambda_by_positions(code)  # the source around it, when the whole file does not parse
    if fast is not None:
        return fast
    try:
        lines, _ = inspect.getsourcelines(code)
    except (OSError, TypeError):
        return "its source is not available"
    lambdas = [n for n in _lambdas_in(textwrap.dedent("".join(lines)))
               if not n.args.vararg and not n.args.kwarg and not n.args.kwonlyargs and not n.args.posonlyargs
               and len(n.args.args) == code.co_argcount]
    if not lambdas:
        return "its source is not a plain lambda"
    same = [n for n in lambdas if same_code(n, code)]  # the one compiling to the same bytecode
    if not same:
        return "its source does not match it (changed since it was made?)"
    return same[0]  # equal bytecode: any of them means the same


def _lambda_by_positions(code: CodeType) -> ast.Lambda | None:
    """The lambda rebuilt from the source span its instructions cover (``co_positions``): one
    slice and one parse, checked against the bytecode; None when that does not work out."""
    spans = [(a, b, c, d) for a, b, c, d in code.co_positions()
             if a is not None and b is not None and c is not None and d is not None and (a, c) != (b, d)]
    if not spans:
        return None
    start = min((p[0], p[2]) for p in spans)
    end = max((p[1], p[3]) for p in spans)
    lines = linecache.getlines(code.co_filename)
    if not lines or end[0] > len(lines):
        return None
    raw = [line.encode("utf-8") for line in lines[start[0] - 1:end[0]]]  # columns count UTF-8 bytes
    raw[-1] = raw[-1][:end[1]]
    raw[0] = raw[0][start[1]:]
    body = b"".join(raw).decode("utf-8", errors="replace")
    params = ", ".join(code.co_varnames[:code.co_argcount])
    try:
        node = ast.parse(f"lambda {params}: (\n{body}\n)", mode="eval").body
    except SyntaxError:
        return None
    return node if isinstance(node, ast.Lambda) and same_code(node, code) else None


def _lambdas_in(source: str) -> list[ast.Lambda]:
    """Every lambda in ``source``: the lines a lambda was defined on need not parse on their own
    (``.map(lambda x: x + 1)`` in the middle of a chain), so each ``lambda`` keyword is tried as
    the start of an expression, ending at each closing bracket, comma or line end after it."""
    starts: list[int] = []
    ends: list[int] = []
    offsets = [0]
    for line in source.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            at = offsets[tok.start[0] - 1] + tok.start[1] if tok.start[0] - 1 < len(offsets) else len(source)
            if tok.type == tokenize.NAME and tok.string == "lambda":
                starts.append(at)
            elif tok.type == tokenize.OP and tok.string in ")]},;" or tok.type in (tokenize.NEWLINE, tokenize.NL):
                ends.append(at)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # unbalanced brackets at the end of the lines: keep what was read
    ends.append(len(source))
    found: list[ast.Lambda] = []
    for start in starts:
        for end in sorted((e for e in set(ends) if e > start), reverse=True):
            text = source[start:end]
            try:
                node = ast.parse(text.replace("\n", " "), mode="eval").body
            except SyntaxError:
                try:
                    node = ast.parse(f"({text})", mode="eval").body
                except SyntaxError:
                    continue
            if isinstance(node, ast.Lambda):
                found.append(node)
                found.extend(n for n in ast.walk(node.body) if isinstance(n, ast.Lambda))
                break
    return found


def same_code(node: ast.Lambda | ast.FunctionDef, code: CodeType) -> bool:
    """Whether ``node``, compiled where its free variables are an enclosing function's (as
    where it was written), gives ``code``: the same bytecode, constants, names, recursively."""
    free = code.co_freevars
    text = ast.unparse(node)
    if isinstance(node, ast.Lambda):
        text = f"return {text}" if free else f"_ = {text}"
    source = f"def _outer({', '.join(free)}):\n{textwrap.indent(text, '    ')}\n" if free else f"{text}\n"
    try:
        module = compile(source, "<function_source>", "exec")
    except SyntaxError:
        return False
    return any(_code_equal(c, code) for c in _code_objects(module) if c.co_name == code.co_name)


def _code_objects(code: CodeType) -> list[CodeType]:
    found = []
    for const in code.co_consts:
        if isinstance(const, CodeType):
            found.append(const)
            found.extend(_code_objects(const))
    return found


def _code_equal(a: CodeType, b: CodeType) -> bool:
    if (a.co_code, a.co_names, a.co_varnames, a.co_freevars) != (b.co_code, b.co_names, b.co_varnames, b.co_freevars):
        return False
    ca = [c for c in a.co_consts if not isinstance(c, CodeType)]
    cb = [c for c in b.co_consts if not isinstance(c, CodeType)]
    na = [c for c in a.co_consts if isinstance(c, CodeType)]
    nb = [c for c in b.co_consts if isinstance(c, CodeType)]
    return ca == cb and len(na) == len(nb) and all(_code_equal(x, y) for x, y in zip(na, nb, strict=True))


def written_node(code: CodeType) -> ast.Lambda | ast.FunctionDef | str:
    """The ``lambda`` or undecorated ``def`` that made the function whose code is ``code``, from
    its file's whole source as `linecache` has it now, with its positions in that file; or why
    not (no source, the file does not parse, nothing there compiles to ``code``)."""
    tree = _module_tree(code.co_filename)
    if tree is None:
        return "its source is not available"
    kind = ast.Lambda if code.co_name == "<lambda>" else ast.FunctionDef
    found = [n for n in ast.walk(tree) if isinstance(n, kind) and n.lineno == code.co_firstlineno
             and (isinstance(n, ast.Lambda) or (n.name == code.co_name and not n.decorator_list))]
    if not found:
        return f"its source is not a plain {'lambda' if kind is ast.Lambda else 'def'}"
    same = [n for n in found if same_code(n, code)]
    return same[0] if same else "its source does not match it (changed since it was made?)"


def body_without_docstring(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    """The statements of a ``def``'s body after its docstring, if it has one."""
    body = list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return body


def returned_expression(node: ast.Lambda | ast.FunctionDef) -> ast.expr | None:
    """The expression a lambda, or a ``def`` whose body is one ``return`` (a docstring allowed),
    returns; None for any other body."""
    if isinstance(node, ast.Lambda):
        return node.body
    body = body_without_docstring(node)
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return None
    return body[0].value


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


def copy_tree(node: _Node) -> _Node:
    """A deep copy of the syntax tree ``node`` (a node, a list of nodes or a leaf value): each
    node's fields and positions, nothing else. ``copy.deepcopy`` copies also what other tools
    attach to nodes, and IPython's tracebacks (through the ``executing`` package) set ``parent``
    on every node of each file they show, the operator and context nodes the parser shares
    between all trees (``ast.Load()``, ``ast.Mod()``) among them: a deep copy of ``x % 2`` then
    copies a whole other module (seen: 146 kB pickled for 8 nodes, a fused chain 100x slower to
    build after a traceback).

    >>> tree = ast.parse("x % 2", mode="eval").body
    >>> tree.op.parent = ast.parse("import this")  # what executing leaves on a shared node
    >>> copied = copy_tree(tree)
    >>> ast.unparse(copied), hasattr(copied.op, "parent"), copied.lineno
    ('x % 2', False, 1)
    >>> del tree.op.parent  # the shared node as it was
    """
    if isinstance(node, ast.AST):
        new = type(node)()
        for name in node._fields:
            if hasattr(node, name):
                setattr(new, name, copy_tree(getattr(node, name)))
        for name in node._attributes:
            if hasattr(node, name):
                setattr(new, name, getattr(node, name))
        return new
    if isinstance(node, list):
        return [copy_tree(item) for item in node]  # type: ignore[return-value]
    return node
