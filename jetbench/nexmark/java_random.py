"""``java.util.Random`` and the bits of Java arithmetic that Beam's Nexmark generator relies on.

Java's ``Random`` is a 48-bit linear congruential generator (Knuth, TAOCP vol. 2, 3.2.1): the
seed is scrambled by XOR with the multiplier ``0x5DEECE66D``, every step is
``seed = (seed * 0x5DEECE66D + 0xB) mod 2**48``, and ``next(bits)`` returns the top ``bits``
of the new seed as a *signed* 32-bit int. Every other method is built from ``next``:

- ``nextInt()`` is ``next(32)`` (negative half the time);
- ``nextInt(bound)`` takes ``next(31)``; a power-of-two bound keeps the high bits
  (``bound * r >> 31``); any other bound takes ``r % bound`` and rejects the draw while
  ``u - r + (bound - 1)`` overflows a signed 32-bit int (the last, incomplete block of values);
- ``nextLong()`` is ``(next(32) << 32) + next(32)`` in wrapping 64-bit arithmetic;
- ``nextDouble()`` is ``((next(26) << 27) + next(27)) / 2**53``;
- ``nextBoolean()`` is ``next(1) != 0``.

Java integer ``/`` and ``%`` truncate toward zero (`java_div`, `java_rem`) and ``Math.round``
is ``floor(x + 0.5)`` computed exactly (`java_round`), where Python's ``//``, ``%`` and
``round`` floor and round half to even. ``tests/nexmark/test_java_random.py`` compares this
module with values a real JVM prints.

>>> r = JavaRandom(42)
>>> r.next_int(), r.next_int(10), r.next_long()
(-1170105035, 3, -5843495416241995736)
"""

from __future__ import annotations

import math

MULTIPLIER = 0x5DEECE66D
ADDEND = 0xB
MASK_48 = (1 << 48) - 1
_INT_MAX = (1 << 31) - 1
_DOUBLE_UNIT = 1.0 / (1 << 53)


def to_int32(x: int) -> int:
    """The low 32 bits of ``x`` as a signed Java int (a ``(int)`` cast)."""
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def to_int64(x: int) -> int:
    """The low 64 bits of ``x`` as a signed Java long (a ``(long)`` wrap)."""
    x &= 0xFFFFFFFFFFFFFFFF
    return x - (1 << 64) if x & 0x8000000000000000 else x


def java_div(a: int, b: int) -> int:
    """Java's integer ``a / b``: truncates toward zero.

    >>> java_div(-7, 2), -7 // 2
    (-3, -4)
    """
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def java_rem(a: int, b: int) -> int:
    """Java's ``a % b``: the sign of the dividend.

    >>> java_rem(-7, 26), -7 % 26
    (-7, 19)
    """
    return a - b * java_div(a, b)


def java_round(x: float) -> int:
    """Java's ``Math.round(double)``: ``floor(x + 0.5)`` without the rounding error of the sum.

    >>> java_round(2.5), round(2.5), java_round(-2.5), java_round(0.49999999999999994)
    (3, 2, -2, 0)
    """
    f = math.floor(x)
    return f + 1 if x - f >= 0.5 else f  # x - floor(x) is exact for every finite double


class JavaRandom:
    """A ``java.util.Random`` with the same sequence as the JVM's for the same seed."""

    __slots__ = ("seed",)

    def __init__(self, seed: int):
        self.seed = (seed ^ MULTIPLIER) & MASK_48

    def next_bits(self, bits: int) -> int:
        """``Random.next(bits)``: the top ``bits`` of the next seed, as a signed 32-bit int."""
        self.seed = s = (self.seed * MULTIPLIER + ADDEND) & MASK_48
        r = s >> (48 - bits)
        return r - (1 << 32) if r & 0x80000000 else r

    def next_int(self, bound: int | None = None) -> int:
        """``nextInt()`` (any int) or ``nextInt(bound)`` (in ``[0, bound)``)."""
        if bound is None:
            return self.next_bits(32)
        if bound <= 0:
            raise ValueError(f"bound must be positive, got {bound}")
        self.seed = s = (self.seed * MULTIPLIER + ADDEND) & MASK_48
        r = s >> 17  # next(31): never negative
        m = bound - 1
        if bound & m == 0:  # a power of two: the high bits
            return (bound * r) >> 31
        u = r
        r = u % bound
        while u - r + m > _INT_MAX:  # the int sum overflows in Java: reject and draw again
            self.seed = s = (self.seed * MULTIPLIER + ADDEND) & MASK_48
            u = s >> 17
            r = u % bound
        return r

    def next_long(self) -> int:
        """``nextLong()``: two signed 32-bit draws, ``(hi << 32) + lo`` wrapped to 64 bits."""
        hi = self.next_bits(32)
        lo = self.next_bits(32)
        return to_int64((hi << 32) + lo)

    def next_double(self) -> float:
        """``nextDouble()``: 53 random bits in ``[0, 1)``."""
        hi = self.next_bits(26)
        lo = self.next_bits(27)
        return ((hi << 27) + lo) * _DOUBLE_UNIT

    def next_boolean(self) -> bool:
        return self.next_bits(1) != 0
