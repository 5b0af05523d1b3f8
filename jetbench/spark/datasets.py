"""Datasets made by Spark itself, written once as parquet under the cache directory and reused.

Each dataset is a directory ``<cache>/datasets/<name>-<parameters>.parquet``: the first call
with some parameters generates it in Spark jobs and writes it (atomically: into a temporary
directory renamed at the end); later calls, in this process or another, read it back.
Contents depend on the parameters only, not on the number of partitions or the session.

- `events`: timestamped events ``seq, ts (ms), key, value`` for windowing and idle-CPU runs.
- `corpus`: lines of Zipf-distributed made-up words for word count (``id, line``).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..core.errors import JetbenchError

__all__ = ["corpus", "corpus_path", "dataset_dir", "events", "events_path"]

#: Bumped when a generator changes, so stale cached files are not reused.
VERSION = 1
#: Lines generated from one seeded random stream (content does not depend on partitioning).
BLOCK = 1024


def dataset_dir() -> Path:
    from ._session import cache_dir

    return cache_dir() / "datasets"


def _materialize(name: str, params: dict[str, Any], build: Callable[[Any], Any], session: Any) -> str:
    """The path of the dataset, generated and written first if it is not there yet (only then
    is a Spark session needed: ``session``, or the embedded one, started here)."""
    tag = "-".join(f"{k}{v}" for k, v in params.items())
    path = dataset_dir() / f"{name}-{tag}-v{VERSION}.parquet"
    if (path / "_SUCCESS").exists():
        return str(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        build(_spark(session)).write.mode("overwrite").parquet(str(tmp))
        if path.exists():  # a partial directory (no _SUCCESS) from an interrupted run
            shutil.rmtree(path, ignore_errors=True)
        try:
            os.rename(tmp, path)
        except OSError:
            if not (path / "_SUCCESS").exists():  # not another process winning the race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return str(path)


def _spark(session: Any) -> Any:
    if session is not None:
        return session
    from ._session import session as default_session

    return default_session()


def _check_count(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise JetbenchError(f"{name} must be an int >= {minimum}, got {value!r}")


# -- events ---------------------------------------------------------------------------------------


def events_path(n: int = 100_000, keys: int = 16, seed: int = 0, interval_ms: int = 1, disorder_ms: int = 0,
                *, partitions: int | None = None, session: Any = None) -> str:
    """Where `events` with these parameters is stored (generated first if needed)."""
    _check_count("events: n", n, 0)
    _check_count("events: keys", keys, 1)
    _check_count("events: interval_ms", interval_ms, 0)
    _check_count("events: disorder_ms", disorder_ms, 0)

    def build(spark: Any) -> Any:
        from pyspark.sql import functions as F

        parts = partitions or max(1, min(64, -(-n // 250_000)))
        seq = F.col("id")
        jitter = F.pmod(F.xxhash64(seq, F.lit(seed), F.lit("ts")), F.lit(disorder_ms + 1)) if disorder_ms else F.lit(0)
        return spark.range(0, n, 1, parts).select(
            seq.alias("seq"),
            (seq * F.lit(interval_ms) - jitter).alias("ts"),
            F.concat(F.lit("k"), F.pmod(F.xxhash64(seq, F.lit(seed), F.lit("key")), F.lit(keys)).cast("string"))
            .alias("key"),
            (F.pmod(F.xxhash64(seq, F.lit(seed), F.lit("value")), F.lit(1_000_000)) / F.lit(10_000.0)).alias("value"),
        )

    params = {"n": n, "keys": keys, "seed": seed, "interval": interval_ms, "disorder": disorder_ms}
    return _materialize("events", params, build, session)


def events(n: int = 100_000, keys: int = 16, seed: int = 0, interval_ms: int = 1, disorder_ms: int = 0,
           *, partitions: int | None = None, session: Any = None) -> Any:
    """A DataFrame of ``n`` timestamped events ``seq, ts, key, value``, in ``seq`` order.

    ``ts`` (long, ms) is ``seq * interval_ms``, minus up to ``disorder_ms`` of pseudo-random
    disorder; ``key`` is one of ``k0 .. k{keys-1}``; ``value`` a double in [0, 100), all
    derived from ``seed`` by hashing, so every run gives the same events.
    """
    path = events_path(n, keys, seed, interval_ms, disorder_ms, partitions=partitions, session=session)
    return _spark(session).read.parquet(path)


# -- corpus ---------------------------------------------------------------------------------------


def _corpus_lines(vocabulary_size: int, seed: int, zipf_s: float) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """``mapInArrow`` function: ids -> lines. Line i is drawn from a random stream seeded by
    ``(seed, i // BLOCK)``, so it does not depend on how ids are split into partitions."""

    def generate(batches: Iterator[Any]) -> Iterator[Any]:
        import itertools
        import random

        import pyarrow as pa

        from jetbench.datasets import vocabulary

        words = vocabulary(vocabulary_size, seed)
        cum_weights = list(itertools.accumulate(1.0 / (rank**zipf_s) for rank in range(1, vocabulary_size + 1)))
        separators = [" "] * 12 + [", ", ". ", "; ", " - ", "! "]
        rng = random.Random()
        block = next_in_block = -1

        def line() -> str:
            n = rng.randint(4, 16)
            picked = rng.choices(words, cum_weights=cum_weights, k=n)
            seps = rng.choices(separators, k=n)
            text = "".join(w + s for w, s in zip(picked, seps, strict=True)).strip()
            return text[:1].upper() + text[1:]

        for batch in batches:
            ids = batch.column(0).to_pylist()
            lines = []
            for i in ids:
                b, offset = divmod(i, BLOCK)
                if b != block or offset != next_in_block:
                    block, next_in_block = b, 0
                    rng.seed(seed * 1_000_003 + b)
                while next_in_block < offset:  # the block started in another batch: skip ahead
                    line()
                    next_in_block += 1
                lines.append(line())
                next_in_block += 1
            yield pa.RecordBatch.from_arrays([pa.array(ids, pa.int64()), pa.array(lines, pa.string())],
                                             names=["id", "line"])

    return generate


def corpus_path(lines: int = 200_000, vocabulary_size: int = 20_000, seed: int = 42, zipf_s: float = 1.1,
                *, partitions: int | None = None, session: Any = None) -> str:
    """Where `corpus` with these parameters is stored (generated first if needed)."""
    _check_count("corpus: lines", lines, 0)
    _check_count("corpus: vocabulary_size", vocabulary_size, 1)

    def build(spark: Any) -> Any:
        parts = partitions or max(4, min(64, -(-lines // 100_000)))
        ids = spark.range(0, lines, 1, parts)
        return ids.mapInArrow(_corpus_lines(vocabulary_size, seed, zipf_s), "id long, line string")

    params = {"lines": lines, "vocab": vocabulary_size, "seed": seed, "zipf": zipf_s}
    return _materialize("corpus", params, build, session)


def corpus(lines: int = 200_000, vocabulary_size: int = 20_000, seed: int = 42, zipf_s: float = 1.1,
           *, partitions: int | None = None, session: Any = None) -> Any:
    """A DataFrame of ``lines`` lines of text (columns ``id, line``) whose words follow Zipf's
    law, mixed-case and punctuated like `jetbench.datasets.corpus` (made by Spark tasks)."""
    path = corpus_path(lines, vocabulary_size, seed, zipf_s, partitions=partitions, session=session)
    return _spark(session).read.parquet(path)
