"""ECMP hashing, forwarding, path enumeration and the inverse hash (ports per path)."""

from fabricsim.routing.hashing import HASH_METHODS, crc32_5tuple, fmix32, switch_salts
from fabricsim.routing.router import Router

__all__ = ["HASH_METHODS", "Router", "crc32_5tuple", "fmix32", "switch_salts"]
