"""Datasets made by Spark, cached as parquet and reused."""

from __future__ import annotations

import os

import pytest

from jetbench import JetbenchError
from jetbench.spark import datasets


def test_events(spark):
    df = datasets.events(5000, keys=7, seed=3)
    assert df.columns == ["seq", "ts", "key", "value"]
    rows = sorted(df.collect())
    assert [r.seq for r in rows] == list(range(5000))
    assert [r.ts for r in rows] == list(range(5000))  # one per ms, in order without disorder
    assert {r.key for r in rows} == {f"k{i}" for i in range(7)}
    assert all(0 <= r.value < 100 for r in rows)


def test_events_disorder_and_interval(spark):
    rows = sorted(datasets.events(2000, keys=2, seed=1, interval_ms=10, disorder_ms=25).collect())
    lags = [r.seq * 10 - r.ts for r in rows]
    assert min(lags) >= 0 and max(lags) <= 25 and len(set(lags)) > 5


def test_datasets_are_written_once_and_reused(spark):
    path = datasets.events_path(3000, keys=4, seed=9)
    marker = os.path.join(path, "_SUCCESS")
    written = os.stat(marker).st_mtime_ns
    assert datasets.events_path(3000, keys=4, seed=9) == path
    assert os.stat(marker).st_mtime_ns == written
    assert path.startswith(str(datasets.dataset_dir()))
    other = datasets.events_path(3000, keys=4, seed=10)
    assert other != path
    assert sorted(datasets.events(3000, keys=4, seed=9).collect()) != sorted(datasets.events(3000, keys=4, seed=10).collect())


def test_contents_do_not_depend_on_partitioning(spark, tmp_path, monkeypatch):
    first = sorted(datasets.corpus(3000, partitions=1).collect())
    events = sorted(datasets.events(3000, keys=5, seed=2, partitions=1).collect())
    monkeypatch.setenv("JETBENCH_CACHE", str(tmp_path))  # a second cache: generated again
    again = sorted(datasets.corpus(3000, partitions=3).collect())
    assert datasets.corpus_path(3000).startswith(str(tmp_path))
    assert again == first
    assert sorted(datasets.events(3000, keys=5, seed=2, partitions=4).collect()) == events


def test_corpus(spark):
    df = datasets.corpus(2000, vocabulary_size=300, seed=5)
    assert df.columns == ["id", "line"]
    rows = df.collect()
    assert sorted(r.id for r in rows) == list(range(2000))
    words = {w.strip(",.;-!").lower() for r in rows for w in r.line.split()}
    assert 100 < len(words - {""}) <= 300
    assert all(r.line[:1].isupper() for r in rows)


def test_bad_parameters():
    with pytest.raises(JetbenchError, match="keys"):
        datasets.events_path(10, keys=0)
    with pytest.raises(JetbenchError, match="lines"):
        datasets.corpus_path(-1)
