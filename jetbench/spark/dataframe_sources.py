"""Spark-backed pipeline sources: a DataFrame, a table or parquet files, read as jetbench items.

``dataframe(df)`` is a *partitioned, non-cooperative* source: the vertex's instances share the
DataFrame's Spark partitions (instance k of n reads the k-th contiguous slice), each on its
own thread, so the blocking Spark calls never run on a cooperative worker. Data moves as Arrow
record batches: ``mapInArrow`` turns every batch into Arrow IPC bytes inside Spark; the source
fetches its partitions in groups (as many as the session has cores, computed in parallel, the
next group fetched while this one is decoded) and decodes the batches into items, in the
partitions' order.

``parquet(path)`` reads the files' row groups with pyarrow directly (no JVM in the way): the
row groups are the partitions, split over the instances the same way. ``engine="spark"`` reads
them through ``spark.read.parquet`` as a DataFrame instead.

``replay=rate_per_s`` loads the whole DataFrame first (when the source is made, so loading is
never inside a timed run), then emits its items on the wall clock at that rate, each stamped
with its creation time: a timestamped, cooperative source for idle-CPU experiments.

Under `jetbench.spark.SparkRunner` these sources are not fetched to the driver at all: the
DataFrame's Spark partitions (or the parquet row groups) feed the first stage directly.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa

from ..core.errors import JetbenchError
from ..core.inbox import Inbox
from ..pipeline.connectors import Source
from ..processors.builder_kind import Kind, Param, Reader, Unreadable, eval_expr
from ..processors.emitter import EmittingProcessor
from ..processors.generator_source import GeneratorP
from ..processors.snapshotting import restored_position, save_position
from ._arrow import IPC_SCHEMA, ArrowDecoder, batches_to_ipc, item_kind

__all__ = ["DataFrameSource", "ParquetSource", "ReplaySource", "dataframe", "parquet", "replay", "table"]


@dataclass(frozen=True)
class Replay:
    """Emit loaded items at ``rate_per_s`` (over all instances), timestamped at creation."""

    rate_per_s: float

    def __post_init__(self) -> None:
        rate = self.rate_per_s
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate < float("inf"):
            raise JetbenchError(f"replay: rate_per_s must be a finite number > 0, got {rate!r}")


def replay(rate_per_s: float) -> Replay:
    """The ``replay=`` option of `dataframe`: ``dataframe(df, replay=replay(10_000))``."""
    return Replay(rate_per_s)


def _first(row: Any) -> Any:
    return row[0]


class IpcReader:
    """Task side of a DataFrame source: a record is one Arrow IPC blob -> lists of items."""

    def __init__(self, decoder: ArrowDecoder):
        self.decoder = decoder

    def read(self, blob: bytes) -> Iterator[list]:
        for batch in pa.ipc.open_stream(blob):
            yield self.decoder.decode(batch)


class SplitReader:
    """Task side of a parquet source: a record is a list of row-group fragments -> lists of items."""

    def __init__(self, decoder: ArrowDecoder, schema: pa.Schema, batch_size: int):
        self.decoder = decoder
        self.schema = schema
        self.batch_size = batch_size

    def read(self, splits: list) -> Iterator[list]:
        columns = list(self.decoder.names)
        for split in splits:
            for batch in split.to_batches(schema=self.schema, columns=columns, batch_size=self.batch_size):
                if batch.num_rows:
                    yield self.decoder.decode(batch)


class BatchReader:
    """SparkRunner's task side of a DataFrame source: the DataFrame's own Arrow batches in a
    ``mapInArrow`` task -> lists of items."""

    def __init__(self, decoder: ArrowDecoder):
        self.decoder = decoder

    def read_partition(self, partition: int, batches: Iterator[pa.RecordBatch]) -> Iterator[list]:
        decode = self.decoder.decode
        for batch in batches:
            if batch.num_rows:
                yield decode(batch)


class SplitGroupReader:
    """SparkRunner's task side of a parquet source: Spark partition ``p`` reads the row groups of
    ``groups[p]`` with pyarrow (its input is one placeholder row)."""

    def __init__(self, reader: SplitReader, groups: list[list]):
        self.reader = reader
        self.groups = groups

    def read_partition(self, partition: int, batches: Iterator[pa.RecordBatch]) -> Iterator[list]:
        for _ in batches:  # the placeholder row
            pass
        return self.reader.read(self.groups[partition])


def _identity(iterator: Any) -> Any:
    return iterator


class DataFrameSource:
    """Supplier of `ArrowSourceP` over one DataFrame (also usable as a DAG vertex supplier).

    Holds the DataFrame and, once first needed, the RDD of Arrow IPC blobs all instances read
    from, so they agree on the partitions. It is not picklable: `SparkRunner` reads the
    DataFrame inside Spark instead of shipping the supplier.
    """

    #: Items per ``complete()`` call at most (a decoded batch is emitted in slices of this).
    chunk = 1 << 16

    def __init__(self, df: Any, columns: Sequence[Any] | None = None, as_: Any = dict,
                 timestamp: str | None = None):
        if columns is not None:
            if isinstance(columns, str):
                columns = [columns]
            df = df.select(*columns)
        names = tuple(df.columns)
        if timestamp is not None and timestamp not in names:
            raise JetbenchError(f"dataframe source: timestamp column {timestamp!r} is not among the columns {list(names)}")
        self.df = df
        #: the Spark table the DataFrame reads, when `table` made it (what the DAG builder shows)
        self.table_name: str | None = None
        self.decoder = ArrowDecoder(names, item_kind(as_, names), timestamp)
        self._lock = threading.Lock()
        self._rdd: Any = None
        self._partitions: int | None = None

    @property
    def timestamped(self) -> bool:
        return self.decoder.timestamp is not None

    def ipc_rdd(self) -> Any:
        """An RDD with one Arrow IPC stream (bytes) per record batch, in partition order."""
        with self._lock:
            if self._rdd is None:
                self._rdd = self.df.mapInArrow(batches_to_ipc, IPC_SCHEMA).rdd.map(_first)
                self._partitions = self._rdd.getNumPartitions()
            return self._rdd

    @property
    def num_partitions(self) -> int:
        self.ipc_rdd()
        partitions = self._partitions
        assert partitions is not None  # set with the RDD
        return partitions

    def fetch(self, partitions: list[int]) -> list[bytes]:
        """The IPC blobs of some Spark partitions, in order (one Spark job, computing them in parallel)."""
        rdd = self.ipc_rdd()
        return rdd.context.runJob(rdd, _identity, partitions)

    @property
    def reader(self) -> IpcReader:
        return IpcReader(self.decoder)

    def spark_partitions(self, default_partitions: int) -> int:
        """SparkRunner: the DataFrame's own partitions."""
        return self.num_partitions

    def spark_frame(self, spark: Any, partitions: int) -> Any:
        """SparkRunner: the DataFrame whose batches `partition_reader` turns into items, in the tasks."""
        return self.df

    def partition_reader(self, partitions: int) -> BatchReader:
        return BatchReader(self.decoder)

    def part_count(self) -> int:
        return self.num_partitions

    def read(self, parts: list[int]) -> Iterator[list]:
        """Lists of items of the Spark partitions ``parts``, in order. Partitions are fetched as
        many at a time as the session has cores, the next group while this one is decoded."""
        if not parts:
            return
        from concurrent.futures import ThreadPoolExecutor

        size = max(1, self.df.sparkSession.sparkContext.defaultParallelism)
        groups = [parts[i:i + size] for i in range(0, len(parts), size)]
        pool = ThreadPoolExecutor(1, thread_name_prefix="spark-source-prefetch")
        try:
            future = pool.submit(self.fetch, groups[0])
            for i in range(len(groups)):
                blobs = future.result()
                if i + 1 < len(groups):
                    future = pool.submit(self.fetch, groups[i + 1])
                for blob in blobs:
                    for batch in pa.ipc.open_stream(blob):
                        yield self.decoder.decode(batch)
                del blobs
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def __call__(self) -> ArrowSourceP:
        return ArrowSourceP(self)

    def __reduce__(self) -> Any:
        raise TypeError(
            "a jetbench.spark DataFrame source holds a DataFrame and cannot be pickled; "
            "SparkRunner reads the DataFrame inside Spark instead"
        )

    def __repr__(self) -> str:
        return f"dataframe_source({list(self.decoder.names)}, as_={self.decoder.kind!r})"


