"""Moved: the spraying types live in :mod:`fabricsim.lb.spraying` and :mod:`fabricsim.lb.reps`.

This module re-exports them for the importers outside the ``lb``/``nic`` owners' files
(``packetsim/engine.py`` imports :func:`exploration_window_packets` from here).
"""

from fabricsim.lb.reps import RepsSpraying, exploration_window_packets
from fabricsim.lb.spraying import (
    Clock,
    DefaultSpraying,
    NoSpraying,
    ObliviousSpraying,
    SprayingStrategy,
    make_spraying,
    registered_spraying,
)

__all__ = [
    "Clock",
    "DefaultSpraying",
    "NoSpraying",
    "ObliviousSpraying",
    "RepsSpraying",
    "SprayingStrategy",
    "exploration_window_packets",
    "make_spraying",
    "registered_spraying",
]
