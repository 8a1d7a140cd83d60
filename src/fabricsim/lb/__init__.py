"""Load-balancing path policies, selected by ``lb.policy`` from a registry."""

from fabricsim.lb import ark, static  # noqa: F401  (registers policies)
from fabricsim.lb.base import (
    SPRAY_ALL,
    Connection,
    EngineHooks,
    PathPolicy,
    PolicyContext,
    make_policy,
    register_policy,
)

__all__ = [
    "SPRAY_ALL",
    "Connection",
    "EngineHooks",
    "PathPolicy",
    "PolicyContext",
    "make_policy",
    "register_policy",
]
