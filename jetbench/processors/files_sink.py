"""The files sink: each instance writes ``str(item)`` lines to a file of its own.
"""

from __future__ import annotations

import os
from typing import Any, TextIO

from ..core.inbox import Inbox
from ..core.outbox import Outbox
from ..core.processor import Processor, ProcessorContext
from .builder_kind import Kind, Param, Reader
from .supplier import ProcessorSupplier, made_by


class FilesSinkP(Processor):
    """Writes ``str(item)`` lines to ``directory/part-{k:05d}`` (k = global index).

    Non-cooperative (blocking file I/O); the file is flushed and closed in ``close()``.
    """

    snapshot_support = "unsupported"  # keeps state it cannot snapshot yet (issue 16)

    is_cooperative = False

    def __init__(self, directory: str, encoding: str = "utf-8"):
        self.directory = directory
        self.encoding = encoding
        self.path: str | None = None
        self._file: TextIO | None = None

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        os.makedirs(self.directory, exist_ok=True)
        self.path = os.path.join(self.directory, f"part-{context.global_index:05d}")
        self._file = open(self.path, "w", encoding=self.encoding)  # noqa: SIM115 - closed in close()

    def process(self, ordinal: int, inbox: Inbox) -> None:
        assert self._file is not None, "process() before init()"
        self._file.write("".join([f"{item}\n" for item in inbox.take()]))

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
