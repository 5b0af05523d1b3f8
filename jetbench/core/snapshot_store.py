"""The snapshot store: snapshots in an SQLite file (stdlib ``sqlite3``, WAL mode), as Jet keeps
them in IMaps.

Each owner (a job, ``job/<name>``, or a name `Job.export_snapshot` gave) has two alternating
slots (snapshot ``n`` goes to slot ``n % 2``), so writing snapshot ``n`` never touches the last
good one, ``n - 1``. A snapshot is written in one transaction: the slot's old rows are deleted,
the state goes in as chunks (one or more per processor instance, pickled ``(key, value)``
entries), and the **verification record** goes in last, with the number of chunks and a digest
of their bytes. A reader takes the newest slot whose verification record matches its chunks; a
torn or half-written one is skipped with a `SnapshotWarning` and the other slot is used.

Schema::

    chunk(owner, slot, snapshot_id, vertex, instance, seq, data BLOB)        -- the state
    verification(owner, slot, snapshot_id, created, chunks, bytes, digest, manifest)  -- last

``manifest`` is JSON: the snapshot format (`SNAPSHOT_FORMAT`) and, per vertex, its
parallelism, the instances that had finished, and the bytes saved. A snapshot of another format
is refused with `SnapshotFormatError` (its processors' entries would be misread), never used.

>>> import tempfile, os
>>> store = SnapshotStore(os.path.join(tempfile.mkdtemp(), "s.sqlite"))
>>> data = SnapshotData(1, {"src": VertexState(1, [[(BroadcastKey("offset"), 42)]], set())})
>>> store.write("job/demo", data)
>>> store.load("job/demo").vertices["src"].entries
[[(BroadcastKey(key='offset'), 42)]]
>>> store.owners()
{'job/demo': 1}
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .errors import JetbenchError
from .items import BroadcastKey

__all__ = ["SNAPSHOT_FORMAT", "BroadcastKey", "SnapshotData", "SnapshotFormatError", "SnapshotStore",
           "SnapshotWarning", "VertexState", "default_store_path"]

#: entries per chunk row: a large state is written as several rows
CHUNK_ENTRIES = 10_000

#: The shape of what processors save, as a number written with each snapshot: raise it whenever
#: a processor's saved entries change shape, so that a store kept across an upgrade (the default
#: one lives in the user's cache) is refused rather than misread. 1: the manifests without a
#: format (before 2026-11-26), when the session window saved its deadlines as a heap of
#: ``(end, seq, key)``; 2: the session window saves ``(last_wm, late, times, due)``.
SNAPSHOT_FORMAT = 2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunk (
    owner TEXT NOT NULL, slot INTEGER NOT NULL, snapshot_id INTEGER NOT NULL,
    vertex TEXT NOT NULL, instance INTEGER NOT NULL, seq INTEGER NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (owner, slot, vertex, instance, seq));
CREATE TABLE IF NOT EXISTS verification (
    owner TEXT NOT NULL, slot INTEGER NOT NULL, snapshot_id INTEGER NOT NULL, created REAL NOT NULL,
    chunks INTEGER NOT NULL, bytes INTEGER NOT NULL, digest TEXT NOT NULL, manifest TEXT NOT NULL,
    PRIMARY KEY (owner, slot));
"""


class SnapshotWarning(UserWarning):
    """A snapshot in the store was torn or half-written and is ignored; an older one is used."""


class SnapshotFormatError(JetbenchError):
    """A snapshot was written in another snapshot format (`SNAPSHOT_FORMAT`) than this jetbench
    reads: another version's processors saved it."""


@dataclass
class VertexState:
    """What one vertex saved: its parallelism, each instance's ``(key, value)`` entries (a list
    per instance index, or that list already pickled, as tasklets hand it over) and the
    instances that had finished."""

    parallelism: int
    entries: list[Any]
    done: set[int] = field(default_factory=set)

    @property
    def entry_count(self) -> int:
        return sum(len(e) for e in self.entries if isinstance(e, list))


@dataclass
class SnapshotData:
    """One whole snapshot: its id and every vertex's state; ``bytes`` per vertex once stored."""

    snapshot_id: int
    vertices: dict[str, VertexState]
    sizes: dict[str, int] = field(default_factory=dict)


