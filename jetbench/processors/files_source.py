"""The files source: the lines of the files matching a glob, read on a dedicated thread.
"""

from __future__ import annotations

import glob
import os
from typing import TextIO

from ..core.errors import JetbenchError
from ..core.outbox import Outbox
from ..core.processor import ProcessorContext
from .emitter import EmittingProcessor
from .supplier import ProcessorSupplier

#: Characters of text a file source reads per ``complete()`` call (then it returns).
FILE_CHUNK_CHARS = 1 << 16

class FilesSourceP(EmittingProcessor):
    """Emits the lines (without the newline) of its share of ``paths``: file i goes to the
    instance with global index ``i % total_parallelism``.

    Non-cooperative (blocking file I/O). Each ``complete()`` reads about `FILE_CHUNK_CHARS`
    characters and emits them as one batch; it also copes with a refusing outbox (tests).
    """

    is_cooperative = False

    def __init__(self, paths: list[str], encoding: str = "utf-8"):
        self.paths = paths
        self.encoding = encoding
        self._mine: list[str] = []
        self._file: TextIO | None = None

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        super().init(outbox, context)
        self._mine = list(self.paths[context.global_index :: context.total_parallelism])
        self._mine.reverse()  # pop() from the end takes them in path order

    def complete(self) -> bool:
        emitter = self._emitter
        if not emitter.flush():
            return False
        while True:
            if self._file is None:
                if not self._mine:
                    return True
                self._file = open(self._mine.pop(), encoding=self.encoding)  # noqa: SIM115 - closed below or in close()
            lines = self._file.readlines(FILE_CHUNK_CHARS)
            if lines:
                emitter.emit([line[:-1] if line[-1:] == "\n" else line for line in lines])
                return False
            self._file.close()
            self._file = None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def matching_files(glob_pattern: str) -> list[str]:
    """The regular files matching ``glob_pattern`` (``**`` recurses), sorted by path."""
    paths = sorted(p for p in glob.glob(os.path.expanduser(glob_pattern), recursive=True) if os.path.isfile(p))
    if not paths:
        raise JetbenchError(f"files source: no file matches {glob_pattern!r}")
    return paths


class FilesSource(ProcessorSupplier):
    """Supplier of `FilesSourceP`; the glob is expanded once, here (an error if nothing matches)."""

    def __init__(self, glob_pattern: str, encoding: str = "utf-8"):
        super().__init__(FilesSourceP, matching_files(glob_pattern), encoding, label="files_source")
        self.glob_pattern = glob_pattern

    def __repr__(self) -> str:
        return f"files_source({self.glob_pattern!r}, {len(self.paths)} files)"

