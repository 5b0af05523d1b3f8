"""The files source: the lines of the files matching a glob, read on a dedicated thread.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from typing import Any, ClassVar, TextIO

from ..core.errors import JetbenchError
from ..core.inbox import Inbox
from ..core.outbox import Outbox
from ..core.processor import ProcessorContext
from .emitter import EmittingProcessor
from .kind_params import KindParams, text
from .snapshotting import restored_position, save_position

#: Characters of text a file source reads per ``complete()`` call (then it returns).
FILE_CHUNK_CHARS = 1 << 16

class FilesSourceP(EmittingProcessor):
    """Emits the lines (without the newline) of its share of ``paths``: file i goes to the
    instance with global index ``i % total_parallelism``.

    Non-cooperative (blocking file I/O). Each ``complete()`` reads about `FILE_CHUNK_CHARS`
    characters and emits them as one batch; it also copes with a refusing outbox (tests).

    Snapshots: each instance saves, under a broadcast key naming it, how many of its files it
    has finished and how many lines of the current one it has read (a text file cannot tell
    its position after ``readlines``); a restored instance opens that file and skips those
    lines. The files must not change in between.
    """

    snapshot_support: ClassVar[str] = "supported"

    is_cooperative = False

    def __init__(self, paths: list[str], encoding: str = "utf-8", glob_pattern: str | None = None):
        self.paths = paths
        self.encoding = encoding
        #: the glob the paths came from (what the DAG builder shows), if any
        self.glob_pattern = glob_pattern
        self._mine: list[str] = []
        self._file: TextIO | None = None
        self._files_done = 0  # of this instance's files, how many were read to the end
        self._lines = 0  # lines read from the current file
        self._skip = 0  # restored: lines of the next file opened already emitted

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
                self._lines = 0
                readline = self._file.readline
                while self._skip:  # restored: skip the lines emitted before the snapshot
                    self._skip -= 1
                    if readline():
                        self._lines += 1
            lines = self._file.readlines(FILE_CHUNK_CHARS)
            if lines:
                self._lines += len(lines)
                emitter.emit([line[:-1] if line[-1:] == "\n" else line for line in lines])
                return False
            self._file.close()
            self._file = None
            self._files_done += 1

    def save_to_snapshot(self) -> bool:
        if not self._emitter.flush():  # lines read before the barrier go first
            return False
        lines = self._lines if self._file is not None else self._skip
        return save_position(self.outbox, "FilesSourceP", self.context, self._files_done, lines)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        saved = restored_position(inbox, "FilesSourceP", self.context)
        if saved is None:
            return
        done, lines = saved
        del self._mine[len(self._mine) - done:]  # the files finished (the list is reversed)
        self._files_done = done
        self._skip = lines

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


@dataclass(frozen=True, eq=False, repr=False)
class FilesSource(KindParams):
    """The files source's parameters and vertex supplier (``files_source``): the lines of the
    files matching ``glob_pattern``, expanded once, here (a `JetbenchError` if nothing matches).
    """

    glob_pattern: str = text(shown="data/*.txt", was=("pattern",), help="glob of the files to read (lines)")
    encoding: str = text("utf-8")
    processor = FilesSourceP
    function = "files_source"

    def arguments(self) -> dict[str, Any]:
        return {**super().arguments(), "paths": matching_files(self.glob_pattern)}

    def describe(self) -> str:
        return f"files_source({self.glob_pattern!r}, {len(self.params['paths'])} files)"


#: the files source's vertex supplier (its declaration, `FilesSource`)
files_source = FilesSource


BUILDER_KINDS = (
    FilesSource.builder_kind(id="files", label="files", category="source", inputs=False, outputs=True,
                             description="the lines of files matching a glob"),
)
