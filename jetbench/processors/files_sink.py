"""The files sink: each instance writes ``str(item)`` lines to a file of its own.
"""

from __future__ import annotations

import os
from typing import TextIO

from ..core.inbox import Inbox
from ..core.outbox import Outbox
from ..core.processor import Processor, ProcessorContext
from .supplier import ProcessorSupplier


class FilesSinkP(Processor):
    """Writes ``str(item)`` lines to ``directory/part-{k:05d}`` (k = global index).

    Non-cooperative (blocking file I/O); the file is flushed and closed in ``close()``.
    """

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


class FilesSink(ProcessorSupplier):
    """Supplier of `FilesSinkP`; ``directory`` and ``encoding`` are its params."""

    def __init__(self, directory: str | os.PathLike[str], encoding: str = "utf-8"):
        super().__init__(FilesSinkP, os.fspath(directory), encoding, label="files_sink")

    def __repr__(self) -> str:
        return f"files_sink({self.directory!r})"

