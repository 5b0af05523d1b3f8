"""A key hash that is the same in every process.

Python salts ``hash()`` of ``str`` and ``bytes`` per process (and, before 3.12, ``hash(None)``
depends on an address), so Spark partitions cannot be chosen with it: a key hashed in two
Python workers would land in two partitions. `stable_hash` uses CRC-32 of the UTF-8 text for
strings and bytes, Python's own (unsalted) numeric hash for numbers, and combines the hashes of
tuple and frozenset members. Equal keys hash equal (``1 == 1.0 == True`` included).

>>> stable_hash("fox")
262201574
>>> stable_hash(1) == stable_hash(1.0) == stable_hash(True)
True
"""

from __future__ import annotations

import enum
from typing import Any
from zlib import crc32

_MASK = (1 << 64) - 1
_NONE = 0x5F5E_4E4F


def stable_hash(key: Any) -> int:
    """A non-negative hash of ``key`` that does not depend on the process.

    Other key types fall back to ``hash()``: stable for types that hash their numeric fields,
    and across PySpark's workers in general, which all run with the same ``PYTHONHASHSEED``.
    """
    t = type(key)
    if t is str:
        return crc32(key.encode("utf-8", "surrogatepass"))
    if t is int or t is float or t is bool:
        return hash(key) & _MASK
    if key is None:
        return _NONE
    if t is bytes or t is bytearray:
        return crc32(key)
    if isinstance(key, str):  # str subclasses (StrEnum) equal their text
        return crc32(str.__str__(key).encode("utf-8", "surrogatepass"))
    if isinstance(key, int | float):  # int subclasses (IntEnum) equal their number
        return hash(key) & _MASK
    if isinstance(key, tuple):
        h = 0x345678
        for member in key:
            h = ((h * 1_000_003) ^ stable_hash(member)) & _MASK
        return h ^ len(key)
    if isinstance(key, frozenset):
        h = 0
        for member in key:
            h ^= stable_hash(member) * 0x9E37_79B9 & _MASK
        return h
    if isinstance(key, enum.Enum):
        return crc32(f"{type(key).__qualname__}.{key.name}".encode())
    return hash(key) & _MASK
