"""ECMP hash functions of the 5-tuple, vectorized with numpy.

The key is 13 bytes, big-endian: src ip (4), dst ip (4), src port (2), dst port (2),
protocol (1).  CRC-32 is the zlib/IEEE polynomial.  Because CRC-32 is affine over GF(2),
``crc(key) = crc(0) ^ XOR_i T_i[byte_i]`` with one 256-entry table per byte position; the
tables are built once from :func:`zlib.crc32` and make hashing 65,536 source ports one numpy
expression.

Methods (``switch.hash_method``; a member is ``hash % group size``):

* ``crc32WithSalt`` (default): ``fmix32(crc ^ salt)``; murmur3's non-linear finaliser makes the
  choices of successive stages on a path independent.
* ``crc32``: ``crc ^ salt``; linear, so two stages' choices are locked together (polarization).
* ``crc32Offset``: ``rotr(crc ^ salt, 8 * (tier - 1))``: each tier reads different CRC bits.
* ``random``: a random member per packet (no hash).

Examples
--------
>>> import zlib, struct
>>> key = struct.pack(">IIHHB", 0x0A000001, 0x0A000002, 1234, 4791, 17)
>>> int(crc32_5tuple(0x0A000001, 0x0A000002, 1234, 4791, 17)) == zlib.crc32(key)
True
"""

from __future__ import annotations

import functools
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import numpy as np

from fabricsim.config.names import register_name, unregister_name
from fabricsim.routing.mix import QP_SHIFT as QP_SHIFT  # (defined there: compiled code uses it)
from fabricsim.routing.mix import fmix32_scalar

UDP: Final = 17
KEY_LEN: Final = 13
QP_KEY_LEN: Final = 16
"""With ``dst_qp`` in ``switch.hash_fields`` the key grows by the 3-byte destination QP (a UDF
field after the 5-tuple, big-endian)."""
FIVE_TUPLE: Final = ("src_ip", "dst_ip", "src_port", "dst_port", "proto")
HASH_FIELDS: Final = (*FIVE_TUPLE, "dst_qp")
MAX_QPS: Final = 1024


@functools.lru_cache(maxsize=4)
def _byte_tables(length: int = KEY_LEN) -> tuple[int, np.ndarray]:
    zero = bytes(length)
    crc0 = zlib.crc32(zero)
    tables = np.zeros((length, 256), dtype=np.uint32)
    for pos in range(length):
        buf = bytearray(length)
        for value in range(256):
            buf[pos] = value
            tables[pos, value] = zlib.crc32(bytes(buf)) ^ crc0
    return crc0, tables


def _pair_table(length: int, pos: int) -> np.ndarray:
    """CRC contribution of every 16-bit value at bytes ``pos``, ``pos + 1`` of a key."""
    tables = _byte_tables(length)[1]
    v = np.arange(65536)
    return (tables[pos][v >> 8] ^ tables[pos + 1][v & 0xFF]).astype(np.uint32)


_CRC0, _TABLES = _byte_tables()
# crc contribution of every src port value (bytes 8 and 9 of the key), precombined
PORT_TABLE: Final[np.ndarray] = _pair_table(KEY_LEN, 8)


def port_table(length: int = KEY_LEN) -> np.ndarray:
    """CRC contribution of every source port in a key of ``length`` bytes."""
    return PORT_TABLE if length == KEY_LEN else _pair_table(length, 8)


def qp_table(length: int = QP_KEY_LEN) -> np.ndarray:
    """CRC contribution of destination QPs 0 .. MAX_QPS-1 (bytes 14, 15; byte 13 is 0)."""
    return _pair_table(length, length - 2)[:MAX_QPS].copy()


def _bytes_of(value: np.ndarray, width: int) -> list[np.ndarray]:
    v = np.asarray(value, dtype=np.uint64)
    return [
        ((v >> np.uint64(8 * (width - 1 - i))) & np.uint64(0xFF)).astype(np.intp)
        for i in range(width)
    ]


def crc32_5tuple(src_ip, dst_ip, src_port, dst_port, proto=UDP) -> np.ndarray:
    """CRC-32 of the 13-byte 5-tuple key; every argument may be a scalar or an array."""
    parts = (
        _bytes_of(src_ip, 4)
        + _bytes_of(dst_ip, 4)
        + _bytes_of(src_port, 2)
        + _bytes_of(dst_port, 2)
        + _bytes_of(proto, 1)
    )
    out = np.uint32(_CRC0)
    for pos, b in enumerate(parts):
        out = out ^ _TABLES[pos][b]
    return np.asarray(out, dtype=np.uint32)


def base_crc(
    src_ip: int, dst_ip: int, dst_port: int, proto: int = UDP, length: int = KEY_LEN
) -> int:
    """CRC of the key with src port 0 (and dst QP 0); ``base ^ PORT_TABLE[port]`` is the key's
    CRC (``port_table(length)``, ``qp_table(length)`` for a longer key)."""
    key = struct.pack(">IIHHB", src_ip, dst_ip, 0, dst_port, proto)
    return zlib.crc32(key + bytes(length - KEY_LEN))


def fmix32(h: np.ndarray) -> np.ndarray:
    """murmur3's 32-bit finaliser (a bijective avalanche mix), vectorized."""
    return _fmix32_into(np.array(h, dtype=np.uint32))


