"""Exception types raised by jetbench. Every error a user can meet derives from `JetbenchError`.

A job failure is reported the way a user reads it: the `JobError` names the vertex and
instance, the user's function and line (the first frame outside the engine) and the item being
processed; the engine's frames stay in ``__cause__`` for whoever wants them. In IPython, a
jetbench error renders through ``_render_traceback_`` as that short report followed by the
user's frames only.
"""

from __future__ import annotations

import contextlib
import os
import reprlib
import sys
import traceback
import weakref
from collections.abc import Callable
from types import CodeType, FrameType, TracebackType

#: the engine's own machinery: frames in these files come before the user's code in a failure
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ENGINE_PATHS = tuple(os.path.join(_PACKAGE_DIR, d) + os.sep for d in ("core", "processors", "pipeline")) + (
    os.path.join(_PACKAGE_DIR, "runners.py"),
    # the compiled engine's frames: mypyc names them by the path it compiled, relative to the
    # checkout (setup.py), whatever directory the build is installed in
    "jetbench/core/",
    "jetbench/processors/",
)
#: the pseudo-filenames of code jetbench generates (fused transforms), registered in linecache
GENERATED_FILE_PREFIX = "<jetbench "

#: what a `JobError` reports of the failing processor's input: the very item, the batch it was
#: in (both noted by the processor with `note_failing_item`), or what was left in its inbox
ITEM = "item"
BATCH = "batch"
INBOX = "inbox"
_NOTE = "_jetbench_failing_item"


def is_engine_file(filename: str) -> bool:
    """Whether a frame in ``filename`` is the engine's (core, processors, pipeline, run(), or
    code the engine generated) rather than the user's."""
    return filename.startswith(_ENGINE_PATHS) or filename.startswith(GENERATED_FILE_PREFIX)


#: code the engine generated in the user's own file (a fused chain whose steps it inlined)
_GENERATED_CODE: weakref.WeakSet[CodeType] = weakref.WeakSet()


def note_generated_code(code: CodeType) -> None:
    """Mark ``code`` as the engine's, though its file is the user's: its frames are left out
    of a failure's user frames unless the failure is in them (an inlined step's expression)."""
    _GENERATED_CODE.add(code)


def is_generated_code(code: CodeType) -> bool:
    """Whether ``code`` is code jetbench generated (a fused chain's, inlined steps or not)."""
    return code.co_filename.startswith(GENERATED_FILE_PREFIX) or code in _GENERATED_CODE


def is_engine_code(code: CodeType) -> bool:
    """Whether a frame running ``code`` is the engine's (`is_engine_file`, or generated)."""
    return is_engine_file(code.co_filename) or code in _GENERATED_CODE


#: how a report names a file of code: a notebook cell's code as IPython does (``Cell In[5]``),
#: set by the layer that knows IPython (`register_location_label`); None for a real file
_location_label: Callable[[str], str | None] | None = None


#: whether IPython shows tracebacks in colour (its ``%colors`` is not NoColor), set with the label
_in_colour: Callable[[], bool] | None = None
_RED, _CYAN, _GREEN, _DEFAULT = "\x1b[31m", "\x1b[36m", "\x1b[32m", "\x1b[39m"


def register_location_label(label: Callable[[str], str | None] | None,
                            in_colour: Callable[[], bool] | None = None) -> None:
    """Name the code of ``filename`` in reports with ``label(filename)`` (None: its path); the
    reports IPython shows (``_render_traceback_``) are coloured as its own when ``in_colour()``."""
    global _location_label, _in_colour
    _location_label, _in_colour = label, in_colour


def _coloured() -> bool:
    try:
        return _in_colour is not None and _in_colour()
    except Exception:
        return False


def _exception_only(exc: BaseException) -> list[str]:
    """``Type: message`` as `traceback.format_exception_only`, the type in IPython's red when
    IPython shows colours."""
    lines = traceback.format_exception_only(type(exc), exc)
    qualified = f"{type(exc).__module__}.{type(exc).__qualname__}"
    public = public_name(type(exc))
    if lines and public != qualified and lines[-1].startswith(qualified):
        lines[-1] = public + lines[-1][len(qualified):]
    if lines and _coloured():
        name, sep, rest = lines[-1].partition(": ")
        if sep and len(lines) == 1:
            lines[-1] = f"{_RED}{name}{_DEFAULT}{sep}{rest}"
    return lines


