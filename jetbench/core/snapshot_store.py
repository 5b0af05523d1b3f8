"""The snapshot store: snapshots in an SQLite file (stdlib ``sqlite3``, WAL mode), as Jet keeps
them in IMaps.

**A store holds pickles, and reading a snapshot unpickles them, which runs code the file names.
Trust a store file, and an exported snapshot in it, as you trust code: open only stores your
own jobs wrote.** jetbench opens no store by itself: a job's store is the one its `JobConfig`
names (without one, a temporary store private to the job, deleted when it ends).

Each owner (a job, ``job/<name>``, or a name `Job.export_snapshot` gave) has two alternating
slots (snapshot ``n`` goes to slot ``n % 2``), so writing snapshot ``n`` never touches the last
good one, ``n - 1``. A snapshot is written in one transaction: the slot's old rows are deleted,
the state goes in as chunks (one or more per processor instance, pickled ``(key, value)``
entries), and the **verification record** goes in last, with the number of chunks and a digest
of their bytes. A reader takes the newest slot whose verification record matches its chunks; a
torn or half-written one is skipped with a `SnapshotWarning` and the other slot is used.

A job also has a **job record**: ``running`` with the id of its newest snapshot, from its
run's first snapshot on (that write is checkpointed into the main file, so the record outlives
a lost WAL file), and at the end ``completed``, ``failed`` or ``cancelled``, written in the
transaction that deletes its snapshots. It is what tells a job that never ran from a store that
lost its snapshots, and a job that completed from one that has not (`resume_point`). A new run
of a job that does not resume forgets the earlier run's record and snapshots (`begin`).

Schema::

    chunk(owner, slot, snapshot_id, vertex, instance, seq, data BLOB)        -- the state
    verification(owner, slot, snapshot_id, created, chunks, bytes, digest, manifest)  -- last
    job(owner, state, started, updated, snapshot_id)                         -- a job's record

``manifest`` is JSON: the snapshot format (`SNAPSHOT_FORMAT`) and, per vertex, its
parallelism, the instances that had finished, the bytes saved and the fingerprint of its code
(`jetbench.core.code_fingerprint`). A snapshot of another format is refused with
`SnapshotFormatError` (its processors' entries would be misread), never used.

>>> import tempfile, os
>>> store = SnapshotStore(os.path.join(tempfile.mkdtemp(), "s.sqlite"))
>>> data = SnapshotData(1, {"src": VertexState(1, [[(BroadcastKey("offset"), 42)]], set())})
>>> store.write("job/demo", data, job=True)
>>> store.load("job/demo").vertices["src"].entries
[[(BroadcastKey(key='offset'), 42)]]
>>> store.owners(), store.record("job/demo").state
({'job/demo': 1}, 'running')
>>> store.finish("job/demo", "completed")
>>> store.owners(), store.record("job/demo").state
({}, 'completed')
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import shutil
import sqlite3
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .errors import JetbenchError
from .items import BroadcastKey

__all__ = ["JOB_STATES", "SNAPSHOT_FORMAT", "BroadcastKey", "CodeChangedError", "JobRecord", "SnapshotData",
           "SnapshotFormatError", "SnapshotStore", "SnapshotWarning", "VertexState"]

#: entries per chunk row: a large state is written as several rows
CHUNK_ENTRIES = 10_000

#: The shape of what processors save, as a number written with each snapshot: raise it whenever
#: a processor's saved entries change shape, so that a store kept across an upgrade is refused
#: rather than misread. 1: the manifests without a
#: format (before 2026-11-26), when the session window saved its deadlines as a heap of
#: ``(end, seq, key)``; 2: the session window saves ``(last_wm, late, times, due)``; 3: the files
#: sink saves ``(instance, epoch, pending epochs)`` (two-phase), no longer ``(path, length)``.
SNAPSHOT_FORMAT = 3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunk (
    owner TEXT NOT NULL, slot INTEGER NOT NULL, snapshot_id INTEGER NOT NULL,
    vertex TEXT NOT NULL, instance INTEGER NOT NULL, seq INTEGER NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (owner, slot, vertex, instance, seq));
CREATE TABLE IF NOT EXISTS verification (
    owner TEXT NOT NULL, slot INTEGER NOT NULL, snapshot_id INTEGER NOT NULL, created REAL NOT NULL,
    chunks INTEGER NOT NULL, bytes INTEGER NOT NULL, digest TEXT NOT NULL, manifest TEXT NOT NULL,
    PRIMARY KEY (owner, slot));
CREATE TABLE IF NOT EXISTS job (
    owner TEXT PRIMARY KEY, state TEXT NOT NULL, started REAL NOT NULL, updated REAL NOT NULL,
    snapshot_id INTEGER NOT NULL);
"""


