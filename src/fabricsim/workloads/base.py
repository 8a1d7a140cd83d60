"""The table of flows (flow engine) / messages (packet engine) every workload produces."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError
from fabricsim.rng import stream
from fabricsim.topology.fabric import Fabric


@dataclass(eq=False)
class FlowTable:
    """Flows in flow-id order (ids are ``0 .. n-1``), as numpy columns.

    ``src_port`` is each flow's UDP source port (its entropy value), drawn once in flow-id order
    from the scenario's ``ports`` stream; both engines use it.  ``extra`` holds per-flow columns
    a workload adds (e.g. ``prompt_tokens``); they are copied into the output table.
    ``depends_on`` (optional) lists, per flow, the flow ids that must finish before it starts
    (its ``start_s`` is then the earliest start); ``meta`` is workload-level information.
    """

    src: np.ndarray
    dst: np.ndarray
    size_bytes: np.ndarray
    start_s: np.ndarray
    src_port: np.ndarray
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    depends_on: list[list[int]] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.src)

    @classmethod
    def build(cls, sc: Scenario, src, dst, size_bytes, start_s, **kw: Any) -> FlowTable:
        """Validate columns and draw the source ports from the scenario's seed."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        size = np.asarray(size_bytes, dtype=np.int64)
        start = np.asarray(start_s, dtype=np.float64)
        n = len(src)
        if not (len(dst) == len(size) == len(start) == n):
            raise ValueError("flow columns must have equal lengths")
        ports = stream(sc.seed, "ports").integers(0, 65536, size=n, dtype=np.int64)
        return cls(src, dst, size, start, ports, **kw)

    def check_hosts(self, fabric: Fabric, field_name: str = "workload") -> None:
        """Raise ConfigError if a flow names a host outside the fabric or sends to itself."""
        hosts = fabric.num_hosts
        for col, arr in (("src", self.src), ("dst", self.dst)):
            bad = np.flatnonzero((arr < 0) | (arr >= hosts))
            if len(bad):
                raise ConfigError(
                    f"{field_name}: flow {int(bad[0])} has {col} host {int(arr[bad[0]])} outside "
                    f"the fabric (hosts are 0..{hosts - 1})"
                )
        same = np.flatnonzero(self.src == self.dst)
        if len(same):
            raise ConfigError(f"{field_name}: flow {int(same[0])} sends to its own host")


WorkloadBuilder = Callable[[Scenario, Fabric], FlowTable]
_REGISTRY: dict[str, WorkloadBuilder] = {}


def register(kind: str) -> Callable[[WorkloadBuilder], WorkloadBuilder]:
    """Register the builder of ``workload.kind``."""

    def deco(fn: WorkloadBuilder) -> WorkloadBuilder:
        _REGISTRY[kind] = fn
        return fn

    return deco


def generate(sc: Scenario, fabric: Fabric) -> FlowTable:
    """Build the scenario's flow table on ``fabric``."""
    kind = sc.workload.kind
    if kind not in _REGISTRY:
        raise ConfigError(f"workload.kind: '{kind}' is not available yet in this build")
    table = _REGISTRY[kind](sc, fabric)
    table.check_hosts(fabric)
    return table
