"""Workloads: each ``workload.kind`` builds a :class:`FlowTable` on a fabric.

Each kind's module registers it (:func:`register`) when imported; :func:`provide` below names
that module, which is imported when its kind is first looked up (a run imports its own kind's
generator only).  The order here is the order :func:`registered_workloads` lists them in.
"""

from fabricsim.workloads.base import (
    FlowTable,
    generate,
    provide,
    register,
    registered_workloads,
)

provide("fabricsim.workloads.chakra_replay", "chakra")
provide("fabricsim.workloads.collective", "collective")
provide("fabricsim.workloads.kv_cache", "kv_cache")
provide("fabricsim.workloads.moe", "moe")
provide("fabricsim.workloads.patterns", "permutation", "incast", "leaf_to_leaf")
provide("fabricsim.workloads.trace", "trace")

__all__ = ["FlowTable", "generate", "provide", "register", "registered_workloads"]
