"""Congestion control strategies (pure state machines), selected by ``nic.cc``."""

from fabricsim.cc.base import (
    CcParams,
    CongestionControl,
    make_cc,
    register_cc,
    registered_cc,
    unregister_cc,
)
from fabricsim.cc.dcqcn import Dcqcn
from fabricsim.cc.nscc import Nscc, NsccParams

__all__ = [
    "CcParams",
    "CongestionControl",
    "Dcqcn",
    "Nscc",
    "NsccParams",
    "make_cc",
    "register_cc",
    "registered_cc",
    "unregister_cc",
]
