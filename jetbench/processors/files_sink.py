"""The files sink: each instance writes ``str(item)`` lines to files of its own.

Without a processing guarantee, instance k writes ``directory/part-{k:05d}``, one file, as the
items come: a reader sees lines as soon as they are flushed, and a failed job leaves what it
wrote.

Under a guarantee it is a two-phase sink (Flink's ``FileSink``, Jet's two-phase snapshot commit):
a reader of the directory only ever sees committed lines, never one a restore takes back.

* Instance k writes the lines of each snapshot epoch (the items between two barriers) to a hidden
  in-progress file, ``.part-{k:05d}-{epoch:09d}.inprogress``.
* Phase 1 (``snapshot_commit_prepare``, at the barrier) closes it and renames it to
  ``.part-{k:05d}-{epoch:09d}.pending``; the snapshot's state lists the epochs pending.
* Phase 2 (``snapshot_commit_finish(True)``, once the snapshot is stored) renames each pending
  file to ``part-{k:05d}-{epoch:09d}``, at once visible whole (a rename is atomic). A snapshot
  that could not be stored leaves its files pending, committed with the next one.
* At completion the last epoch goes pending; the tasklet commits it in the phase 2 of the
  snapshot that holds the instance's final state (`jetbench.core.snapshot_tasklet`).
* Restored from a snapshot, an instance first commits the pending files that snapshot lists
  (phase 2 may not have run before the failure), then deletes every file of its own that came
  later (in-progress and pending files, and committed ones of a later epoch), and goes on from
  the next epoch. Started afresh, it deletes every file of its own (an earlier run's).

So the committed files of instance k, in name order, are its output in order; ``part-*``
matches the committed files of every instance, with or without a guarantee.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from typing import Any, ClassVar, TextIO

from ..core.inbox import Inbox
from ..core.outbox import Outbox
from ..core.processor import Processor, ProcessorContext
from .kind_params import KindParams, text
from .snapshotting import instance_key, own_values

_KIND = "FilesSinkP"


def committed_name(index: int, epoch: int) -> str:
    """The committed file of instance ``index``'s lines of ``epoch`` (under a guarantee)."""
    return f"part-{index:05d}-{epoch:09d}"


def _pending_name(index: int, epoch: int) -> str:
    return f".part-{index:05d}-{epoch:09d}.pending"


def _in_progress_name(index: int, epoch: int) -> str:
    return f".part-{index:05d}-{epoch:09d}.inprogress"


def _own_files(directory: str, index: int) -> list[tuple[str, int | None]]:
    """Every file of instance ``index`` in ``directory``: ``(name, epoch)``, the epoch None for
    the single file of a job without a guarantee."""
    pattern = re.compile(rf"^\.?part-{index:05d}(?:-(\d+)(?:\.pending|\.inprogress)?)?$")
    found: list[tuple[str, int | None]] = []
    for name in os.listdir(directory):
        m = pattern.match(name)
        if m is not None:
            found.append((name, int(m.group(1)) if m.group(1) is not None else None))
    return found