def public_name(cls: type) -> str:
    """The name a user imports ``cls`` by: ``jetbench.JobError`` for an error the package
    exports (its defining module, ``jetbench.core.errors``, is an implementation detail), else
    the qualified name Python prints."""
    name = cls.__qualname__
    package = sys.modules.get("jetbench")
    if cls.__module__.startswith("jetbench.") and getattr(package, name, None) is cls:
        return f"jetbench.{name}"
    return name if cls.__module__ == "builtins" else f"{cls.__module__}.{name}"


def location_label(filename: str) -> str | None:
    """``Cell In[5]`` for the code of a notebook cell, None for a file (or no label known)."""
    label = _location_label
    if label is None:
        return None
    try:
        return label(filename)
    except Exception:  # naming a cell never breaks an error report
        return None


def location(filename: str, lineno: int | None) -> str:
    """Where a line is, as a user reads it: ``Cell In[5], line 3`` or ``/path/file.py:3``."""
    label = location_label(filename)
    return f"{label}, line {lineno}" if label else f"{filename}:{lineno}"


def _positioned(tb: TracebackType | None, keep: list[bool] | None = None) -> traceback.StackSummary:
    """The frames of ``tb`` (those ``keep`` marks, else all) with their column positions, so that
    a formatted frame carries the caret under the failing expression."""
    stack = traceback.TracebackException(BaseException, BaseException(), tb).stack
    return traceback.StackSummary.from_list(
        [fs for k, fs in enumerate(stack) if keep is None or (k < len(keep) and keep[k])])


def user_frames(tb: TracebackType | None) -> traceback.StackSummary:
    """The frames of a processor failure's traceback from the first one outside the engine
    inward (the user's function and what it called); the innermost frame if all are the engine's."""
    codes = [frame.f_code for frame, _ in traceback.walk_tb(tb)]
    first = next((k for k, code in enumerate(codes) if not is_engine_code(code)), len(codes) - 1)
    return _positioned(tb, [k >= first for k in range(len(codes))])


def caller_frames(tb: TracebackType | None) -> traceback.StackSummary:
    """The frames of an error's traceback outside jetbench (the user's calls that led to it),
    from the first notebook cell's on when there is one (not the IPython frame that ran it)."""
    frames: list[FrameType] = [frame for frame, _ in traceback.walk_tb(tb)]
    keep = [not (is_engine_code(frame.f_code) or frame.f_code.co_filename.startswith(_PACKAGE_DIR + os.sep))
            for frame in frames]
    for k in range(1, len(frames) - 1):  # code with no file (a dataclass's generated __init__)
        name = frames[k].f_code.co_filename  # between two of jetbench's frames is jetbench's
        if name.startswith("<") and not keep[k - 1] and not keep[k + 1] and not location_label(name):
            keep[k] = False
    cell = next((k for k, frame in enumerate(frames) if location_label(frame.f_code.co_filename)), 0)
    return _positioned(tb, [wanted and k >= cell for k, wanted in enumerate(keep)])


def drop_duplicate_generated_frames(exc: BaseException) -> None:
    """Leave out of ``exc``'s traceback a generated frame that only called the next generated
    one (a fused chain's function calling its comprehension): both stand at the user's inlined
    expression, so a traceback would print the user's line twice."""
    entries = list(_tb_entries(exc.__traceback__))
    kept = [tb for k, tb in enumerate(entries)
            if not (k + 1 < len(entries) and is_generated_code(tb.tb_frame.f_code)
                    and is_generated_code(entries[k + 1].tb_frame.f_code))]
    if len(kept) == len(entries):
        return
    for tb, nxt in zip(kept, kept[1:], strict=False):
        tb.tb_next = nxt
    if kept:
        kept[-1].tb_next = None
    exc.__traceback__ = kept[0] if kept else None


def _tb_entries(tb: TracebackType | None) -> list[TracebackType]:
    out = []
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    return out


_SHORT = reprlib.Repr()
_SHORT.maxstring = 80
_SHORT.maxother = 80
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = _SHORT.maxset = 8


def short_repr(value: object) -> str:
    """A repr of ``value`` cut to about a line; never raises."""
    try:
        return _SHORT.repr(value)
    except Exception as exc:
        return f"<{type(value).__name__} object; its repr raised {type(exc).__name__}>"


def note_failing_item(exc: BaseException, value: object, kind: str = ITEM) -> None:
    """Remember on ``exc``, raised by a processor, the item it was processing (``kind=ITEM``)
    or the batch that item was in (``kind=BATCH``): the job's `JobError` reports it. Called on
    the failure path only."""
    with contextlib.suppress(AttributeError, TypeError):  # an exception type that takes no attributes
        setattr(exc, _NOTE, (kind, value))


