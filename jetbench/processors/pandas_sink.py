"""The pandas sink: the job's result is a ``pandas.DataFrame`` of all items."""

from __future__ import annotations

from typing import Any

from .builder_kind import Kind
from .collect_sink import CollectSinkP, merge_lists
from .supplier import ProcessorSupplier, made_by


class PandasSinkP(CollectSinkP):
    """Collects every item, like `CollectSinkP`; its supplier merges them into a DataFrame."""


def merge_frame(parts: list[list[Any]]) -> Any:
    """The instances' items as one ``pandas.DataFrame``."""
    import pandas as pd

    return pd.DataFrame(merge_lists(parts))


def pandas_sink() -> ProcessorSupplier:
    """A sink whose items become a ``pandas.DataFrame``, the job's result, at job end.

    Named tuples, dataclasses and dicts give one column per field; other items go through
    ``pandas.DataFrame(items)`` as they are.
    """
    return ProcessorSupplier(PandasSinkP, label="pandas_sink()", merge_results=merge_frame)


BUILDER_KINDS = (
    Kind(id="pandas", label="pandas DataFrame", category="sink", inputs=True, outputs=False, params=(),
         build=lambda p, f, ns: pandas_sink(),
         code=lambda p, f: ("pandas_sink()", {"from jetbench.processors.pandas_sink import pandas_sink"}),
         description="the job's result is a pandas DataFrame of the items", read=lambda s, r: {} if made_by(s, PandasSinkP) else None,
         requires=("pandas",)),
)
