"""murmur3's 32-bit finaliser on one integer: the scalar hash of ``crc32WithSalt``.

A module of its own so that the build compiles it (``mix.pxd``): route building calls
:func:`fmix32_int` once per hashed stage, as a C call when compiled.  The vectorized form is
:func:`fabricsim.routing.hashing.fmix32`; both give the same values (``test_hashing``).

Examples
--------
>>> fmix32_int(0), fmix32_int(1)
(0, 1364076727)
"""

from __future__ import annotations


def fmix32_int(h: int) -> int:
    """murmur3's 32-bit finaliser of ``h`` (``0 <= h < 2**32``)."""
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


def fmix32_scalar(x: int, tier: int) -> int:
    """The registered scalar of ``crc32WithSalt``: ``fmix32(crc ^ salt)`` at any tier."""
    return fmix32_int(x)
