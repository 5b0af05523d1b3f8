"""The snapshot store under concurrent writers (issue 16): threads holding their own
`SnapshotStore` on one SQLite file, and separate processes, write snapshots of their own jobs
and of a shared one while others read; every load returns a whole, verified snapshot (never a
mix of two), and each job's newest snapshot is its last write."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import warnings

from jetbench.core.snapshot_store import SnapshotData, SnapshotStore, VertexState

WRITES = 40


def _data(sid: int, writer: int) -> SnapshotData:
    # every entry of one snapshot carries its id: a mixed snapshot would show two ids
    entries = [[(("k", i), (sid, writer)) for i in range(50)] for _ in range(2)]
    return SnapshotData(sid, {"v": VertexState(2, entries, set()), "w": VertexState(1, [[("x", (sid, writer))]])})


def _whole(data: SnapshotData | None) -> bool:
    if data is None:
        return True
    values = {v for state in data.vertices.values() for part in state.entries for _, v in part}
    return len(values) == 1 and next(iter(values))[0] == data.snapshot_id


def test_threads_with_their_own_store_on_one_file_never_read_a_mixed_snapshot(tmp_path):
    path = tmp_path / "s.sqlite"
    errors: list[BaseException] = []
    torn: list[int] = []

    def writer(w: int) -> None:
        try:
            store = SnapshotStore(path)
            for sid in range(1, WRITES + 1):
                store.write(f"job/own-{w}", _data(sid, w))
                store.write("job/shared", _data(w * 1000 + sid, w))
        except BaseException as exc:
            errors.append(exc)

    def reader() -> None:
        try:
            store = SnapshotStore(path)
            for _ in range(WRITES * 2):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    data = store.load("job/shared")
                if not _whole(data):
                    torn.append(data.snapshot_id if data else -1)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(1, 4)] + [threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert not torn, f"mixed snapshots read: {torn}"
    store = SnapshotStore(path)
    for w in range(1, 4):
        data = store.load(f"job/own-{w}")
        assert data is not None and data.snapshot_id == WRITES and _whole(data)
    shared = store.load("job/shared")
    assert shared is not None and _whole(shared)


_WRITER = textwrap.dedent("""
    import sys
    from jetbench.core.snapshot_store import SnapshotData, SnapshotStore, VertexState
    path, w, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    store = SnapshotStore(path)
    for sid in range(1, n + 1):
        entries = [[(("k", i), (sid, w)) for i in range(50)] for _ in range(2)]
        store.write(f"job/p{w}", SnapshotData(sid, {"v": VertexState(2, entries, set())}))
""")


def test_processes_writing_one_file_each_leave_their_newest_snapshot(tmp_path):
    path = tmp_path / "s.sqlite"
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), str(w), str(WRITES)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for w in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    store = SnapshotStore(path)
    for w in range(3):
        data = store.load(f"job/p{w}")
        assert data is not None and data.snapshot_id == WRITES and _whole(data)
    assert set(store.owners()) == {f"job/p{w}" for w in range(3)}
