"""Workload-specific ``summary.json`` keys: a registry of summarizers by ``workload.kind``.

The built-in summarizers are in :mod:`fabricsim.metrics.workload_summaries`.  Metrics never
import the runner: a summarizer that needs another engine run (``alone_fct_s``) calls the
``rerun`` callback the runner puts in the :class:`RunContext`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.engine_api import EngineOutput
from fabricsim.routing.router import Router
from fabricsim.topology.fabric import Fabric
from fabricsim.workloads.base import FlowTable


@dataclass(eq=False)
class RunContext:
    """What a workload summarizer sees.

    A summarizer may add per-flow columns by returning them under the key ``"_columns"``
    (a dict of column name -> array in flow-id order); they go into the flow table.
    """

    scenario: Scenario
    engine: str
    fabric: Fabric
    router: Router
    flows: FlowTable
    output: EngineOutput
    fct_s: np.ndarray
    rerun: Callable[[FlowTable], EngineOutput] | None = None
    """Run other flows on the same engine, fabric and policy (set by the runner)."""

    def alone_fct_s(self, flow: int) -> float:
        """FCT of ``flow`` alone on the idle fabric (same engine, same policy)."""
        if self.rerun is None:
            raise RuntimeError("RunContext.rerun is not set: alone_fct_s needs the runner")
        f = self.flows
        sub = FlowTable(
            f.src[[flow]], f.dst[[flow]], f.size_bytes[[flow]], np.zeros(1), f.src_port[[flow]]
        )
        return float(self.rerun(sub).finish_s[0])


Summarizer = Callable[[RunContext], dict[str, Any]]
_SUMMARIZERS: dict[str, list[Summarizer]] = {}


def register_summarizer(kind: str) -> Callable[[Summarizer], Summarizer]:
    """Register extra ``summary.json`` keys for a workload kind."""

    def deco(fn: Summarizer) -> Summarizer:
        if fn not in _SUMMARIZERS.setdefault(kind, []):
            _SUMMARIZERS[kind].append(fn)
        return fn

    return deco


def summarizers_for(kind: str) -> list[Summarizer]:
    return list(_SUMMARIZERS.get(kind, []))
