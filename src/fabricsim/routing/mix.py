"""The scalar hashing of route building: a header's CRC-32 from its parts
(:func:`header_key`) and murmur3's 32-bit finaliser on one integer, the scalar hash of
``crc32WithSalt`` (:func:`fmix32_int`).

A module of its own so that the build compiles it (``mix.pxd``): route building calls both
once per new route (and :func:`fmix32_int` once per hashed stage), as C calls when compiled.
The vectorized forms are :meth:`fabricsim.routing.router.Router.keys` and
:func:`fabricsim.routing.hashing.fmix32`; both give the same values (``test_hashing``).

Examples
--------
>>> fmix32_int(0), fmix32_int(1)
(0, 1364076727)
"""

from __future__ import annotations

from typing import Final

QP_SHIFT: Final = 16
"""An entropy value above 65,535 carries a destination QP: ``src_port | dst_qp << 16``."""


def header_key(base: int, port_crcs: list[int], qp_crcs: list[int] | None, entropy: int) -> int:
    """CRC-32 of a header from its parts (CRC-32 is affine in its input, and the parts were
    computed over zeros elsewhere): ``base``, the host pair's CRC with port and QP 0, XOR the
    contribution of the entropy value's source port (``port_crcs``) and of its destination
    QP (``qp_crcs``, None when the QP is not hashed).

    >>> header_key(5, [0, 3], [0, 64], 1 | 1 << QP_SHIFT)
    70
    """
    crc = base ^ port_crcs[entropy & 0xFFFF]
    qp = entropy >> 16  # QP_SHIFT, a literal: compiled, a C shift
    if qp and qp_crcs is not None:
        crc ^= qp_crcs[qp]
    return crc


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
