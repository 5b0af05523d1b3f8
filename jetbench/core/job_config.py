"""`JobConfig`: what a job asks of the engine beyond its DAG, Jet's ``JobConfig``.

>>> JobConfig()
JobConfig(processing_guarantee='none', snapshot_interval_ms=10000, max_restarts=3, snapshot_store=None, initial_snapshot=None, resume=False, on_code_change='warn')
>>> JobConfig(processing_guarantee="exactly_once", snapshot_interval_ms=500).snapshots
True
>>> JobConfig(ProcessingGuarantee.AT_LEAST_ONCE).processing_guarantee is ProcessingGuarantee.AT_LEAST_ONCE
True
>>> JobConfig(processing_guarantee="twice")
Traceback (most recent call last):
  ...
jetbench.core.errors.JetbenchError: processing_guarantee must be one of 'none', 'at_least_once', 'exactly_once', got 'twice'
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from .errors import JetbenchError

if TYPE_CHECKING:
    from .snapshot_store import SnapshotStore



class ProcessingGuarantee(enum.StrEnum):
    """A job's processing guarantee (Jet's ``ProcessingGuarantee``). A member is its name as a
    str (``"exactly_once"``), so a string names one wherever a guarantee is taken, and compares
    equal to it.

    >>> ProcessingGuarantee("exactly_once"), ProcessingGuarantee.NONE == "none"
    ('exactly_once', True)
    """

    NONE = "none"
    AT_LEAST_ONCE = "at_least_once"
    EXACTLY_ONCE = "exactly_once"

    def __repr__(self) -> str:  # as the string it stands for: a config's repr reads as it is written
        return repr(self.value)


NONE = ProcessingGuarantee.NONE
AT_LEAST_ONCE = ProcessingGuarantee.AT_LEAST_ONCE
EXACTLY_ONCE = ProcessingGuarantee.EXACTLY_ONCE
GUARANTEES = tuple(ProcessingGuarantee)

#: what ``on_code_change`` takes: warn (the default), refuse, or allow without a word (an upgrade)
CODE_CHANGE = ("warn", "refuse", "allow")

#: what ``snapshot_store`` takes: a `SnapshotStore`, the path of its SQLite file, or None (a
#: temporary store of the job's own, deleted when it ends)
StoreSpec = Union["SnapshotStore", str, "os.PathLike[str]", None]


@dataclass(frozen=True)
class JobConfig:
    """A job's processing guarantee and fault-tolerance settings.

    ``processing_guarantee``: ``"none"`` (the default: no snapshots, nothing on the hot path; a
    failure fails the job), ``"at_least_once"`` (snapshots without aligning inputs: after a
    restart some items may be processed twice) or ``"exactly_once"`` (aligned snapshots: the
    result equals a failure-free run's). ``snapshot_interval_ms``: time between snapshots (Jet's
    default, 10 s). ``max_restarts``: how many times a failed job restarts from its last good
    snapshot (from the start if it has none) before failing with the history of its failures.

    ``snapshot_store``: a `SnapshotStore` or the path of its SQLite file. **A store holds
    pickles, and starting from a snapshot unpickles them, which runs code the file names: trust
    a store, and an exported snapshot, as you trust code.** So jetbench opens only the store you
    name: without one (None) a job keeps its snapshots in a temporary store of its own, deleted
    when it ends, which restarts it within its process but cannot be resumed, exported from or
    started from; ``resume`` and ``initial_snapshot`` need a named store.

    ``initial_snapshot``: start from the named snapshot (one `Job.export_snapshot` made, or
    ``"job/<name>"``: the last good snapshot a job of that name left in the store, e.g. when its
    process was killed).

    ``resume``: a job submitted under a name whose snapshots are still in the store (its
    process was killed) goes on from the last good one (before ``initial_snapshot``, which
    the killed run had started from); with none there it starts as usual. So a process that
    may be killed runs the same code again to finish its job. The store says what it finds, as
    a `SnapshotWarning` naming the store and the job: when it lost the job's snapshots (its WAL
    file deleted, the file emptied or truncated, every snapshot torn), the job starts from the
    beginning after the warning. **A job that completed is not run again**: the store records
    its completion in the transaction that deletes its snapshots, and ``resume=True`` then
    returns at once a job that is already COMPLETED (``job.completed_earlier`` holds the
    record; ``join()`` returns None: its result went to the run that completed), with a
    `SnapshotWarning` saying when it completed. To run it again, submit it without ``resume``
    or forget the record: ``SnapshotStore(path).delete("job/<name>")``.

    ``on_code_change``: each snapshot keeps a fingerprint of every vertex's code (its processor
    and the user's functions: `jetbench.core.code_fingerprint`); a job started from a snapshot
    (``resume`` or ``initial_snapshot``) whose code differs is ``"warn"``-ed about (the
    default: a `SnapshotWarning` naming the vertex and what changed), ``"refuse"``-d (a
    `CodeChangedError` before anything runs) or ``"allow"``-ed without a word: Jet's job
    upgrade, an exported snapshot started into a changed pipeline on purpose.

    >>> import tempfile
    >>> from jetbench import DAG, Edge, ExecutionService
    >>> from jetbench.processors import collect_sink, items_source
    >>> dag = DAG()
    >>> src, out = dag.new_vertex("src", items_source(range(5))), dag.new_vertex("out", collect_sink())
    >>> _ = dag.edge(Edge.between(src, out))
    >>> store = tempfile.mkdtemp() + "/s.sqlite"
    >>> config = JobConfig("exactly_once", snapshot_store=store, resume=True)
    >>> sorted(ExecutionService().submit(dag, name="nightly", config=config).join())  # nothing to resume
    [0, 1, 2, 3, 4]
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     again = ExecutionService().submit(dag, name="nightly", config=config)
    >>> again.status.value, again.join(), str(seen[0].message).split(",")[0]
    ('completed', None, "job 'nightly' completed earlier")
    >>> JobConfig("exactly_once", resume=True)
    Traceback (most recent call last):
      ...
    jetbench.core.errors.JetbenchError: resume=True reads snapshots from a store, and a store holds pickles that run code when read: name the store the earlier run wrote, JobConfig(..., snapshot_store='path/to/store.sqlite'); jetbench opens no store by itself
    """

    processing_guarantee: ProcessingGuarantee | str = NONE
    snapshot_interval_ms: int = 10_000
    max_restarts: int = 3
    snapshot_store: StoreSpec = None
    initial_snapshot: str | None = None
    resume: bool = False
    on_code_change: str = "warn"

    def __post_init__(self) -> None:
        try:
            guarantee = ProcessingGuarantee(self.processing_guarantee)
        except ValueError:
            raise JetbenchError(f"processing_guarantee must be one of {', '.join(map(repr, GUARANTEES))}, "
                                f"got {self.processing_guarantee!r}") from None
        object.__setattr__(self, "processing_guarantee", guarantee)
        interval = self.snapshot_interval_ms
        if isinstance(interval, bool) or not isinstance(interval, int | float) or not interval > 0:
            raise JetbenchError(f"snapshot_interval_ms must be a number > 0, got {interval!r}")
        restarts = self.max_restarts
        if isinstance(restarts, bool) or not isinstance(restarts, int) or restarts < 0:
            raise JetbenchError(f"max_restarts must be an int >= 0, got {restarts!r}")
        if self.initial_snapshot is not None and (not isinstance(self.initial_snapshot, str)
                                                  or not self.initial_snapshot):
            raise JetbenchError(f"initial_snapshot must be a snapshot's name, got {self.initial_snapshot!r}")
        if not isinstance(self.resume, bool):
            raise JetbenchError(f"resume must be True or False, got {self.resume!r}")
        if self.on_code_change not in CODE_CHANGE:
            raise JetbenchError(f"on_code_change must be one of {', '.join(map(repr, CODE_CHANGE))}, "
                                f"got {self.on_code_change!r}")
        if self.resume and not self.snapshots:
            raise JetbenchError("resume=True needs a processing guarantee: a job without one leaves no snapshots")
        for asked, what in ((self.resume, "resume=True"), (self.initial_snapshot is not None, "initial_snapshot")):
            if asked and self.snapshot_store is None:
                raise JetbenchError(f"{what} reads snapshots from a store, and a store holds pickles that run code "
                                    f"when read: name the store the earlier run wrote, JobConfig(..., "
                                    f"snapshot_store='path/to/store.sqlite'); jetbench opens no store by itself")

    @property
    def snapshots(self) -> bool:
        """Whether the job takes snapshots (a processing guarantee was asked for)."""
        return self.processing_guarantee != NONE

    @property
    def exactly_once(self) -> bool:
        return self.processing_guarantee == EXACTLY_ONCE
