"""Python items held in Spark's memory: a cached DataFrame of pickled chunks that many jobs read.

`cached_items(items)` pickles a sequence of items in chunks (in order: each Spark partition holds
a contiguous run of them), puts the chunks into a one-column DataFrame, caches it and fills the
cache with one Spark job. Its `ItemsFrame.source()` is a pipeline source over those items that
any number of jobs can read:

- under `jetbench.spark.SparkRunner` it is a DataFrame source: each task of the first stage reads
  its own partition's chunks from Spark's cache and unpickles them in the worker, so the items
  cross to the JVM once, instead of travelling pickled inside every task's plan of every job
  (what a source over an in-memory list does: each task of its stage gets the whole list);
- on the local executor its instances fetch the partitions as any DataFrame source does.

``timestamped=True`` takes the items as ``(timestamp ms, item)`` pairs, as `from_events` and the
timestamped sources emit them; when the timestamps never decrease along the sequence, each
partition's, hence each instance's, never do either, and the source says so (``ordered``).
``release()`` frees the cache.
"""

from __future__ import annotations

import operator
import pickle
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

import pyarrow as pa

from ..core.errors import JetbenchError
from ..pipeline.connectors import Source
from ._arrow import ArrowDecoder
from .dataframe_sources import DataFrameSource

__all__ = ["ItemsFrame", "cached_items"]

#: items per pickled chunk (a row of the DataFrame) by default
CHUNK = 4096

#: the DataFrame's one column: a pickled list of items per row
COLUMN = "chunk"


@dataclass(frozen=True)
class ChunkDecoder(ArrowDecoder):
    """Record batches of pickled chunks -> the items, in order."""

    names: tuple[str, ...] = (COLUMN,)
    kind: str = "value"
    timestamp: str | None = None

    def decode(self, batch: pa.RecordBatch) -> list:
        items: list = []
        loads = pickle.loads
        for blob in batch.column(0).to_pylist():
            items += loads(blob)
        return items


class ItemsFrameSource(DataFrameSource):
    """A DataFrame source whose rows are pickled chunks of items (`ChunkDecoder`)."""

    def __init__(self, df: Any, timestamped: bool, item_count: int | None = None):
        super().__init__(df)
        self.decoder = ChunkDecoder()
        self._timestamped = timestamped
        #: how many items the frame holds (the SparkRunner keeps a small job's windows in Python)
        self.item_count = item_count

    @property
    def timestamped(self) -> bool:
        return self._timestamped

    def release(self) -> None:
        """Free Spark's cache of the items (every source of the same `ItemsFrame` reads it)."""
        self.df.unpersist()

    def __repr__(self) -> str:
        return f"items_frame_source({'timestamped' if self._timestamped else 'items'})"


@dataclass(frozen=True)
class ItemsFrame:
    """Items cached in Spark (`cached_items`): ``df`` (one binary column of pickled chunks, cached),
    how many items it holds and how they are stamped."""

    df: Any
    count: int
    timestamped: bool
    ordered: bool

    def source(self, name: str = "spark-items", local_parallelism: int | None = None) -> Source:
        """A pipeline source over the items (a new one per call; all read the same cache)."""
        return Source(name, ItemsFrameSource(self.df, self.timestamped, self.count), local_parallelism=local_parallelism,
                      timestamped=self.timestamped, ordered=self.ordered)

    def release(self) -> None:
        """Free Spark's cache of the items."""
        self.df.unpersist()


def cached_items(items: Sequence[Any], *, timestamped: bool = False, partitions: int | None = None,
                 chunk: int = CHUNK, session: Any = None) -> ItemsFrame:
    """``items`` cached in Spark as pickled chunks of ``chunk`` items, over ``partitions`` Spark
    partitions (default: the session's default parallelism), each a contiguous run of the items
    in order; the cache is filled before this returns. ``timestamped``: the items are
    ``(timestamp ms, item)`` pairs (see the module doc). ``session``: default `jetbench.spark.session()`."""
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise JetbenchError(f"cached_items: chunk must be an int >= 1, got {chunk!r}")
    if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1):
        raise JetbenchError(f"cached_items: partitions must be an int >= 1, got {partitions!r}")
    if not isinstance(items, Sequence):
        items = list(items)
    ordered = False
    if timestamped:
        bad = next((i for i, item in enumerate(items) if not (isinstance(item, tuple) and len(item) == 2)), None)
        if bad is not None:
            raise JetbenchError(f"cached_items: timestamped items are (timestamp, item) pairs; item {bad} is "
                                f"{items[bad]!r}")
        ts = [t for t, _ in items]
        ordered = all(map(operator.le, ts, islice(ts, 1, None)))
    if session is None:
        from ._session import session as embedded

        session = embedded()
    sc = session.sparkContext
    partitions = partitions or sc.defaultParallelism
    rows = [(pickle.dumps(list(items[i:i + chunk]), pickle.HIGHEST_PROTOCOL),) for i in range(0, len(items), chunk)]
    # parallelize slices the rows into contiguous runs, in order: partition p holds the p-th run
    df = session.createDataFrame(sc.parallelize(rows, partitions), f"{COLUMN} binary").cache()
    df.count()  # fill the cache now, not inside the first job that reads it
    return ItemsFrame(df, len(items), timestamped, ordered)
