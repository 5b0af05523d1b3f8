"""A `Transform`: an immutable chain of map/filter/flat_map steps compiled into a single list
comprehension over a batch, so a fused chain costs one pass and no per-step queue hop.

>>> t = Transform().map(str.lower).flat_map(str.split).filter(lambda w: len(w) > 2)
>>> t(["The cat SAT", "on a MAT"])
['the', 'cat', 'sat', 'mat']
"""

from __future__ import annotations

import ast
import hashlib
import linecache
import re
import textwrap
import weakref
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from itertools import compress
from types import CellType, CodeType, FunctionType
from typing import Any

from ..core.errors import GENERATED_FILE_PREFIX, note_generated_code
from .aggregate_operation import is_identity
from .inlining import InlineExpression, inline_expression, inlining_enabled

MAP, FILTER, FLAT_MAP = "map", "filter", "flat_map"


class Transform:
    """An immutable chain of map/filter/flat_map steps; calling it on a list returns a new list.

    With ``timestamped=True`` the batch holds ``(ts, item)`` tuples: the steps apply to the
    item and each output keeps its input's timestamp, unless ``keep_timestamps=False`` drops
    them (the planner's way of handing plain items to a timestamp-unaware consumer).

    >>> Transform(timestamped=True).map(str.upper)([(5, "a"), (7, "b")])
    [(5, 'A'), (7, 'B')]
    >>> Transform(timestamped=True, keep_timestamps=False)([(5, "a")])
    ['a']
    """

    __slots__ = ("steps", "timestamped", "keep_timestamps", "_fn", "_columns_fn")

    def __init__(
        self,
        steps: tuple[tuple[str, Callable[..., Any]], ...] = (),
        timestamped: bool = False,
        keep_timestamps: bool = True,
    ):
        for kind, fn in steps:
            if kind not in (MAP, FILTER, FLAT_MAP):
                raise ValueError(f"unknown transform step {kind!r}")
            if not callable(fn):
                raise TypeError(f"{kind} step needs a callable, got {fn!r}")
        self.steps = steps
        self.timestamped = timestamped
        self.keep_timestamps = keep_timestamps
        self._fn = _compile(steps, timestamped, timestamped and keep_timestamps)
        self._columns_fn: Callable[[list[Any], list[Any]], tuple[list[Any] | None, list[Any]]] | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its steps: the process that loads it compiles the chain again, so its
        generated code is noted there as the engine's (`note_generated_code`) and a failure in
        it names the failing item there too (a Spark worker, for `jetbench.spark`)."""
        return Transform, (self.steps, self.timestamped, self.keep_timestamps)

    def _with(self, steps: tuple[tuple[str, Callable[..., Any]], ...], keep_timestamps: bool | None = None) -> Transform:
        keep = self.keep_timestamps if keep_timestamps is None else keep_timestamps
        return Transform(steps, self.timestamped, keep)

    def map(self, fn: Callable[[Any], Any]) -> Transform:
        return self._with((*self.steps, (MAP, fn)))

    def filter(self, fn: Callable[[Any], Any]) -> Transform:
        return self._with((*self.steps, (FILTER, fn)))

    def flat_map(self, fn: Callable[[Any], Iterable[Any]]) -> Transform:
        return self._with((*self.steps, (FLAT_MAP, fn)))

    def then(self, other: Transform) -> Transform:
        return self._with(self.steps + other.steps, other.keep_timestamps)

    def dropping_timestamps(self) -> Transform:
        """The same chain, emitting plain items from timestamped input."""
        return self._with(self.steps, keep_timestamps=False)

    @property
    def emits_timestamped(self) -> bool:
        return self.timestamped and self.keep_timestamps

    @property
    def expands(self) -> bool:
        """True if one input item may give more than one output item."""
        return any(kind == FLAT_MAP for kind, _ in self.steps)

    def __call__(self, batch: list[Any]) -> list[Any]:
        return self._fn(batch)

    @property
    def generated_code(self) -> str:
        """The code the chain runs on a batch: one comprehension, with the steps that are one
        expression written out in it in place of their calls (`inlining`).

        >>> Transform().map(abs).filter(lambda x: x > 1).generated_code
        'lambda batch: [v1 for x0 in batch for v1 in [f0(x0)] if v1 > 1]'
        """
        fn = self._fn
        return generated_source(fn) if isinstance(fn, FunctionType) else getattr(fn, "__name__", repr(fn))

    def items_fn(self) -> Callable[[list[Any]], list[Any]]:
        """The steps on plain items (e.g. a timestamped batch's items column); with no step, the
        very list it is given."""
        steps = _without_identities(self.steps)
        return _compile(steps) if steps else _own

    @property
    def keeps_timestamps_as_they_are(self) -> bool:
        """A timestamped chain of maps only (or no step) that keeps the timestamps: each output
        has the timestamp at the same position in the input, so the chain can run on the items
        column alone (``Transform(self.steps)``) and the timestamps column goes on as it came."""
        return self.timestamped and self.keep_timestamps and all(kind == MAP for kind, _ in self.steps)

    def columns_fn(self) -> Callable[[list[Any], list[Any]], tuple[list[Any] | None, list[Any]]]:
        """The chain over a timestamped batch held as columns: ``fn(ts, items)`` returns
        ``(out_ts, out_items)``, or ``(None, out_items)`` when it drops the timestamps.

        The same as calling the chain on ``zip(ts, items)``, without a tuple per item: a chain of
        maps only returns ``ts`` itself (the very list); a filter keeps the timestamps of the
        items it keeps, a flat_map repeats an item's timestamp for each of its outputs.

        >>> Transform(timestamped=True).map(str.upper).columns_fn()([5, 7], ["a", "b"])
        ([5, 7], ['A', 'B'])
        >>> Transform(timestamped=True).flat_map(list).filter(str.isupper).columns_fn()([5, 7], ["aB", "CD"])
        ([5, 7, 7], ['B', 'C', 'D'])
        """
        if not self.timestamped:
            raise ValueError(f"{self!r} is not timestamped: it has no columns form")
        fn = self._columns_fn
        if fn is None:
            fn = self._columns_fn = _compile_columns(self.steps, self.keep_timestamps)
        return fn

    def __repr__(self) -> str:
        inner = ", ".join(f"{kind}({getattr(fn, '__name__', fn)})" for kind, fn in self.steps)
        return f"Transform({inner})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Transform) and (self.steps, self.timestamped, self.keep_timestamps) == (
            other.steps,
            other.timestamped,
            other.keep_timestamps,
        )

    def __hash__(self) -> int:
        return hash((self.steps, self.timestamped, self.keep_timestamps))


def _compile(
    steps: tuple[tuple[str, Callable[..., Any]], ...], timestamped: bool = False, keep: bool = False
) -> Callable[[list[Any]], list[Any]]:
    """One comprehension for the whole chain.

    Consecutive maps nest as calls, ``f1(f0(x))``; a filter binds the value it tests with a
    ``for x1 in [value]`` clause (an assignment in CPython) so the next step reuses it; a
    flat_map adds a ``for`` clause; a step whose function is one expression is written out in
    place of its call (`inlining`), and an identity map is left out. A chain of filters only
    over ``(ts, item)`` pairs keeps the pairs it passes as they are (no new tuple per item, about
    30% less per item). CPython 3.11 inlines Python-to-Python calls made from a comprehension,
    which makes even the calls ~35% faster per item than ``list(map(f, batch))``.
    """
    steps = _without_identities(steps)
    if not steps and (keep or not timestamped):
        return list
    env = {f"f{i}": fn for i, (_, fn) in enumerate(steps)}
    inline = _inlinable(steps)
    if keep and all(kind == FILTER for kind, _ in steps):
        # only filters over (ts, item) pairs: a kept pair goes out as it came, not rebuilt
        _, clauses = _chain_clauses(steps, "for p in batch for x0 in [p[1]]", inline=inline)
        fused: Callable[[list[Any]], list[Any]] = _eval(f"lambda batch: [p {' '.join(clauses)}]", steps, env, inline)
        return fused
    expr, clauses = _chain_clauses(steps, "for (t, x0) in batch" if timestamped else "for x0 in batch",
                                   inline=inline)
    if keep:
        expr = f"(t, {expr})"
    fused = _eval(f"lambda batch: [{expr} {' '.join(clauses)}]", steps, env, inline)
    return fused


def _compile_columns(
    steps: tuple[tuple[str, Callable[..., Any]], ...], keep: bool
) -> Callable[[list[Any], list[Any]], tuple[list[Any] | None, list[Any]]]:
    """`Transform.columns_fn`'s function: one comprehension over the items column, as in
    `_compile`. Only maps: the timestamps go on as they came. Filters, then maps: the items
    that pass and their timestamps are selected with `itertools.compress`. Otherwise the
    timestamps of what it emits are appended to ``out_ts`` by a last ``if`` clause
    (``list.append`` returns None), once per output item."""
    steps = _without_identities(steps)
    env: dict[str, Any] = {f"f{i}": fn for i, (_, fn) in enumerate(steps)}
    inline = _inlinable(steps) if keep else {}
    if not keep:
        env["_items"] = _compile(steps) if steps else _own  # Transform.items_fn
        source = "lambda ts, items: (None, _items(items))"
    elif not steps:
        source = "lambda ts, items: (ts, items)"
    elif all(kind == MAP for kind, _ in steps):  # maps only: the timestamps go on unchanged
        expr, clauses = _chain_clauses(steps, "for x0 in items", inline=inline)
        source = f"lambda ts, items: (ts, [{expr} {' '.join(clauses)}])"
    elif _filters_first(steps):
        # filters, then maps: one pass computes which items pass, and `itertools.compress` (C)
        # selects them and their timestamps; no append per kept item, no tuple per item
        n = sum(kind == FILTER for kind, _ in steps)
        passes = " and ".join(f"{_call(i, inline)}(x0)" for i in range(n))
        kept = "_compress(items, keep)"
        expr, clauses = _chain_clauses(steps[n:], f"for x0 in {kept}", first=n, inline=inline)
        out = f"_jb_list({kept})" if len(clauses) == 1 and expr == "x0" else f"[{expr} {' '.join(clauses)}]"
        source = f"lambda ts, items: (lambda keep: (_jb_list(_compress(ts, keep)), {out}))([{passes} for x0 in items])"
        env["_compress"] = compress
        env["_jb_list"] = list  # the builtins the generated code calls, whatever the user's globals name
    else:
        expr, clauses = _chain_clauses(steps, "for (t, x0) in _jb_zip(ts, items)", inline=inline)
        body = f"[{expr} {' '.join(clauses)} if not stamp(t)]"
        source = f"lambda ts, items: (lambda out_ts, stamp: (out_ts, {body}))(*_new_column())"
        env["_new_column"] = _new_column
        env["_jb_zip"] = zip
    fused: Callable[[list[Any], list[Any]], tuple[list[Any] | None, list[Any]]] = _eval(source, steps, env, inline)
    return fused


def grouped_by(key_fn: Callable[[Any], Hashable], pairs: bool = False) -> Callable[[Iterable[Any]], dict[Hashable, list[Any]]]:
    """A function grouping a batch by ``key_fn`` in one pass, into a dict of lists with the keys
    in the order first seen: items by ``key_fn(item)``, or with ``pairs`` ``(ts, item)`` pairs by
    ``key_fn(item)``. A one-expression ``key_fn`` is written into the loop (`inlining`).

    >>> group = grouped_by(lambda word: word[0])
    >>> dict(group(["ab", "b", "ac"]))
    {'a': ['ab', 'ac'], 'b': ['b']}
    >>> dict(grouped_by(len, pairs=True)([(1, "ab"), (2, "c")]))
    {2: [(1, 'ab')], 1: [(2, 'c')]}
    """
    steps = ((MAP, key_fn),)
    inline = _inlinable(steps)
    item = "x0 = p[1]\n        " if pairs else ""
    each = "p" if pairs else "x0"
    source = (f"def group(batch):\n    groups = _defaultdict(_jb_list)\n    for {each} in batch:\n"
              f"        {item}groups[{_call(0, inline)}(x0)].append({each})\n    return groups")
    fn: Callable[[Iterable[Any]], dict[Hashable, list[Any]]] = _eval(
        source, steps, {"f0": key_fn, "_defaultdict": defaultdict, "_jb_list": list}, inline)
    return fn


def _without_identities(steps: tuple[tuple[str, Callable[..., Any]], ...]) -> tuple[tuple[str, Callable[..., Any]], ...]:
    """``steps`` without the maps whose function returns its argument as it is (`is_identity`:
    ``lambda x: x``): inlined, such a step is no operation at all (unless inlining is off)."""
    if not inlining_enabled():
        return steps
    return tuple(step for step in steps if step[0] != MAP or not is_identity(step[1]))


def _new_column() -> tuple[list[Any], Callable[[Any], None]]:
    out: list[Any] = []
    return out, out.append


def _own(items: list[Any]) -> list[Any]:
    return items


def _filters_first(steps: tuple[tuple[str, Callable[..., Any]], ...]) -> bool:
    """Whether the chain is one or more filters followed only by maps."""
    kinds = [kind for kind, _ in steps]
    n = kinds.index(MAP) if MAP in kinds else len(kinds)
    return n > 0 and all(k == FILTER for k in kinds[:n]) and all(k == MAP for k in kinds[n:])


def _chain_clauses(steps: tuple[tuple[str, Callable[..., Any]], ...], head: str, first: int = 0,
                   inline: dict[int, InlineExpression] | None = None) -> tuple[str, list[str]]:
    """The output expression and the clauses of the chain's comprehension, the first ``head``
    (the ``for`` binding ``x0``, the input item); the steps' functions are ``f{first}`` on.

    A step in ``inline`` is written as a call of ``_jb_inline_{i}`` on a variable, which
    `_eval` replaces with the function's expression of that variable; a value that is not yet in
    a variable is bound with ``for v{i} in [value]`` (CPython compiles that to an assignment)."""
    inline = inline or {}
    expr, clauses = "x0", [head]
    for i, (kind, _) in enumerate(steps, first):
        var = f"x{i + 1}"
        if i in inline and not expr.isidentifier():
            clauses.append(f"for v{i} in [{expr}]")
            expr = f"v{i}"
        call = _call(i, inline)
        if kind == MAP:
            expr = f"{call}({expr})"
        elif kind == FILTER:
            if not expr.isidentifier():
                clauses.append(f"for {var} in [{expr}]")
                expr = var
            clauses.append(f"if {call}({expr})")
        else:
            clauses.append(f"for {var} in {call}({expr})")
            expr = var
    return expr, clauses


def _call(i: int, inline: dict[int, InlineExpression]) -> str:
    """What the generated code calls for step ``i``: its function, or the placeholder `_eval`
    replaces with the function's expression."""
    return f"{_INLINE_PREFIX}{i}" if i in inline else f"f{i}"


def _eval(source: str, steps: tuple[tuple[str, Callable[..., Any]], ...], env: dict[str, Any],
          inline: dict[int, InlineExpression] | None = None) -> Any:
    """The function the lambda expression ``source`` makes, in ``env``; with steps to inline,
    `_eval_inlined` makes it."""
    if inline:
        return _eval_inlined(source, env, inline)
    filename = _register_source(source, steps)
    defined = _defined_name(source)
    if defined is not None:  # a function statement: the function it defines
        exec(compile(source, filename, "exec"), env)  # noqa: S102 - our own code
        return env[defined]
    return eval(compile(source, filename, "eval"), env)  # noqa: S307 - our own code


def _defined_name(source: str) -> str | None:
    """The name a generated function statement (``def name(...): ...``) defines; None for a
    lambda expression.

    >>> _defined_name("def group(batch): return batch"), _defined_name("lambda batch: batch")
    ('group', None)
    """
    return source[len("def "):source.index("(")] if source.startswith("def ") else None


#: what the generated code calls in place of a step to inline (`_call`)
_INLINE_PREFIX = "_jb_inline_"
#: names the generated code binds: an inlined expression reading one of them stays a call
_GENERATED_NAMES = re.compile(
    r"(x|f|v)\d+|t|p|ts|items|batch|keep|out_ts|stamp|groups|group|_compress|_new_column|_items|_defaultdict|_jb_.*")
#: `generated_source` of the functions `_eval_inlined` made, by code object
_INLINED_SOURCE: weakref.WeakKeyDictionary[CodeType, str] = weakref.WeakKeyDictionary()


def _inlinable(steps: tuple[tuple[str, Callable[..., Any]], ...]) -> dict[int, InlineExpression]:
    """The steps whose function `inline_expression` gives, that one piece of generated code can
    hold: from the same file and globals as the first, reading no name the generated code
    binds, and no name that another inlined step reads differently (a global in one, a closure
    variable in the other, or two different closure cells)."""
    chosen: dict[int, InlineExpression] = {}
    seen: dict[str, CellType | None] = {}  # name -> its cell, or None for a global
    for i, (_, fn) in enumerate(steps):
        step = inline_expression(fn)
        if step is None:
            continue
        if chosen:
            one = next(iter(chosen.values()))
            if step.filename != one.filename or step.fn.__globals__ is not one.fn.__globals__:
                continue
        reads: dict[str, CellType | None] = {**dict.fromkeys(step.global_names), **step.cells}
        if any(_GENERATED_NAMES.fullmatch(name) or (name in seen and seen[name] is not cell)
               for name, cell in reads.items()):
            continue
        seen.update(reads)
        chosen[i] = step
    return chosen


def _eval_inlined(source: str, env: dict[str, Any], inline: dict[int, InlineExpression]) -> Any:
    """The function of ``source`` with each ``_jb_inline_{i}(v)`` replaced by step ``i``'s
    expression of ``v``, compiled in the user's file and globals.

    The generated parts take the position of the first inlined expression, the inlined parts
    keep their own: a failure's traceback shows the user's line. The values ``env`` names and
    the user's closure variables reach the code as closure cells."""
    steps = list(inline.values())
    anchor = steps[0].expr
    cells = {name: cell for step in steps for name, cell in step.cells.items()}
    free = [*env, *cells]
    binding = f"    {' = '.join(free)} = None\n" if free else ""
    defined = _defined_name(source)
    if defined is not None:  # a function statement: the factory returns the function
        body = f"{textwrap.indent(source, '    ')}\n    return {defined}\n"
    else:
        body = f"    return {source}\n"
    tree = ast.parse(f"def _jb_factory():\n{binding}{body}")
    for node in ast.walk(tree):
        if isinstance(node, (ast.expr, ast.stmt, ast.arg, ast.keyword)):
            ast.copy_location(node, anchor)
            node.end_lineno, node.end_col_offset = anchor.end_lineno, anchor.end_col_offset

    class Splice(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            name = node.func.id if isinstance(node.func, ast.Name) else ""
            if name.startswith(_INLINE_PREFIX):
                arg = node.args[0]
                assert isinstance(arg, ast.Name)
                return inline[int(name[len(_INLINE_PREFIX):])].applied_to(arg.id)
            return node

    tree = Splice().visit(tree)
    made = tree.body[0].body[-2] if defined is not None else tree.body[0].body[-1].value
    module = compile(tree, steps[0].filename, "exec", dont_inherit=True)
    factory = next(c for c in module.co_consts if isinstance(c, CodeType))
    code = _registered(next(c for c in factory.co_consts if isinstance(c, CodeType)),
                       ", ".join(dict.fromkeys(step.fn.__name__ for step in steps)))
    _INLINED_SOURCE[code] = ast.unparse(made)
    closure = tuple(cells[name] if name in cells else CellType(env[name]) for name in code.co_freevars)
    return FunctionType(code, steps[0].fn.__globals__, code.co_name, None, closure)


def _registered(code: CodeType, name: str, top: bool = True) -> CodeType:
    """``code`` with the code objects nested in it named ``name`` (in a traceback, the frame
    computing the inlined functions is named after them), each noted as the engine's (`note_generated_code`)."""
    code = code.replace(co_consts=tuple(
        _registered(c, name, top=False) if isinstance(c, CodeType) else c for c in code.co_consts))
    if not top:
        code = code.replace(co_name=name, co_qualname=name)
    note_generated_code(code)  # the user's file name, not the generated prefix: the engine's code all the same
    return code


def generated_source(fn: Callable[..., Any]) -> str:
    """The source of a fused chain's generated function ``fn``, with inlined steps written out.

    >>> generated_source(Transform().map(abs)._fn)
    'lambda batch: [f0(x0) for x0 in batch]'
    """
    code = fn.__code__
    if code in _INLINED_SOURCE:
        return _INLINED_SOURCE[code]
    return "".join(linecache.getlines(code.co_filename)).rstrip("\n")


def _register_source(source: str, steps: tuple[tuple[str, Callable[..., Any]], ...]) -> str:
    """Put the generated ``source`` in `linecache` under a pseudo-filename naming the steps
    (stable: the same chain gets the same name), so tracebacks and IPython print its line
    between the engine's frames and the user's functions instead of "Could not get source".
    Entries without a modification time survive ``linecache.checkcache``, as IPython's cells do."""
    names = ", ".join(f"{kind}({getattr(fn, '__name__', type(fn).__name__)})" for kind, fn in steps)
    digest = hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()[:8]
    filename = f"{GENERATED_FILE_PREFIX}fused transform {names or 'identity'} {digest}>"
    linecache.cache[filename] = (len(source), None, [source + "\n"], filename)
    return filename
