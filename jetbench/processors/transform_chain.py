"""A `Transform`: an immutable chain of map/filter/flat_map steps compiled into a single list
comprehension over a batch, so a fused chain costs one pass and no per-step queue hop.

>>> t = Transform().map(str.lower).flat_map(str.split).filter(lambda w: len(w) > 2)
>>> t(["The cat SAT", "on a MAT"])
['the', 'cat', 'sat', 'mat']
"""

from __future__ import annotations

import hashlib
import linecache
from collections.abc import Callable, Iterable
from typing import Any

from ..core.errors import GENERATED_FILE_PREFIX

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

    __slots__ = ("steps", "timestamped", "keep_timestamps", "_fn")

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

    Consecutive maps nest as calls, ``f1(f0(x))``; a filter binds the value it tests with
    ``:=`` so the next step reuses it; a flat_map adds a ``for`` clause. A chain of filters only
    over ``(ts, item)`` pairs keeps the pairs it passes as they are (no new tuple per item, about
    30% less per item). CPython 3.11 inlines
    Python-to-Python calls made from a comprehension, which makes this ~35% faster per item
    than ``list(map(f, batch))``.
    """
    if not steps and (keep or not timestamped):
        return list
    env = {f"f{i}": fn for i, (_, fn) in enumerate(steps)}
    if keep and all(kind == FILTER for kind, _ in steps):
        # only filters over (ts, item) pairs: a kept pair goes out as it came, not rebuilt
        tests = " ".join(f"if f{i}({'(x0 := p[1])' if i == 0 else 'x0'})" for i in range(len(steps)))
        return _eval(f"lambda batch: [p for p in batch {tests}]", steps, env)
    expr, clauses = "x0", ["for (t, x0) in batch" if timestamped else "for x0 in batch"]
    for i, (kind, _) in enumerate(steps):
        if kind == MAP:
            expr = f"f{i}({expr})"
            continue
        var = f"x{i + 1}"
        if kind == FILTER:
            clauses.append(f"if f{i}({expr})" if expr.isidentifier() else f"if f{i}(({var} := {expr}))")
            if not expr.isidentifier():
                expr = var
        else:
            clauses.append(f"for {var} in f{i}({expr})")
            expr = var
    if keep:
        expr = f"(t, {expr})"
    return _eval(f"lambda batch: [{expr} {' '.join(clauses)}]", steps, env)


def _eval(source: str, steps: tuple[tuple[str, Callable[..., Any]], ...],
          env: dict[str, Any]) -> Callable[[list[Any]], list[Any]]:
    filename = _register_source(source, steps)
    fused: Callable[[list[Any]], list[Any]] = eval(compile(source, filename, "eval"), env)  # noqa: S307 - our own code
    return fused


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