class ArrowSourceP(EmittingProcessor):
    """Reads its contiguous slice of the supplier's parts (Spark partitions or parquet row
    groups) in order, one Arrow batch at a time, and emits the items. Non-cooperative: the
    reads block (Spark jobs, or file I/O).

    Snapshots: each instance saves how many batches of its slice it has taken and the row
    offset within the last one (under a broadcast key naming the instance); a restored
    instance reads its slice again from the start, skips those batches without emitting them
    and goes on from that row (the parts are read in the same order every time)."""

    is_cooperative = False
    snapshot_support: ClassVar[str] = "supported"

    def __init__(self, supplier: Any):
        self.supplier = supplier
        self._lists: Iterator[list] = iter(())
        self._items: list = []
        self._pos = 0
        self._batches = 0  # batches of this instance's slice taken from ``_lists`` so far

    def init(self, outbox, context) -> None:
        super().init(outbox, context)
        total = self.supplier.part_count()
        k, n = context.global_index, context.total_parallelism
        self._lists = self.supplier.read(list(range(k * total // n, (k + 1) * total // n)))

    def complete(self) -> bool:
        emitter = self._emitter
        if not emitter.flush():
            return False
        while self._pos >= len(self._items):
            items = next(self._lists, None)
            if items is None:
                return True
            self._items, self._pos = items, 0
            self._batches += 1
        end = min(len(self._items), self._pos + self.supplier.chunk)
        chunk = self._items[self._pos:end] if self._pos or end < len(self._items) else self._items
        self._pos = end
        emitter.emit(chunk)
        return False

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():  # rows taken before the barrier go first
            return False
        return save_position(self.outbox, "ArrowSourceP", self.context, self._batches, self._pos)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        saved = restored_position(inbox, "ArrowSourceP", self.context)
        if saved is None:
            return
        batches, pos = saved
        items: list = []
        for taken in range(batches):
            got = next(self._lists, None)
            if got is None:
                raise JetbenchError(f"vertex {self.context.vertex_name!r}: the snapshot read {batches} batches, "
                                    f"the source now has {taken}; its data changed")
            items = got
        self._items, self._pos, self._batches = items, pos, batches

    def close(self) -> None:
        close = getattr(self._lists, "close", None)
        if close is not None:
            close()


#: The processor of `DataFrameSource` (kept under its own name for readers of the DAG).
DataFrameSourceP = ArrowSourceP


class ParquetSource:
    """Supplier of `ArrowSourceP` over parquet files read with pyarrow (also a DAG vertex supplier).

    The partitions are the row groups of the files under ``path`` (sorted by file path; hive
    ``key=value`` directories add their columns). Picklable: under SparkRunner the row groups
    are read inside the Spark tasks.
    """

    chunk = 1 << 16
    batch_size = 1 << 16

    def __init__(self, path: str, columns: Sequence[str] | None = None, as_: Any = dict, timestamp: str | None = None):
        import pyarrow.dataset as pads

        self.path = path
        try:
            dataset = pads.dataset(path, format="parquet", partitioning="hive")
        except (OSError, ValueError) as exc:
            raise JetbenchError(f"parquet source: cannot read {path!r}: {exc}") from exc
        self.schema = dataset.schema
        if isinstance(columns, str):
            columns = [columns]
        names = tuple(columns) if columns is not None else tuple(self.schema.names)
        missing = [c for c in names if c not in self.schema.names]
        if missing:
            raise JetbenchError(f"parquet source: no column {missing[0]!r} in {path!r} (columns: {self.schema.names})")
        if timestamp is not None and timestamp not in names:
            raise JetbenchError(f"parquet source: timestamp column {timestamp!r} is not among the columns {list(names)}")
        fragments = sorted(dataset.get_fragments(), key=lambda f: f.path)
        self.splits = [rg for f in fragments for rg in f.split_by_row_group()]
        self.decoder = ArrowDecoder(names, item_kind(as_, names), timestamp)

    @property
    def timestamped(self) -> bool:
        return self.decoder.timestamp is not None

    @property
    def reader(self) -> SplitReader:
        return SplitReader(self.decoder, self.schema, self.batch_size)

    def part_count(self) -> int:
        return len(self.splits)

    def read(self, parts: list[int]) -> Iterator[list]:
        """Lists of items of the row groups ``parts``, in order."""
        return self.reader.read([self.splits[p] for p in parts])

    def spark_partitions(self, default_partitions: int) -> int:
        """SparkRunner: ``min(row groups, default_partitions)`` partitions (at least 1)."""
        return max(1, min(len(self.splits), default_partitions))

    def spark_frame(self, spark: Any, partitions: int) -> Any:
        """SparkRunner: one placeholder row per Spark partition; the task reads its row groups."""
        return spark.range(0, partitions, 1, partitions)

    def partition_reader(self, partitions: int) -> SplitGroupReader:
        """Partition ``p`` of ``partitions`` reads a contiguous group of row groups."""
        s, n = len(self.splits), partitions
        return SplitGroupReader(self.reader, [self.splits[p * s // n:(p + 1) * s // n] for p in range(n)])

    def __call__(self) -> ArrowSourceP:
        return ArrowSourceP(self)

    def __repr__(self) -> str:
        return f"parquet_source({self.path!r}, {len(self.splits)} row groups, as_={self.decoder.kind!r})"


class ReplaySource:
    """Supplier of a `GeneratorP` over loaded items: item s is due ``s / rate_per_s`` seconds
    after the job starts and is emitted as ``(creation time in ms, item)``."""

    def __init__(self, items: list, rate_per_s: float):
        self.items = items
        self.rate_per_s = rate_per_s

    def __call__(self) -> GeneratorP:
        return GeneratorP(self.rate_per_s, self.items.__getitem__, timestamped=True, count=len(self.items))

    def __len__(self) -> int:
        return len(self.items)

    def __repr__(self) -> str:
        return f"replay({len(self.items)} items at {self.rate_per_s:g}/s)"


def dataframe(
    df: Any,
    columns: Sequence[Any] | None = None,
    as_: Any = dict,
    replay: float | Replay | None = None,
    *,
    timestamp: str | None = None,
    allowed_lag: float = 0,
    name: str = "spark.dataframe",
    local_parallelism: int | None = None,
) -> Source:
    """A source reading ``df`` (optionally only ``columns``) as items.

    ``as_``: ``dict`` (column -> value), ``tuple``, ``"row"`` (pyspark ``Row``) or ``"value"``
    (the value of a single column). ``timestamp``: a column giving each item's event time (ms,
    or a timestamp/date column), which makes a timestamped source (items ``(ts, item)``,
    watermarks trailing by ``allowed_lag`` ms). ``replay``: a rate (items/s) or `replay`
    object: load now, emit later at that rate with creation timestamps (see the module doc).
    """
    supplier = DataFrameSource(df, columns, as_, timestamp)
    if replay is None:
        return Source(name, supplier, local_parallelism=local_parallelism,
                      timestamped=supplier.timestamped, allowed_lag=allowed_lag)
    return _replay_source(supplier.decoder, supplier.df.toArrow(), replay, timestamp, name, local_parallelism,
                          allowed_lag)


def _load_parquet(supplier: ParquetSource) -> pa.Table:
    batches = [b for split in supplier.splits
               for b in split.to_batches(schema=supplier.schema, columns=list(supplier.decoder.names))]
    return pa.Table.from_batches(batches, schema=pa.schema([supplier.schema.field(n) for n in supplier.decoder.names]))


def _replay_source(decoder: ArrowDecoder, table: pa.Table, replay: float | Replay, timestamp: str | None, name: str,
                   local_parallelism: int | None, allowed_lag: float) -> Source:
    if timestamp is not None:
        raise JetbenchError(f"{name}: replay emits creation timestamps; leave timestamp=None")
    if not isinstance(replay, Replay):
        replay = Replay(replay)
    items = decoder.decode_table(table)
    return Source(f"{name}-replay", ReplaySource(items, replay.rate_per_s), local_parallelism=local_parallelism,
                  timestamped=True, allowed_lag=allowed_lag)


def table(name: str, columns: Sequence[Any] | None = None, as_: Any = dict, replay: float | Replay | None = None,
          **options: Any) -> Source:
    """The Spark table ``name`` (of `jetbench.spark.session`) as a source; see `dataframe`."""
    from ._session import session

    options.setdefault("name", f"spark.table({name})")
    source = dataframe(session().table(name), columns, as_, replay, **options)
    if isinstance(source.supplier, DataFrameSource):
        source.supplier.table_name = name
    return source


def parquet(path: str | os.PathLike, columns: Sequence[Any] | None = None, as_: Any = dict,
            replay: float | Replay | None = None, *, engine: str = "arrow", timestamp: str | None = None,
            allowed_lag: float = 0, name: str | None = None, local_parallelism: int | None = None) -> Source:
    """The parquet file or directory at ``path`` as a source (options as in `dataframe`).

    ``engine="arrow"`` (default) reads the row groups with pyarrow, in this process on the
    local executor and inside the Spark tasks under SparkRunner; ``engine="spark"`` reads
    ``spark.read.parquet(path)`` as a DataFrame source.
    """
    path = os.fspath(path)
    name = name or f"spark.parquet({os.path.basename(path.rstrip('/')) or path})"
    if engine == "spark":
        from ._session import session

        return dataframe(session().read.parquet(path), columns, as_, replay, timestamp=timestamp,
                         allowed_lag=allowed_lag, name=name, local_parallelism=local_parallelism)
    if engine != "arrow":
        raise JetbenchError(f"parquet source: engine must be 'arrow' or 'spark', got {engine!r}")
    supplier = ParquetSource(path, columns, as_, timestamp)
    if replay is None:
        return Source(name, supplier, local_parallelism=local_parallelism, timestamped=supplier.timestamped,
                      allowed_lag=allowed_lag)
    return _replay_source(supplier.decoder, _load_parquet(supplier), replay, timestamp, name, local_parallelism,
                          allowed_lag)


# -- in the DAG builder ---------------------------------------------------------------------------

_AS = Param("as_", "choice", "dict", choices=("dict", "tuple", "row", "value"),
            help="items as dicts, tuples, pyspark Rows, or the value of a single column")
_COLUMNS = Param("columns", "expr", "", optional=True, help="the columns to read, e.g. ['line'] (empty: all)")
_TIMESTAMP = Param("timestamp", "str", "", optional=True,
                   help="a column with event time: items become (ts, item) pairs (empty: none)")
_IMPORT = "from jetbench.spark.dataframe_sources import "


def _as(p: dict[str, Any]) -> Any:
    return {"dict": dict, "tuple": tuple}.get(p["as_"], p["as_"])


def _args_code(p: dict[str, Any]) -> str:
    cols = (p.get("columns") or "").strip() or "None"
    ts = f", timestamp={p['timestamp']!r}" if p.get("timestamp") else ""
    as_ = p["as_"] if p["as_"] in ("dict", "tuple") else repr(p["as_"])
    return f"{cols}, {as_}{ts}"


def _columns(p: dict[str, Any], ns: dict[str, Any], what: str) -> Any:
    text = (p.get("columns") or "").strip()
    return eval_expr(text, ns, f"{what}.columns") if text else None


def _common(supplier: Any) -> dict[str, Any]:
    decoder = supplier.decoder
    return {"as_": decoder.kind, "timestamp": decoder.timestamp or ""}


def _read_dataframe(supplier: Any, reader: Reader) -> dict[str, Any] | None:
    if not isinstance(supplier, DataFrameSource) or supplier.table_name is not None:
        return None
    name = next((k for k, value in reader.namespace.items() if value is supplier.df and k.isidentifier()
                 and not k.startswith("_")), None)
    if name is None:
        raise Unreadable("a Spark DataFrame object: bind it to a name in the notebook to edit it here")
    return {"df": name, "columns": "", **_common(supplier)}


def _read_table(supplier: Any, reader: Reader) -> dict[str, Any] | None:
    if not isinstance(supplier, DataFrameSource) or supplier.table_name is None:
        return None
    names = list(supplier.decoder.names)
    table_names = list(supplier.df.sparkSession.table(supplier.table_name).columns)
    return {"table": supplier.table_name, "columns": "" if names == table_names else repr(names), **_common(supplier)}


def _read_parquet(supplier: Any, reader: Reader) -> dict[str, Any] | None:
    if not isinstance(supplier, ParquetSource):
        return None
    names = list(supplier.decoder.names)
    columns = "" if names == list(supplier.schema.names) else repr(names)
    return {"path": supplier.path, "columns": columns, "engine": "arrow", **_common(supplier)}


BUILDER_KINDS = (
    Kind("spark_dataframe", "Spark DataFrame", "source", False, True,
         (Param("df", "expr", "df", help="a Spark DataFrame: a name or expression in the notebook"),
          _COLUMNS, _AS, _TIMESTAMP),
         lambda p, f, ns: dataframe(eval_expr(p["df"], ns, "df"), _columns(p, ns, "df"), _as(p),
                                    timestamp=p["timestamp"] or None).supplier,
         lambda p, f: (f"dataframe({p['df'].strip()}, {_args_code(p)}).supplier", {_IMPORT + "dataframe"}),
         "the rows of a Spark DataFrame, read partition by partition", read=_read_dataframe,
         requires=("pyspark", "pyarrow")),
    Kind("spark_parquet", "parquet files", "source", False, True,
         (Param("path", "str", "data.parquet", help="a parquet file or directory"), _COLUMNS, _AS,
          Param("engine", "choice", "arrow", choices=("arrow", "spark"),
                help="arrow: read row groups with pyarrow; spark: through spark.read.parquet"),
          _TIMESTAMP),
         lambda p, f, ns: parquet(p["path"], _columns(p, ns, "parquet"), _as(p), engine=p["engine"],
                                  timestamp=p["timestamp"] or None).supplier,
         lambda p, f: (f"parquet({p['path']!r}, {_args_code(p)}"
                       + ("" if p["engine"] == "arrow" else f", engine={p['engine']!r}") + ").supplier",
                       {_IMPORT + "parquet"}),
         "the rows of parquet files (no Spark session needed with engine=arrow)", read=_read_parquet,
         requires=("pyspark", "pyarrow")),
    Kind("spark_table", "Spark table", "source", False, True,
         (Param("table", "str", "my_table", help="a table of the Spark session"), _COLUMNS, _AS, _TIMESTAMP),
         lambda p, f, ns: table(p["table"], _columns(p, ns, "table"), _as(p), timestamp=p["timestamp"] or None).supplier,
         lambda p, f: (f"table({p['table']!r}, {_args_code(p)}).supplier", {_IMPORT + "table"}),
         "the rows of a table of the Spark session", read=_read_table, requires=("pyspark", "pyarrow")),
)
