"""Named random streams derived from the scenario seed.

Every random draw in fabricsim comes from a :class:`numpy.random.Generator` made here, so the
same scenario and seed give the same results, and adding draws to one stream (say the NIC's)
never shifts another (say the workload's).

Examples
--------
>>> a = stream(7, "workload").integers(0, 100, 3)
>>> b = stream(7, "workload").integers(0, 100, 3)
>>> bool((a == b).all())
True
"""

from __future__ import annotations

import zlib

import numpy as np


def stream(seed: int, name: str) -> np.random.Generator:
    """The generator of stream ``name`` for scenario seed ``seed``."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])
