"""Congestion control strategies (pure state machines), selected by ``nic.cc``."""

from fabricsim.cc.base import CcParams, CongestionControl, make_cc, register_cc

__all__ = ["CcParams", "CongestionControl", "make_cc", "register_cc"]
