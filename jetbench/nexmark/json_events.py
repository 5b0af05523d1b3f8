"""Nexmark events as JSON lines, the form Beam's Python suite reads (``ParseJsonEventFn`` in
``apache_beam/testing/benchmarks/nexmark/nexmark_util.py``).

One event per line, the model object itself with Beam's field names in Beam's order, compact:
``{"auction":1000,"bidder":1001,"price":32530001,"dateTime":1528098831066,"extra":"..."}``.
Reading also takes Beam's wrapped ``Event`` form (``{"newPerson": {...}, "newAuction": null,
"bid": null}``) and a ``dateTime`` written as ``{"millis": ...}``. The kind is told by a field
only it has (``name``, ``itemName``, ``auction``), as Beam's reader does. A line that is not
such an event raises `EventFormatError` naming the line.

>>> from jetbench.nexmark.model import Bid
>>> line = to_json(Bid(1000, 1001, 250, 1436918400040, "x"))
>>> line
'{"auction":1000,"bidder":1001,"price":250,"dateTime":1436918400040,"extra":"x"}'
>>> from_json(line) == Bid(1000, 1001, 250, 1436918400040, "x")
True
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from ..core.errors import JetbenchError
from .model import EVENT_FIELD, FIELDS, Auction, Bid, Event, Person

_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_TYPES: dict[str, type] = {"name": Person, "itemName": Auction, "auction": Bid}
_TEXT_FIELDS = frozenset({"name", "emailAddress", "creditCard", "city", "state", "itemName", "description", "extra"})
_WRAPPERS = {name: t for t, name in EVENT_FIELD.items()}


class EventFormatError(JetbenchError):
    """A line that is not a Nexmark event."""


def to_json(event: Event) -> str:
    """One event as a compact JSON object (no newline)."""
    names = FIELDS[type(event)]
    return _ENCODER.encode(dict(zip(names, event, strict=True)))


def _checked(kind: type, values: list[Any], where: str) -> Event:
    for name, value in zip(FIELDS[kind], values, strict=True):
        expected = str if name in _TEXT_FIELDS else int
        if isinstance(value, bool) or not isinstance(value, expected):
            raise EventFormatError(f"{where}: field {name!r} of a {kind.__name__} must be {expected.__name__}, "
                                   f"got {value!r}")
    return kind(*values)  # type: ignore[no-any-return]


#: the common form, checked at once: an object with exactly one type's fields, in order, each of
#: its type (bool is not int here: ``type(v) is int``) -> that type
_EXACT: dict[tuple[str, ...], tuple[type, tuple[type, ...]]] = {
    names: (kind, tuple(str if name in _TEXT_FIELDS else int for name in names)) for kind, names in FIELDS.items()}


def from_dict(obj: Any, where: str = "event") -> Event:
    """The event a decoded JSON object holds (bare, or wrapped as Beam's ``Event``)."""
    if type(obj) is dict:
        exact = _EXACT.get(tuple(obj))
        if exact is not None:  # what to_json writes: no wrapper, no missing field, no {"millis": ...}
            fields = tuple(obj.values())
            if tuple(map(type, fields)) == exact[1]:
                return tuple.__new__(exact[0], fields)  # type: ignore[no-any-return]
    if not isinstance(obj, dict):
        raise EventFormatError(f"{where}: a Nexmark event must be a JSON object, got {type(obj).__name__}")
    wrapped = [(k, v) for k, v in obj.items() if k in _WRAPPERS and v is not None]
    if wrapped and not any(k in obj for k in _TYPES):
        if len(wrapped) != 1:
            raise EventFormatError(f"{where}: an Event holds exactly one of newPerson, newAuction, bid")
        return from_dict(wrapped[0][1], where)
    kinds = [t for k, t in _TYPES.items() if k in obj]
    if len(kinds) != 1:
        raise EventFormatError(f"{where}: not a Person, Auction or Bid (no 'name', 'itemName' or 'auction' "
                               f"field): {json.dumps(obj)[:120]}")
    kind = kinds[0]
    names = FIELDS[kind]
    missing = [n for n in names if n not in obj]
    if missing:
        raise EventFormatError(f"{where}: {kind.__name__} lacks field(s) {', '.join(missing)}")
    values = [obj[n] for n in names]
    for i, name in enumerate(names):  # Beam's reader also takes {"millis": ...} times
        if isinstance(values[i], dict) and name in ("dateTime", "expires") and "millis" in values[i]:
            values[i] = values[i]["millis"]
    return _checked(kind, values, where)


def from_json(line: str, where: str = "line") -> Event:
    """The event of one JSON line."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise EventFormatError(f"{where}: not JSON ({exc.msg} at column {exc.colno})") from None
    return from_dict(obj, where)


def write_events(events: Iterable[Event], out: str | Path | TextIO) -> int:
    """Write ``events`` as JSON lines to a path or an open text file; returns how many."""
    if isinstance(out, str | Path):
        with open(out, "w", encoding="utf-8") as f:
            return write_events(events, f)
    n = 0
    for event in events:
        out.write(to_json(event))
        out.write("\n")
        n += 1
    return n


def read_events(source: str | Path | Iterable[str]) -> Iterator[Event]:
    """The events of a JSON-lines file (a path) or of lines; blank lines are skipped.
    Raises `EventFormatError` naming the file and line of the first bad one."""
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.is_file():
            raise EventFormatError(f"no events file {str(path)!r}")
        with open(path, encoding="utf-8") as f:
            yield from _read_lines(f, str(path))
    else:
        yield from _read_lines(source, "input")


def _read_lines(lines: Iterable[str], name: str) -> Iterator[Event]:
    for i, line in enumerate(lines, 1):
        if line.strip():
            yield from_json(line, f"{name}:{i}")