class SnapshotWarning(UserWarning):
    """What a store found that the user should know: a snapshot torn or half-written (ignored,
    an older one is used), a store that lost a job's snapshots (it starts from the beginning),
    a job that completed earlier, code that changed since a snapshot was taken."""


class SnapshotFormatError(JetbenchError):
    """A snapshot was written in another snapshot format (`SNAPSHOT_FORMAT`) than this jetbench
    reads: another version's processors saved it."""


class CodeChangedError(JetbenchError):
    """A job was to start from a snapshot taken with other code in some vertex (its
    fingerprint differs) and ``JobConfig(on_code_change="refuse")`` refused it."""


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
    """One whole snapshot: its id and every vertex's state; ``bytes`` per vertex once stored;
    ``code``, per vertex, the fingerprints of its code (`jetbench.core.code_fingerprint`: part
    name to digest) when it was taken."""

    snapshot_id: int
    vertices: dict[str, VertexState]
    sizes: dict[str, int] = field(default_factory=dict)
    code: dict[str, dict[str, str]] = field(default_factory=dict)


#: the states of a job record: a run began, took a snapshot, ended
RUNNING, COMPLETED, FAILED, CANCELLED = "running", "completed", "failed", "cancelled"
JOB_STATES = (RUNNING, COMPLETED, FAILED, CANCELLED)


@dataclass(frozen=True)
class JobRecord:
    """What the store records of a job (``owner`` ``job/<name>``): its ``state`` (`JOB_STATES`),
    when its run took its first snapshot (``started``) and when the record was ``updated``
    (epoch seconds), and the id of the newest snapshot it committed (0: none)."""

    owner: str
    state: str
    started: float
    updated: float
    snapshot_id: int

    @property
    def when(self) -> str:
        """``updated`` in UTC, as a person reads it."""
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.updated))


def _damage(path: str) -> tuple[str | None, bool]:
    """What is wrong with the file at ``path`` before SQLite opens it (None: nothing seen), and
    whether it is damaged past use (a file shorter than its header says: SQLite would read the
    missing pages as an empty or malformed database).

    SQLite leaves a WAL-mode store as a main file (holding what was checkpointed) beside a
    ``-wal`` file (the commits since) and a ``-shm`` index; closing the last connection moves the
    WAL into the main file and deletes both. So a ``-shm`` without its ``-wal`` means the WAL was
    deleted after a crash, and the commits in it are lost."""
    if not os.path.exists(path):
        return None, False
    size = os.path.getsize(path)
    if size == 0:
        return "the file was empty (0 bytes)", False
    with open(path, "rb") as f:
        header = f.read(100)
    if len(header) == 100 and header.startswith(b"SQLite format 3\0"):
        page_size = int.from_bytes(header[16:18], "big")
        page_size = 65536 if page_size == 1 else page_size
        pages = int.from_bytes(header[28:32], "big")
        if header[24:28] != header[92:96]:  # the header's page count is stale: at least one page
            pages = 1
        if size < pages * page_size:
            return f"the file was truncated ({size} of its {pages * page_size} bytes are there)", True
    if os.path.exists(path + "-shm") and not os.path.exists(path + "-wal"):
        return ("its WAL file was missing (its -shm file was there): the commits since its last checkpoint "
                "are lost"), False
    return None, False