def _fmix32_into(h: np.ndarray) -> np.ndarray:
    """:func:`fmix32` of a uint32 array, in place (perf: one temporary array, not four)."""
    h = np.asarray(h)  # (a 0-d array for a scalar)
    shifted = np.right_shift(h, np.uint32(16), out=np.empty_like(h))
    h ^= shifted
    h *= np.uint32(0x85EBCA6B)
    np.right_shift(h, np.uint32(13), out=shifted)
    h ^= shifted
    h *= np.uint32(0xC2B2AE35)
    np.right_shift(h, np.uint32(16), out=shifted)
    h ^= shifted
    return h


def _rotr(h: np.ndarray, bits: int) -> np.ndarray:
    bits %= 32
    if bits == 0:
        return h
    return (h >> np.uint32(bits)) | (h << np.uint32(32 - bits))


@dataclass(frozen=True)
class HashMethod:
    """One ``switch.hash_method``: the switch's hash of ``x = crc ^ salt`` at a switch ``tier``.

    ``array`` works on a uint32 array (all 65,536 source ports at once: the inverse hash),
    which it may overwrite (:func:`switch_hash` hands it one of its own), ``scalar`` on one
    Python int (forwarding); both give the same values.  A method without them (``random``)
    picks a member per packet and has no inverse.  ``help`` is its one line in the config
    name table.
    """

    name: str
    array: Callable[[np.ndarray, int], np.ndarray] | None = None
    scalar: Callable[[int, int], int] | None = None
    help: str = ""

    @property
    def deterministic(self) -> bool:
        return self.array is not None


_HASHES: dict[str, HashMethod] = {}
POINT: Final = "switch.hash_method"


def register_hash(method: HashMethod) -> HashMethod:
    """Add a hash method (its ``name`` becomes a value of ``switch.hash_method``)."""
    register_name(POINT, method.name, method.help or f"the {method.name} hash of the 5-tuple")
    _HASHES[method.name] = method
    return method


def unregister_hash(name: str) -> None:
    """Remove the hash method ``name`` (and its config name)."""
    _HASHES.pop(name, None)
    unregister_name(POINT, name)


def registered_hashes() -> tuple[str, ...]:
    """Names of the registered hash methods, in registration order."""
    return tuple(_HASHES)


def hash_method(name: str) -> HashMethod:
    """The registered hash method ``name`` (KeyError if none: config validated the name)."""
    return _HASHES[name]


def _rotr_int(x: int, bits: int) -> int:
    bits %= 32
    return ((x >> bits) | (x << (32 - bits))) & 0xFFFFFFFF if bits else x


def _offset_bits(tier: int) -> int:
    return 8 * max(tier - 1, 0)


register_hash(
    HashMethod(
        "crc32WithSalt",
        lambda x, tier: _fmix32_into(x),
        fmix32_scalar,
        "murmur3's finaliser of crc ^ salt: successive stages' choices independent",
    )
)
register_hash(
    HashMethod(
        "crc32",
        lambda x, tier: x,
        lambda x, tier: x,
        "crc ^ salt: linear, so successive stages' choices are locked together (polarization)",
    )
)
register_hash(
    HashMethod(
        "crc32Offset",
        lambda x, tier: _rotr(x, _offset_bits(tier)),
        lambda x, tier: _rotr_int(x, _offset_bits(tier)),
        "crc ^ salt rotated by 8 x (tier - 1) bits: each tier reads different CRC bits",
    )
)
register_hash(HashMethod("random", help="a uniformly random member per packet (no hash)"))
HASH_METHODS: Final = registered_hashes()


def switch_hash(
    crc: np.ndarray, method: str, salt: int | np.ndarray, tier: int, out: np.ndarray | None = None
) -> np.ndarray:
    """The switch's hash value of keys whose CRC-32 is ``crc`` (uint32 array); ``salt`` is
    the switch's, or one per key (switches of one tier).  ``out``: a uint32 work array of the
    keys' length the hash may be computed in (and returned)."""
    x = np.bitwise_xor(np.asarray(crc, dtype=np.uint32), np.asarray(salt, dtype=np.uint32), out=out)
    found = _HASHES.get(method)
    if found is None or found.array is None:
        raise ValueError(f"switch.hash_method: no deterministic hash for '{method}'")
    return found.array(x, tier)


def switch_hash_int(crc: int, method: str, salt: int, tier: int) -> int:
    """Scalar :func:`switch_hash` on Python ints."""
    return scalar_hash(method)((crc ^ salt) & 0xFFFFFFFF, tier)


def scalar_hash(method: str) -> Callable[[int, int], int]:
    """The scalar form of a deterministic hash: ``f(crc ^ salt, tier)`` on Python ints."""
    found = _HASHES[method]
    assert found.scalar is not None, f"no deterministic hash for {method!r}"
    return found.scalar


def switch_salts(num_nodes: int, seed: int, mode: str) -> np.ndarray:
    """Per-switch 32-bit salts derived from the scenario seed (one shared value if ``shared``)."""
    rng = np.random.default_rng([seed, 0x5A175A17])
    if mode == "shared":
        return np.full(num_nodes, rng.integers(0, 2**32, dtype=np.uint64), dtype=np.uint64)
    return rng.integers(0, 2**32, size=num_nodes, dtype=np.uint64)