def default_store_path() -> str:
    """``$XDG_CACHE_HOME/jetbench/snapshots.sqlite`` (``~/.cache/jetbench/...`` without it)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "jetbench", "snapshots.sqlite")


class SnapshotStore:
    """Snapshots in the SQLite file at ``path`` (default: `default_store_path`).

    Safe to use from several threads and processes: each operation opens its own connection, and
    SQLite serialises writers (a writer waits up to ``timeout`` seconds for another).

    ``fsync``: True (the default, SQLite's ``synchronous=FULL``) syncs the WAL file at every
    commit, so a stored snapshot survives a power cut. False (``synchronous=NORMAL``) does not:
    a committed snapshot still survives the process being killed (``kill -9``: the operating
    system holds it), and after a power cut the file is consistent but may have lost the newest
    snapshots (an older good one is read); it saves the sync, measured 0.3 to 2 ms a snapshot
    here (`benchmarks/README.md`).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, timeout: float = 30.0, fsync: bool = True):
        self.path = os.fspath(path) if path is not None else default_store_path()
        self.timeout = timeout
        self.fsync = fsync
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._db_pid = 0
        directory = os.path.dirname(os.path.abspath(self.path))
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as exc:
            raise JetbenchError(f"snapshot store {self.path!r}: cannot create its directory: {exc}") from None
        with self._connect() as db:
            db.executescript(_SCHEMA)

    def __repr__(self) -> str:
        return f"SnapshotStore({self.path!r})"

    def close(self) -> None:
        """Close the store's connection (the next operation opens it again)."""
        with self._lock:
            self._drop()

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """The store's one connection, under its lock. It stays open between operations: closing
        the last connection to a WAL file checkpoints it into the database with a sync and
        deletes it, which cost more than the write itself (10 to 15 ms a snapshot here); a
        connection that failed is closed, one inherited across ``fork`` is left alone."""
        with self._lock:
            db = self._db if self._db_pid == os.getpid() else None
            if db is None:
                db = self._open()
            try:
                yield db
            except sqlite3.DatabaseError as exc:
                self._drop()
                raise self._error(exc) from exc

    def _open(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise JetbenchError(f"snapshot store {self.path!r} cannot be opened: {exc}") from None
        try:
            self._use_wal(db)
            db.execute("PRAGMA synchronous=FULL" if self.fsync else "PRAGMA synchronous=NORMAL")
        except sqlite3.DatabaseError as exc:
            db.close()
            raise self._error(exc) from exc
        self._db, self._db_pid = db, os.getpid()
        return db

    def _error(self, exc: sqlite3.DatabaseError) -> JetbenchError:
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            return JetbenchError(f"snapshot store {self.path!r} is busy: {exc}")
        return JetbenchError(f"snapshot store {self.path!r} is corrupt or unreadable: {exc}")

    def _drop(self) -> None:
        db, self._db = self._db, None
        if db is not None and self._db_pid == os.getpid():
            with contextlib.suppress(sqlite3.Error):
                db.close()

    def _use_wal(self, db: sqlite3.Connection) -> None:
        """Put the file in WAL mode (it stays so). Only when it is not yet: switching takes a lock
        SQLite does not wait for, so stores opened at once on a new file retry it up to
        ``timeout``."""
        if db.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
            return
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    # -- writing ------------------------------------------------------------------------------

    def write(self, owner: str, data: SnapshotData, slot: int | None = None) -> None:
        """Write ``data`` as ``owner``'s snapshot, in one transaction, into slot
        ``snapshot_id % 2`` (or ``slot``); the verification record goes in last. Fills
        ``data.sizes`` (bytes per vertex)."""
        slot = data.snapshot_id % 2 if slot is None else slot
        rows: list[tuple[str, int, int, bytes]] = []
        manifest: dict[str, Any] = {}
        for vertex, state in sorted(data.vertices.items()):
            size = 0
            for instance, entries in enumerate(state.entries):
                if isinstance(entries, bytes):  # pickled by its tasklet at the barrier
                    blob = entries or pickle.dumps([], pickle.HIGHEST_PROTOCOL)
                    rows.append((vertex, instance, 0, blob))
                    size += len(blob)
                    continue
                for seq, start in enumerate(range(0, max(len(entries), 1), CHUNK_ENTRIES)):
                    try:
                        blob = pickle.dumps(entries[start:start + CHUNK_ENTRIES], pickle.HIGHEST_PROTOCOL)
                    except Exception as exc:
                        raise JetbenchError(f"vertex {vertex!r} instance {instance}: its snapshot state cannot "
                                            f"be pickled: {type(exc).__name__}: {exc}") from exc
                    rows.append((vertex, instance, seq, blob))
                    size += len(blob)
            data.sizes[vertex] = size
            manifest[vertex] = {"parallelism": state.parallelism, "done": sorted(state.done), "bytes": size}
        digest = hashlib.sha256()
        for _, _, _, blob in rows:
            digest.update(blob)
        total = sum(len(r[3]) for r in rows)
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("DELETE FROM verification WHERE owner = ? AND slot = ?", (owner, slot))
                db.execute("DELETE FROM chunk WHERE owner = ? AND slot = ?", (owner, slot))
                db.executemany("INSERT INTO chunk VALUES (?, ?, ?, ?, ?, ?, ?)",
                               [(owner, slot, data.snapshot_id, v, i, s, b) for v, i, s, b in rows])
                db.execute("INSERT INTO verification VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           (owner, slot, data.snapshot_id, time.time(), len(rows), total, digest.hexdigest(),
                            json.dumps({"format": SNAPSHOT_FORMAT, "vertices": manifest})))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def export(self, source: str, name: str) -> SnapshotData:
        """Copy ``source``'s last good snapshot under ``name`` (replacing what ``name`` held)."""
        data = self.load(source)
        if data is None:
            raise JetbenchError(f"snapshot store {self.path!r} holds no good snapshot of {source!r} to export")
        self.delete(name)
        self.write(name, data, slot=0)
        return data

    def delete(self, owner: str) -> None:
        """Forget every snapshot of ``owner``."""
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM verification WHERE owner = ?", (owner,))
            db.execute("DELETE FROM chunk WHERE owner = ?", (owner,))
            db.execute("COMMIT")

    # -- reading ------------------------------------------------------------------------------

    def owners(self) -> dict[str, int]:
        """Every owner with a snapshot, and the id of its newest verified one."""
        with self._connect() as db:
            rows = db.execute("SELECT owner, MAX(snapshot_id) FROM verification GROUP BY owner ORDER BY owner")
            return {str(o): int(i) for o, i in rows}

    def exists(self, owner: str) -> bool:
        return owner in self.owners()

    def load(self, owner: str) -> SnapshotData | None:
        """``owner``'s newest snapshot whose verification record matches its chunks, or None.

        A newer snapshot that is torn (chunks missing or damaged) or half-written (chunks without
        a verification record) is skipped with a `SnapshotWarning`. An unreadable file raises
        `JetbenchError`; a snapshot of another format (`SNAPSHOT_FORMAT`) `SnapshotFormatError`.
        """
        with self._connect() as db:
            checks = db.execute(
                "SELECT slot, snapshot_id, chunks, bytes, digest, manifest FROM verification WHERE owner = ? "
                "ORDER BY snapshot_id DESC", (owner,)).fetchall()
            verified_ids = {int(c[1]) for c in checks}
            newest = max(verified_ids, default=0)
            unverified = db.execute(
                "SELECT DISTINCT snapshot_id FROM chunk WHERE owner = ? AND snapshot_id > ?",
                (owner, newest)).fetchall()
            for (sid,) in unverified:
                if sid not in verified_ids:
                    warnings.warn(f"snapshot store {self.path!r}: snapshot {sid} of {owner!r} has no verification "
                                  f"record (half-written); it is ignored", SnapshotWarning, stacklevel=3)
            for slot, sid, n_chunks, n_bytes, digest, manifest in checks:
                rows = db.execute(
                    "SELECT vertex, instance, seq, data FROM chunk WHERE owner = ? AND slot = ? AND snapshot_id = ? "
                    "ORDER BY vertex, instance, seq", (owner, slot, sid)).fetchall()
                data = self._verified(owner, int(sid), rows, int(n_chunks), int(n_bytes), str(digest), str(manifest))
                if data is not None:
                    return data
        return None

    def _verified(self, owner: str, sid: int, rows: list[Any], n_chunks: int, n_bytes: int, digest: str,
                  manifest_text: str) -> SnapshotData | None:
        h = hashlib.sha256()
        for row in rows:
            h.update(row[3])
        problem = None
        if len(rows) != n_chunks:
            problem = f"{len(rows)} of its {n_chunks} chunks are there"
        elif sum(len(r[3]) for r in rows) != n_bytes or h.hexdigest() != digest:
            problem = "its chunks do not match their digest"
        if problem is not None:
            warnings.warn(f"snapshot store {self.path!r}: snapshot {sid} of {owner!r} is torn ({problem}); "
                          f"an older snapshot is used if there is one", SnapshotWarning, stacklevel=4)
            return None
        try:
            written = json.loads(manifest_text)
        except ValueError as exc:
            raise JetbenchError(f"snapshot store {self.path!r}: snapshot {sid} of {owner!r} cannot be read: its "
                                f"manifest is not JSON: {exc}") from exc
        form, manifest = _format_and_vertices(written)
        if form != SNAPSHOT_FORMAT:
            raise SnapshotFormatError(
                f"snapshot store {self.path!r}: snapshot {sid} of {owner!r} is in snapshot format {form}, written by "
                f"{'an older' if form < SNAPSHOT_FORMAT else 'a newer'} jetbench; this one reads format "
                f"{SNAPSHOT_FORMAT} (a processor's saved state changed shape) and will not misread it. Run the job "
                f"without resume or initial_snapshot, or forget the snapshot: SnapshotStore({self.path!r})"
                f".delete({owner!r})")
        try:
            vertices = {name: VertexState(int(m["parallelism"]), [[] for _ in range(int(m["parallelism"]))],
                                          {int(i) for i in m["done"]})
                        for name, m in manifest.items()}
            for vertex, instance, _, blob in rows:
                vertices[vertex].entries[instance].extend(pickle.loads(blob))
        except Exception as exc:
            raise JetbenchError(f"snapshot store {self.path!r}: snapshot {sid} of {owner!r} cannot be read: "
                                f"{type(exc).__name__}: {exc}") from exc
        return SnapshotData(sid, vertices, {name: int(m["bytes"]) for name, m in manifest.items()})


def _format_and_vertices(manifest: Any) -> tuple[int, dict[str, Any]]:
    """A manifest's snapshot format and its vertices: ``{"format": n, "vertices": {...}}``, or
    before formats were written (format 1) the vertices alone."""
    if isinstance(manifest, dict) and type(manifest.get("format")) is int and isinstance(manifest.get("vertices"), dict):
        return manifest["format"], manifest["vertices"]
    return 1, manifest