class SnapshotStore:
    """Snapshots in the SQLite file at ``path`` (created if there is none).

    **It holds pickles: reading a snapshot (`load`, a job started from one) runs code the file
    names. Trust a store as you trust code.**

    Safe to use from several threads and processes: each operation opens its own connection, and
    SQLite serialises writers (a writer waits up to ``timeout`` seconds for another).

    ``fsync``: True (the default, SQLite's ``synchronous=FULL``) syncs the WAL file at every
    commit, so a stored snapshot survives a power cut. False (``synchronous=NORMAL``) does not:
    a committed snapshot still survives the process being killed (``kill -9``: the operating
    system holds it), and after a power cut the file is consistent but may have lost the newest
    snapshots (an older good one is read); it saves the sync, measured 0.3 to 2 ms a snapshot
    here (`benchmarks/README.md`).

    A damaged file is said so, never used as if empty: ``found`` tells what opening it found (an
    empty file, a missing WAL file; None: nothing wrong), and a file shorter than its own header
    says (truncated) is moved aside to ``<path>.damaged-<time>`` with a `SnapshotWarning` and a
    new store is made. A file that is not SQLite raises `JetbenchError`.

    >>> import tempfile, warnings
    >>> path = tempfile.mkdtemp() + "/s.sqlite"
    >>> open(path, "wb").close()  # an empty file where a store was
    >>> SnapshotStore(path).found
    'the file was empty (0 bytes)'
    """

    def __init__(self, path: str | os.PathLike[str], timeout: float = 30.0, fsync: bool = True):
        if not isinstance(path, str | os.PathLike):
            raise JetbenchError(f"SnapshotStore needs the path of its file, got {path!r}")
        self.path = os.fspath(path)
        self.timeout = timeout
        self.fsync = fsync
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._db_pid = 0
        #: made by `private` for one job (deleted when it ends), not named by the user
        self.is_private = False
        directory = os.path.dirname(os.path.abspath(self.path))
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as exc:
            raise JetbenchError(f"snapshot store {self.path!r}: cannot create its directory: {exc}") from None
        #: what opening the file found wrong (see the class), None if nothing
        self.found, unusable = _damage(self.path)
        if unusable:  # looked at again a moment later: never move aside a file another process is growing
            time.sleep(0.1)
            self.found, unusable = _damage(self.path)
        if unusable:
            self._move_aside()
        with self._connect() as db:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not {"chunk", "verification", "job"} <= tables:
                db.executescript(_SCHEMA)
                db.execute("PRAGMA wal_checkpoint(PASSIVE)")  # the schema in the main file, not only the WAL

    @classmethod
    def private(cls, timeout: float = 30.0, fsync: bool = True) -> SnapshotStore:
        """A store in a new temporary directory, for one job that names none (`remove` it when
        the job ends): nobody else's snapshots are ever read from it."""
        store = cls(os.path.join(tempfile.mkdtemp(prefix="jetbench-snapshots-"), "snapshots.sqlite"), timeout, fsync)
        store.is_private = True
        return store

    def remove(self) -> None:
        """Close a `private` store and delete its directory (nothing for a named store)."""
        if self.is_private:
            self.close()
            shutil.rmtree(os.path.dirname(self.path), ignore_errors=True)

    def _move_aside(self) -> None:
        aside = f"{self.path}.damaged-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}"
        try:
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(self.path + suffix):
                    os.replace(self.path + suffix, aside + suffix)
        except OSError as exc:
            raise JetbenchError(f"snapshot store {self.path!r} is damaged ({self.found}) and could not be moved "
                                f"aside: {exc}. Move or delete it, then run again") from None
        self.found = f"{self.found}; it was moved to {aside!r} and a new store made"
        warnings.warn(f"snapshot store {self.path!r} is damaged: {self.found}. Jobs resumed from it start from "
                      f"the beginning", SnapshotWarning, stacklevel=3)

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

    def write(self, owner: str, data: SnapshotData, slot: int | None = None, job: bool = False) -> None:
        """Write ``data`` as ``owner``'s snapshot, in one transaction, into slot
        ``snapshot_id % 2`` (or ``slot``); the verification record goes in last. Fills
        ``data.sizes`` (bytes per vertex). ``job``: ``owner`` is a job, whose record goes
        ``running`` with this snapshot's id in the same transaction; on its run's first
        snapshot the WAL is then checkpointed, so the main file holds the record."""
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
            if vertex in data.code:
                manifest[vertex]["code"] = data.code[vertex]
        digest = hashlib.sha256()
        for _, _, _, blob in rows:
            digest.update(blob)
        total = sum(len(r[3]) for r in rows)
        first = False
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("DELETE FROM verification WHERE owner = ? AND slot = ?", (owner, slot))
                db.execute("DELETE FROM chunk WHERE owner = ? AND slot = ?", (owner, slot))
                db.executemany("INSERT INTO chunk VALUES (?, ?, ?, ?, ?, ?, ?)",
                               [(owner, slot, data.snapshot_id, v, i, s, b) for v, i, s, b in rows])
                now = time.time()
                db.execute("INSERT INTO verification VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           (owner, slot, data.snapshot_id, now, len(rows), total, digest.hexdigest(),
                            json.dumps({"format": SNAPSHOT_FORMAT, "vertices": manifest})))
                if job:
                    first = self._set_record(db, owner, RUNNING, now, data.snapshot_id)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            if first:
                db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    @staticmethod
    def _set_record(db: sqlite3.Connection, owner: str, state: str, now: float, snapshot_id: int | None = None
                    ) -> bool:
        """Set ``owner``'s job record (in the caller's transaction); True if it was not
        ``running`` before (a run's first snapshot, or its end)."""
        old = db.execute("SELECT state, started, snapshot_id FROM job WHERE owner = ?", (owner,)).fetchone()
        started = float(old[1]) if old is not None and old[0] == RUNNING else now
        sid = snapshot_id if snapshot_id is not None else (int(old[2]) if old is not None else 0)
        db.execute("INSERT OR REPLACE INTO job VALUES (?, ?, ?, ?, ?)", (owner, state, started, now, sid))
        return old is None or old[0] != state

    def begin(self, owner: str) -> None:
        """A new run of the job ``owner`` starts (not from its own snapshots): forget the
        snapshots and the record an earlier run left, in one transaction (a later resume must
        not take them for this run's). Nothing is written when there are none."""
        with self._connect() as db:
            left = db.execute("SELECT 1 FROM job WHERE owner = ? UNION ALL SELECT 1 FROM chunk WHERE owner = ? "
                              "LIMIT 1", (owner, owner)).fetchone()
            if left is None:
                return
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("DELETE FROM verification WHERE owner = ?", (owner,))
                db.execute("DELETE FROM chunk WHERE owner = ?", (owner,))
                db.execute("DELETE FROM job WHERE owner = ?", (owner,))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def finish(self, owner: str, state: str) -> None:
        """The job ``owner`` ended (``state``: completed, failed or cancelled): its snapshots are
        deleted and its record says so, in one transaction, then checkpointed into the main file.
        A process killed before the commit leaves the snapshots and a ``running`` record (a
        resume goes on from the last snapshot); after it, the end (a resume of a completed job
        does not run it again). There is no moment with neither."""
        if state not in (COMPLETED, FAILED, CANCELLED):
            raise JetbenchError(f"a job ends completed, failed or cancelled, got {state!r}")
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("DELETE FROM verification WHERE owner = ?", (owner,))
                db.execute("DELETE FROM chunk WHERE owner = ?", (owner,))
                self._set_record(db, owner, state, time.time())
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def export(self, source: str, name: str) -> SnapshotData:
        """Copy ``source``'s last good snapshot under ``name`` (replacing what ``name`` held)."""
        data = self.load(source)
        if data is None:
            raise JetbenchError(f"snapshot store {self.path!r} holds no good snapshot of {source!r} to export")
        self.delete(name)
        self.write(name, data, slot=0)
        return data

    def delete(self, owner: str) -> None:
        """Forget ``owner``: every snapshot of it and its job record (a job that completed runs
        again under ``resume=True``)."""
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM verification WHERE owner = ?", (owner,))
            db.execute("DELETE FROM chunk WHERE owner = ?", (owner,))
            db.execute("DELETE FROM job WHERE owner = ?", (owner,))
            db.execute("COMMIT")

    # -- reading ------------------------------------------------------------------------------

    def record(self, owner: str) -> JobRecord | None:
        """The job record of ``owner`` (``job/<name>``), or None if the store has none."""
        with self._connect() as db:
            row = db.execute("SELECT owner, state, started, updated, snapshot_id FROM job WHERE owner = ?",
                             (owner,)).fetchone()
        return None if row is None else JobRecord(str(row[0]), str(row[1]), float(row[2]), float(row[3]),
                                                  int(row[4]))

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
        return self._load(owner)[0]

    def _load(self, owner: str) -> tuple[SnapshotData | None, int]:
        """`load`, and how many snapshots of ``owner`` it skipped (torn or half-written)."""
        skipped = 0
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
                    skipped += 1
                    warnings.warn(f"snapshot store {self.path!r}: snapshot {sid} of {owner!r} has no verification "
                                  f"record (half-written); it is ignored", SnapshotWarning, stacklevel=4)
            for slot, sid, n_chunks, n_bytes, digest, manifest in checks:
                rows = db.execute(
                    "SELECT vertex, instance, seq, data FROM chunk WHERE owner = ? AND slot = ? AND snapshot_id = ? "
                    "ORDER BY vertex, instance, seq", (owner, slot, sid)).fetchall()
                data = self._verified(owner, int(sid), rows, int(n_chunks), int(n_bytes), str(digest), str(manifest))
                if data is not None:
                    return data, skipped
                skipped += 1
        return None, skipped

    def resume_point(self, owner: str, stacklevel: int = 2) -> tuple[SnapshotData | None, JobRecord | None]:
        """What ``resume=True`` goes on from: the job ``owner``'s newest good snapshot (or None)
        and its job record (None: the store never held the job).

        When the snapshot is missing or older than the record says, and the store can tell it
        lost data (the record says snapshots were committed, every slot is torn, the file was
        empty, truncated or lost its WAL), a `SnapshotWarning` says so, naming the store and
        the job, before the job starts from the beginning (or from the older snapshot).

        >>> import tempfile, warnings
        >>> store = SnapshotStore(tempfile.mkdtemp() + "/s.sqlite")
        >>> store.resume_point("job/new")  # never ran: nothing to say
        (None, None)
        >>> store.write("job/lost", SnapshotData(7, {}), job=True)
        >>> with store._connect() as db:  # the snapshots go, the record stays (as a lost WAL leaves it)
        ...     _ = db.execute("DELETE FROM verification")
        >>> with warnings.catch_warnings(record=True) as seen:
        ...     warnings.simplefilter("always")
        ...     data, record = store.resume_point("job/lost")
        >>> data, record.state, str(seen[0].message).split(":")[0]
        (None, 'running', "job 'lost' starts from the beginning")
        """
        data, skipped = self._load(owner)
        record = self.record(owner)
        job = owner[4:] if owner.startswith("job/") else owner
        found: list[str] = []
        if record is not None and record.state == RUNNING and (data is None or data.snapshot_id < record.snapshot_id):
            found.append(f"its record says snapshot {record.snapshot_id} was committed ({record.when}), but "
                         + ("none is left" if data is None else f"the newest left is {data.snapshot_id}"))
        if skipped and data is None:
            found.append(f"{'the' if skipped == 1 else 'all'} {skipped} snapshot{'s' if skipped > 1 else ''} of "
                         f"it there {'is' if skipped == 1 else 'are'} torn or half-written")
        lost = bool(found)
        if self.found is not None and (data is None or found or record is not None):
            found.append(self.found)
        if found and data is None:
            what = ("has lost its snapshots of it" if lost else
                    "holds no snapshot of it and cannot tell whether it held any")
            warnings.warn(f"job {job!r} starts from the beginning: the snapshot store {self.path!r} {what} "
                          f"({'; '.join(found)}). Output it wrote before may be written again: clear its sinks' "
                          f"output first if they cannot take items twice, or put back a copy of the store and "
                          f"resume again", SnapshotWarning, stacklevel=stacklevel)
        elif found and data is not None:
            warnings.warn(f"job {job!r} resumes from snapshot {data.snapshot_id}, and the snapshot store "
                          f"{self.path!r} may have lost newer ones ({'; '.join(found)}). Output written after "
                          f"snapshot {data.snapshot_id} may be written again", SnapshotWarning, stacklevel=stacklevel)
        return data, record

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
                          f"an older snapshot is used if there is one", SnapshotWarning, stacklevel=5)
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
        code = {name: {str(k): str(v) for k, v in m["code"].items()} for name, m in manifest.items()
                if isinstance(m.get("code"), dict)}
        return SnapshotData(sid, vertices, {name: int(m["bytes"]) for name, m in manifest.items()}, code)


def _format_and_vertices(manifest: Any) -> tuple[int, dict[str, Any]]:
    """A manifest's snapshot format and its vertices: ``{"format": n, "vertices": {...}}``, or
    before formats were written (format 1) the vertices alone."""
    if isinstance(manifest, dict) and type(manifest.get("format")) is int and isinstance(manifest.get("vertices"), dict):
        return manifest["format"], manifest["vertices"]
    return 1, manifest