def noted_item(exc: BaseException) -> tuple[str, object] | None:
    """What `note_failing_item` remembered on ``exc``, as ``(kind, value)``, or None."""
    noted = getattr(exc, _NOTE, None)
    if isinstance(noted, tuple) and len(noted) == 2 and noted[0] in (ITEM, BATCH):
        return (str(noted[0]), noted[1])
    return None


def _format_frames(frames: traceback.StackSummary) -> list[str]:
    """``frames`` as Python prints them (source line, caret), a notebook cell's code named as
    IPython names it (``Cell In[5], line 3, in <lambda>``)."""
    if not frames:
        return []
    lines = ["Traceback (most recent call last):\n"]
    for fs in frames:
        text = frames.format_frame_summary(fs)
        label = location_label(fs.filename)
        head = f'  File "{fs.filename}", line {fs.lineno}'
        if label and text.startswith(head):
            where = f"{label}, line {fs.lineno}"
            if _coloured():  # as IPython: "Cell" in cyan, "In[5], line 3" in green
                kind, _, cell = label.partition(" ")
                where = f"{_CYAN}{kind}{_DEFAULT} {_GREEN}{cell}, line {fs.lineno}{_DEFAULT}"
            text = f"  {where}{text[len(head):]}"
        lines.append(text)
    return lines


class JetbenchError(Exception):
    """Base class of every jetbench error."""

    def _render_traceback_(self) -> list[str]:
        """IPython's hook: the user's calls that led here, then the message, without the
        engine's frames (``traceback.print_exception(err)`` still prints them all)."""
        lines = _format_frames(caller_frames(self.__traceback__))
        lines.extend(_exception_only(self))
        return "".join(lines).rstrip("\n").split("\n")


class DagError(JetbenchError, ValueError):
    """The DAG is malformed; the message names the vertex or edge at fault."""


class JobError(JetbenchError):
    """A job failed. The message names the vertex and instance; ``__cause__`` is the original error."""

    def __init__(self, message: str, vertex: str | None = None, instance: int | None = None):
        super().__init__(message)
        self.vertex = vertex
        self.instance = instance
        #: what the failing processor was processing: the item itself when it could be pinpointed
        #: (``item_kind == "item"``), else the batch it was in (``"batch"``) or the items left in
        #: the processor's inbox (``"inbox"``); None if unknown
        self.item: object = None
        self.item_kind: str | None = None
        #: the first frame of the failure outside the engine: the user's function and line
        self.user_frame: traceback.FrameSummary | None = None

    def _render_traceback_(self) -> list[str]:
        """IPython's hook: this report first, then the user's frames of the failure (the
        engine's frames are in ``__cause__``: ``traceback.print_exception(err)`` prints them)."""
        lines = _exception_only(self)
        cause = self.__cause__
        if cause is not None:
            lines.append("\nThe user's frames of the failure (all of them: traceback.print_exception(err)):\n")
            lines.extend(_format_frames(user_frames(cause.__traceback__)))
            lines.extend(_exception_only(cause))
        return "".join(lines).rstrip("\n").split("\n")


def failure_report(exc: BaseException, fallback_batch: list[object] | None = None
                   ) -> tuple[str, object, traceback.FrameSummary | None, list[str]]:
    """What a `JobError` says of a processor's exception ``exc``: ``(item_kind, item,
    user_frame, lines)``; the lines name the item (or batch) and the user's function, file,
    line and source line. ``fallback_batch`` is the batch to report when the processor noted
    no item: what is left in its inbox."""
    noted = noted_item(exc)
    kind: str = ""
    value: object = None
    lines: list[str] = []
    if noted is not None:
        kind, value = noted
    elif fallback_batch:
        kind, value = INBOX, fallback_batch
    if kind == ITEM:
        lines.append(f"  item: {short_repr(value)}")
    elif kind == BATCH:
        lines.append(f"  batch (the failing item in it could not be pinpointed): {short_repr(value)}")
    elif kind == INBOX:
        lines.append(f"  left in its inbox (the failing item could not be pinpointed): {short_repr(value)}")
    frames = user_frames(exc.__traceback__)
    frame = frames[0] if frames else None
    if frame is not None:
        lines.append(f"  in {frame.name}, {location(frame.filename, frame.lineno)}")
        source = (frame.line or "").strip()
        if source:
            lines.append(f"    {source if len(source) <= 160 else source[:157] + '...'}")
    return kind, value, frame, lines


class JobCancelled(JobError):
    """The job was cancelled before it completed."""


class JobTimeout(JetbenchError, TimeoutError):
    """``Job.join(timeout)`` ran out of time; the job keeps running (``run()`` cancels it)."""