class FilesSinkP(Processor):
    """Writes ``str(item)`` lines: ``directory/part-{k:05d}`` without a guarantee, committed
    ``directory/part-{k:05d}-{epoch:09d}`` files under one (k = global index; see the module).

    Non-cooperative (blocking file I/O); a file is flushed and closed in ``close()``.
    """

    snapshot_support: ClassVar[str] = "supported"
    #: the last epoch, pending at completion, is committed in the phase 2 of the snapshot holding
    #: the final state (`jetbench.core.snapshot_tasklet`)
    commits_after_completion: ClassVar[bool] = True

    is_cooperative = False

    def __init__(self, directory: str, encoding: str = "utf-8"):
        self.directory = directory
        self.encoding = encoding
        self.path: str | None = None  # the file without a guarantee
        self._file: TextIO | None = None
        self._index = 0
        self._two_phase = False
        self._epoch = 1  # the epoch whose lines the in-progress file takes
        self._pending: list[int] = []  # epochs prepared (pending files), not committed yet
        #: restored: (instance, last epoch of the snapshot, epochs it left pending) per old instance
        self._restored: list[tuple[int, int, list[int]]] | None = None
        self._started = False

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        os.makedirs(self.directory, exist_ok=True)
        self._index = k = context.global_index
        self.path = os.path.join(self.directory, f"part-{k:05d}")
        self._two_phase = context.processing_guarantee != "none"
        if not self._two_phase:
            self._remove(name for name, epoch in _own_files(self.directory, k) if epoch is not None)
            self._file = open(self.path, "w", encoding=self.encoding)  # noqa: SIM115 - closed in close()

    # -- the two phases --------------------------------------------------------------------------

    def _start(self) -> None:
        """Before the first file operation under a guarantee (a restore, if any, came first):
        commit what the restored snapshot left pending, delete everything later (see the module)."""
        self._started = True
        restored, self._restored = self._restored or [], None
        last = {index: (epoch, pending) for index, epoch, pending in restored}
        own_epoch = 0
        for index, (epoch, pending) in sorted(last.items()):
            for p in pending:
                src = os.path.join(self.directory, _pending_name(index, p))
                if os.path.exists(src):
                    os.replace(src, os.path.join(self.directory, committed_name(index, p)))
            if index != self._index:
                self._remove(name for name, e in _own_files(self.directory, index) if e is None or e > epoch
                             or name.startswith("."))
            else:
                own_epoch = epoch
        self._remove(name for name, e in _own_files(self.directory, self._index)
                     if e is None or e > own_epoch or name.startswith("."))
        self._epoch = max([own_epoch, *(epoch for epoch, _ in last.values())]) + 1

    def _remove(self, names: Any) -> None:
        for name in list(names):
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(self.directory, name))

    def _in_progress(self) -> TextIO:
        if not self._started:
            self._start()
        path = os.path.join(self.directory, _in_progress_name(self._index, self._epoch))
        self._file = file = open(path, "w", encoding=self.encoding)  # noqa: SIM115 - closed at the barrier
        return file

    def _prepare(self) -> None:
        """The current epoch's in-progress file (if it has one) becomes pending."""
        if not self._started:
            self._start()
        file, self._file = self._file, None
        if file is not None:
            file.close()
            os.replace(os.path.join(self.directory, _in_progress_name(self._index, self._epoch)),
                       os.path.join(self.directory, _pending_name(self._index, self._epoch)))
            self._pending.append(self._epoch)
        self._epoch += 1

    def snapshot_commit_prepare(self) -> bool:
        if self._two_phase:
            self._prepare()
        return True

    def snapshot_commit_finish(self, success: bool) -> bool:
        if self._two_phase and success:
            for epoch in self._pending:
                os.replace(os.path.join(self.directory, _pending_name(self._index, epoch)),
                           os.path.join(self.directory, committed_name(self._index, epoch)))
            self._pending = []
        return True

    # -- processing --------------------------------------------------------------------------------

    def process(self, ordinal: int, inbox: Inbox) -> None:
        file = self._file or self._in_progress()
        file.write("".join([f"{item}\n" for item in inbox.take()]))

    def complete(self) -> bool:
        if self._two_phase:
            self._prepare()  # the last epoch: committed in the phase 2 of the final state's snapshot
        return True

    def save_to_snapshot(self) -> bool:
        if not self._two_phase:
            return True
        if not self._started:
            self._start()
        pending = self._pending + ([self._epoch] if self._file is not None else [])
        return self.outbox.offer_to_snapshot(instance_key(_KIND, self.context), (self._index, self._epoch, pending))

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        mine, _, _ = own_values(inbox, _KIND, self.context)
        restored = self._restored if self._restored is not None else []
        for index, epoch, pending in mine:
            restored.append((index, epoch, list(pending)))
        self._restored = restored

    def close(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.flush()
            finally:
                file.close()


@dataclass(frozen=True, eq=False, repr=False)
class FilesSink(KindParams):
    """The files sink's parameters and vertex supplier (``files_sink``): instance k writes
    ``str(item)`` lines to ``directory/part-{k:05d}`` (under a processing guarantee: committed
    files ``directory/part-{k:05d}-{epoch:09d}``, see `jetbench.processors.files_sink`).

    >>> files_sink("out")
    files_sink('out')
    """

    directory: str | os.PathLike[str] = text(shown="out", help="instance k writes directory/part-0000k, a line per item")
    encoding: str = text("utf-8")
    processor = FilesSinkP
    function = "files_sink"

    def __post_init__(self) -> None:
        if isinstance(self.directory, os.PathLike):
            object.__setattr__(self, "directory", os.fspath(self.directory))
        super().__post_init__()

    def describe(self) -> str:
        return f"files_sink({self.directory!r})"


#: the files sink's vertex supplier (its declaration, `FilesSink`); ``directory`` may be a path
files_sink = FilesSink


BUILDER_KINDS = (
    FilesSink.builder_kind(id="files_sink", label="write files", category="sink", inputs=True, outputs=False,
                           description="writes str(item) lines to files"),
)
