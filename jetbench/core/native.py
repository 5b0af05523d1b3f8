"""``mypyc_attr``, the class decorator that tells mypyc how to compile a class, usable without
mypy_extensions installed.

mypyc reads ``@mypyc_attr(...)`` in the source when it compiles a module (`jetbench.core.compiled`)
and leaves nothing of it in the compiled class; interpreted, the decorator does nothing, so
running jetbench does not need mypy_extensions. A compiled class that plain Python code may
subclass (``Processor``, ``Outbox``, the built-in processors) says so::

    @mypyc_attr(allow_interpreted_subclasses=True)
    class Processor: ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

_T = TypeVar("_T")


def _no_mypyc_attr(*attrs: str, **kwattrs: object) -> Callable[[_T], _T]:
    return lambda cls: cls


try:
    from mypy_extensions import mypyc_attr
except ImportError:
    mypyc_attr = _no_mypyc_attr

__all__ = ["mypyc_attr"]
