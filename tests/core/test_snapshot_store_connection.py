"""The snapshot store's one connection (issue 16, snapshot cost): it stays open between
operations, is shared by the threads using the store, is opened again after `close` and after
a failure, and both sync modes write snapshots another store reads at once."""

from __future__ import annotations

import os
import sqlite3
import threading

import pytest

from jetbench.core.errors import JetbenchError
from jetbench.core.snapshot_store import SnapshotData, SnapshotStore, VertexState


def _data(sid: int) -> SnapshotData:
    return SnapshotData(sid, {"agg": VertexState(1, [[(k, sid) for k in range(100)]], set())})


@pytest.mark.parametrize("fsync", [True, False])
def test_a_snapshot_written_is_read_at_once_by_another_store_in_both_sync_modes(tmp_path, fsync):
    writer = SnapshotStore(tmp_path / "s.sqlite", fsync=fsync)
    reader = SnapshotStore(tmp_path / "s.sqlite")
    for sid in (1, 2, 3):
        writer.write("job/x", _data(sid))
        loaded = reader.load("job/x")
        assert loaded is not None and loaded.snapshot_id == sid
        assert loaded.vertices["agg"].entries == [[(k, sid) for k in range(100)]]
    with sqlite3.connect(writer.path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_the_connection_stays_open_and_close_moves_the_wal_into_the_file(tmp_path):
    store = SnapshotStore(tmp_path / "s.sqlite")
    store.write("job/x", _data(1))
    assert os.path.exists(store.path + "-wal"), "an open connection keeps the WAL file"
    store.close()
    assert not os.path.exists(store.path + "-wal"), "closing the last connection checkpoints the WAL"
    assert store.load("job/x").snapshot_id == 1  # opened again
    store.write("job/x", _data(2))
    assert SnapshotStore(store.path).load("job/x").snapshot_id == 2


def test_threads_share_the_store_and_its_connection(tmp_path):
    store = SnapshotStore(tmp_path / "s.sqlite")
    errors: list[BaseException] = []

    def work(w: int) -> None:
        try:
            for sid in range(1, 21):
                store.write(f"job/{w}", _data(sid))
                loaded = store.load(f"job/{w}")
                assert loaded is not None and loaded.snapshot_id == sid
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.owners() == {f"job/{w}": 20 for w in range(4)}


def test_a_failed_connection_is_dropped_and_opened_again(tmp_path):
    store = SnapshotStore(tmp_path / "s.sqlite")
    store.write("job/x", _data(1))
    store.close()
    good = (tmp_path / "s.sqlite").read_bytes()
    (tmp_path / "s.sqlite").write_bytes(b"not a database" * 100)
    with pytest.raises(JetbenchError, match="corrupt or unreadable"):
        store.load("job/x")
    (tmp_path / "s.sqlite").write_bytes(good)
    assert store.load("job/x").snapshot_id == 1
