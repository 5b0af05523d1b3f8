"""Views of engine objects that higher layers provide (the notebook's dashboard and timeline, the
pandas frames), registered by name so that the engine never imports them.

``jetbench/__init__.py`` registers them: ``register_view("timeline", factory)``; a job or a trace
then reaches ``factory(obj, **kwargs)`` through `view`.

>>> register_view("echo", lambda obj, **kw: (obj, kw))
>>> view("echo")(1, a=2)
(1, {'a': 2})
>>> view("no such view")
Traceback (most recent call last):
...
jetbench.core.errors.JetbenchError: no 'no such view' view is registered; import jetbench (not only jetbench.core)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import JetbenchError

_VIEWS: dict[str, Callable[..., Any]] = {}


def register_view(name: str, factory: Callable[..., Any]) -> None:
    """Make ``factory(obj, **kwargs)`` the view called ``name``."""
    _VIEWS[name] = factory


def view(name: str) -> Callable[..., Any]:
    """The factory registered as ``name``; a `JetbenchError` saying how to get it otherwise."""
    try:
        return _VIEWS[name]
    except KeyError:
        raise JetbenchError(f"no {name!r} view is registered; import jetbench (not only jetbench.core)") from None
