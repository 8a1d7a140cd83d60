"""Workloads: each ``workload.kind`` builds a :class:`FlowTable` on a fabric."""

from fabricsim.workloads import patterns, trace  # noqa: F401  (registers builders)
from fabricsim.workloads.base import FlowTable, generate, register

__all__ = ["FlowTable", "generate", "register"]
