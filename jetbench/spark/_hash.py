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
import functools
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


# -- where Spark's hash partitioning sends a value -------------------------------------------------

_M32 = 0xFFFF_FFFF
#: The seed of Spark's ``hash()`` expression, which ``repartition(n, column)`` uses.
SPARK_HASH_SEED = 42


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def spark_int_hash(value: int, seed: int = SPARK_HASH_SEED) -> int:
    """Spark's Murmur3 hash of a 32-bit ``int`` column value (``Murmur3_x86_32.hashInt``), signed.

    >>> spark_int_hash(0), spark_int_hash(1)
    (933211791, -559580957)
    """
    k1 = (value & _M32) * 0xCC9E_2D51 & _M32
    k1 = _rotl32(k1, 15) * 0x1B87_3593 & _M32
    h1 = _rotl32(seed ^ k1, 13)
    h1 = (h1 * 5 + 0xE654_6B64) & _M32
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EB_CA6B & _M32
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2_AE35 & _M32
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def spark_partition(value: int, partitions: int) -> int:
    """The partition ``repartition(partitions, column)`` gives a row whose ``int`` column is ``value``
    (``pmod(hash(column), partitions)``)."""
    return spark_int_hash(value) % partitions


@functools.lru_cache(maxsize=64)
def spark_partition_keys(partitions: int) -> tuple[int, ...]:
    """For each partition ``p`` of ``partitions``, the smallest ``int >= 0`` that Spark's hash
    partitioning sends to ``p``: a row carrying ``keys[p]`` in its partition column lands in
    partition ``p``, so a target computed in Python decides the partition and the JVM moves the rows.

    >>> keys = spark_partition_keys(4)
    >>> [spark_partition(k, 4) for k in keys]
    [0, 1, 2, 3]
    """
    keys: list[int | None] = [None] * partitions
    missing, value = partitions, 0
    while missing:
        p = spark_partition(value, partitions)
        if keys[p] is None:
            keys[p] = value
            missing -= 1
        value += 1
    return tuple(k for k in keys if k is not None)
