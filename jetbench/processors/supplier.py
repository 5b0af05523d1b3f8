"""`ProcessorSupplier`: the generic vertex supplier, a processor class and the arguments to make
each instance with.

Most built-in suppliers are one: they check their arguments, then hand the processor class and
the arguments to `ProcessorSupplier`, which keeps them by parameter name in ``params`` (so tools
such as the DAG builder can read what a vertex does) and calls the class once per instance.

>>> from jetbench.processors.hash_join import HashJoinP
>>> s = ProcessorSupplier(HashJoinP, len, abs, how="left", label="join")
>>> s.params["how"], s.right_key, s
('left', <built-in function abs>, join)
>>> p = s()
>>> type(p).__name__, p.how
('HashJoinP', 'left')
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..core.errors import JetbenchError


class ProcessorSupplier:
    """Calls ``processor(*args, **kwargs)`` for every parallel instance of a vertex.

    ``params`` maps each parameter of ``processor`` to its value (defaults filled in) and is
    what the call uses; its entries also read as attributes (``supplier.key_fn``). ``label``
    is the repr. ``merge_results``, when given, merges the instances' ``result_part()`` into
    the job's result (see `jetbench.core.plan.collect_result`). Arguments that do not fit the
    processor's signature raise `JetbenchError` here, not in the job.
    """

    processor: Callable[..., Any]
    #: the processor's arguments by parameter name (``*args`` / ``**kwargs`` under their own names)
    params: dict[str, Any]
    label: str
    _kinds: dict[str, Any]

    def __init__(self, processor: Callable[..., Any], /, *args: Any, label: str | None = None,
                 merge_results: Callable[[list[Any]], Any] | None = None, **kwargs: Any):
        self._bind(processor, args, kwargs, label, merge_results)

    def _bind(self, processor: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
              label: str | None, merge_results: Callable[[list[Any]], Any] | None) -> None:
        """Bind the arguments to ``processor``'s signature (set without ``__setattr__``, so that
        a frozen dataclass subclass, a kind's declaration (`jetbench.processors.kind_params`), binds too)."""
        if not callable(processor):
            raise JetbenchError(f"ProcessorSupplier needs a processor class or factory, got {processor!r}")
        try:
            signature = inspect.signature(processor)
            bound = signature.bind(*args, **kwargs)
        except (TypeError, ValueError) as exc:
            name = getattr(processor, "__name__", processor)
            raise JetbenchError(f"{label or name}: {exc}") from None
        bound.apply_defaults()
        default_label: str = getattr(processor, "__name__", type(processor).__name__)
        values = {
            "processor": processor,
            "params": dict(bound.arguments),
            "_kinds": {p.name: p.kind for p in signature.parameters.values()},
            "label": label or default_label,
        }
        if merge_results is not None:
            values["merge_results"] = merge_results
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __call__(self) -> Any:
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        kinds: dict[str, Any] = self._kinds
        for name, value in self.params.items():
            kind = kinds[name]
            if kind is inspect.Parameter.POSITIONAL_ONLY:
                args.append(value)
            elif kind is inspect.Parameter.VAR_POSITIONAL:
                args.extend(value)
            elif kind is inspect.Parameter.VAR_KEYWORD:
                kwargs.update(value)
            else:
                kwargs[name] = value
        return self.processor(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # only called when normal lookup fails; guard against recursion while unpickling
        params = self.__dict__.get("params")
        if params is not None and not name.startswith("__") and name in params:
            return params[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __repr__(self) -> str:
        return self.label


def supplier(processor: Callable[..., Any], /, *args: Any, label: str | None = None,
             merge_results: Callable[[list[Any]], Any] | None = None, **kwargs: Any) -> ProcessorSupplier:
    """A vertex supplier making ``processor(*args, **kwargs)`` per instance (see `ProcessorSupplier`)."""
    return ProcessorSupplier(processor, *args, label=label, merge_results=merge_results, **kwargs)


def made_by(supplier: Any, processor: Any) -> bool:
    """True if ``supplier`` is a `ProcessorSupplier` of ``processor`` (a class or factory)."""
    return isinstance(supplier, ProcessorSupplier) and supplier.processor is processor


def set_builder_code(fn: Callable[..., Any], code: str) -> None:
    """Give the library function ``fn`` the text the DAG builder shows for it (``"x[0]"``), read
    back by `builder_code`. Kept here, not on the function: a function compiled with mypyc
    (`jetbench.core.compiled`) cannot carry attributes."""
    _BUILDER_CODES[fn] = code


def builder_code(fn: Any) -> str | None:
    """The text the DAG builder shows for ``fn``: what `set_builder_code` gave a library function,
    or the ``__jetbench_code__`` the builder's own functions carry; None for any other.

    >>> from jetbench.processors.planning import pair_key
    >>> builder_code(pair_key), builder_code(len)
    ('x[0]', None)
    """
    try:
        code = _BUILDER_CODES.get(fn)
    except TypeError:  # unhashable callables have no entry
        code = None
    if code is None:
        code = getattr(fn, _BUILDER_CODE, None)
    return code if isinstance(code, str) else None


_BUILDER_CODE = "__jetbench_code__"
#: library function -> its builder text (a few module-level functions, alive as long as jetbench)
_BUILDER_CODES: dict[Any, str] = {}


__all__ = ["ProcessorSupplier", "builder_code", "made_by", "set_builder_code", "supplier"]
