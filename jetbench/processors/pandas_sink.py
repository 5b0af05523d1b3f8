"""The pandas sink: the job's result is a ``pandas.DataFrame`` of all items.
"""

from __future__ import annotations

from typing import Any

from .collect_sink import CollectSink, CollectSinkP
from .supplier import ProcessorSupplier


class PandasSink(ProcessorSupplier):
    """Supplier of a `CollectSinkP` whose merged items become a ``pandas.DataFrame`` at job end.

    Named tuples, dataclasses and dicts give one column per field; other items go through
    ``pandas.DataFrame(items)`` as they are.
    """

    def __init__(self) -> None:
        super().__init__(CollectSinkP, label="pandas_sink")

    @staticmethod
    def merge_results(parts: list[list[Any]]) -> Any:
        import pandas as pd

        return pd.DataFrame(CollectSink.merge_results(parts))

    def __repr__(self) -> str:
        return "pandas_sink()"

