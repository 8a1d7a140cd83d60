"""Workloads: each ``workload.kind`` builds a :class:`FlowTable` on a fabric."""

from fabricsim.workloads import (  # noqa: F401  (registers builders)
    chakra_replay,
    collective,
    kv_cache,
    moe,
    patterns,
    trace,
)
from fabricsim.workloads.base import FlowTable, generate, register, registered_workloads

__all__ = ["FlowTable", "generate", "register", "registered_workloads"]
