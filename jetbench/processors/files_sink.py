"""The files sink: each instance writes ``str(item)`` lines to a file of its own.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar, TextIO

from ..core.inbox import Inbox
from ..core.outbox import Outbox
from ..core.processor import Processor, ProcessorContext
from .builder_kind import Kind, Param, Reader
from .snapshotting import instance_key, own_values
from .supplier import ProcessorSupplier, made_by


class FilesSinkP(Processor):
    """Writes ``str(item)`` lines to ``directory/part-{k:05d}`` (k = global index).

    Non-cooperative (blocking file I/O); the file is flushed and closed in ``close()``.

    Exactly-once under a processing guarantee, idempotent by offset: at each snapshot the file
    is flushed and its length (bytes) saved, under a broadcast key naming the instance; a
    restored instance cuts its file back to that length and appends from there, so the lines
    written after the snapshot by the failed execution are gone and written again once. (So
    that a restore keeps the file, an instance of such a job opens it at its first write, not
    in ``init``.)
    """

    snapshot_support: ClassVar[str] = "supported"

    is_cooperative = False

    def __init__(self, directory: str, encoding: str = "utf-8"):
        self.directory = directory
        self.encoding = encoding
        self.path: str | None = None
        self._file: TextIO | None = None
        self._length = 0  # restored: the length the file had at the snapshot

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        os.makedirs(self.directory, exist_ok=True)
        self.path = os.path.join(self.directory, f"part-{context.global_index:05d}")
        if context.processing_guarantee == "none":
            self._file = open(self.path, "w", encoding=self.encoding)  # noqa: SIM115 - closed in close()

    def _open(self) -> TextIO:
        """Open the file of a job with a guarantee: new, or (restored) cut back to its length."""
        assert self.path is not None, "write before init()"
        if not self._length:
            file = open(self.path, "w", encoding=self.encoding)  # noqa: SIM115 - closed in close()
        else:
            with open(self.path, "r+b") as raw:
                raw.truncate(self._length)
            file = open(self.path, "a", encoding=self.encoding)  # noqa: SIM115 - closed in close()
        self._file = file
        return file

    def process(self, ordinal: int, inbox: Inbox) -> None:
        file = self._file or self._open()
        file.write("".join([f"{item}\n" for item in inbox.take()]))

    def complete(self) -> bool:
        if self._file is None:
            self._open()  # an instance that got no item still leaves its (empty) file
        return True

    def save_to_snapshot(self) -> bool:
        file = self._file or self._open()
        file.flush()
        return self.outbox.offer_to_snapshot(instance_key("FilesSinkP", self.context),
                                             (self.path, os.path.getsize(file.name)))

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        mine, _, _ = own_values(inbox, "FilesSinkP", self.context)
        for path, length in mine:
            if path == self.path:
                self._length = length

    def close(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.flush()
            finally:
                file.close()


def files_sink(directory: str | os.PathLike[str], encoding: str = "utf-8") -> ProcessorSupplier:
    """A sink whose instance k writes ``str(item)`` lines to ``directory/part-{k:05d}``."""
    directory = os.fspath(directory)
    return ProcessorSupplier(FilesSinkP, directory, encoding, label=f"files_sink({directory!r})")


def _read(supplier: Any, reader: Reader) -> dict[str, Any] | None:
    if not made_by(supplier, FilesSinkP):
        return None
    return {"directory": supplier.directory, "encoding": supplier.encoding}


BUILDER_KINDS = (
    Kind("files_sink", "write files", "sink", True, False,
         (Param("directory", "str", "out", help="instance k writes directory/part-0000k, a line per item"),
          Param("encoding", "str", "utf-8")),
         lambda p, f, ns: files_sink(p["directory"], p["encoding"]),
         lambda p, f: (f"files_sink({p['directory']!r}, {p['encoding']!r})",
                       {"from jetbench.processors.files_sink import files_sink"}),
         "writes str(item) lines to files", read=_read),
)
