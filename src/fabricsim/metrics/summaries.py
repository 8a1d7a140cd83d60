"""Workload-specific ``summary.json`` keys: a registry of summarizers by ``workload.kind``.

The built-in summarizers are in :mod:`fabricsim.metrics.workload_summaries`.  Metrics never
import the runner: a summarizer that needs another engine run (``alone_fct_s``) calls the
``rerun`` callback the runner puts in the :class:`RunContext`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
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


# -- flows that did not complete ------------------------------------------------------------------
def not_completed_reason(counts: dict[str, int]) -> str | None:
    """One text for why flows did not complete, from reason -> number of flows.

    One reason reads alone; several are joined by ``; `` with their counts.

    >>> not_completed_reason({"time limit 0.1 s reached": 3})
    'time limit 0.1 s reached'
    >>> not_completed_reason({"retries exhausted": 1, "time limit 0.1 s reached": 2})
    'retries exhausted (1 flow); time limit 0.1 s reached (2 flows)'
    >>> not_completed_reason({}) is None
    True
    """
    counts = {k: v for k, v in counts.items() if v > 0}
    if len(counts) <= 1:
        return next(iter(counts), None)
    return "; ".join(f"{k} ({v:,} flow{'s' if v != 1 else ''})" for k, v in counts.items())


def reason_of_flows(flows: Iterable[tuple[str | None, Sequence[str]]]) -> str | None:
    """:func:`not_completed_reason` from each unfinished flow's (why, failed links it crossed).

    A flow that crossed failed links is black-holed (``why``, if any, says how it ended);
    the failed links of all such flows are named once.

    >>> reason_of_flows([(None, ["leaf0->spine1"]), (None, ["leaf0->spine1"])])
    'black-holed by failed link(s) leaf0->spine1'
    >>> reason_of_flows([(None, ["a->b"]), ("retries exhausted", [])])
    'black-holed by failed link(s) a->b (1 flow); retries exhausted (1 flow)'
    >>> reason_of_flows([("time limit 1 s reached", [])] * 3)
    'time limit 1 s reached'
    """
    counts: dict[tuple[str | None, bool], int] = {}  # (why, black-holed) -> flows
    holes: dict[str, None] = {}
    for why, dead in flows:
        holes.update(dict.fromkeys(dead))
        key = (why, bool(dead))
        counts[key] = counts.get(key, 0) + 1
    hole = f"black-holed by failed link(s) {', '.join(holes)}"

    def text(why: str | None, holed: bool) -> str:
        if not holed:
            return why or "unknown"
        return f"{hole}: {why}" if why else hole

    return not_completed_reason({text(*k): v for k, v in counts.items()})


def completion_keys(summary: dict[str, Any]) -> dict[str, Any]:
    """``flows_not_completed`` and ``not_completed_reason`` of a run's summary (every engine).

    ``flows_not_completed = flows_total - flows_completed`` always.  The reason is the
    engine's (``not_completed_reason`` in its summary); ``None`` when every flow completed,
    and ``"unknown"`` if an engine left flows unfinished without saying why.  Where the
    engine counts ``flows_failed`` (flows its transport gave up, packet engine), those are
    among the flows not completed: ``flows_failed <= flows_not_completed``.
    """
    left = int(summary.get("flows_total", 0)) - int(summary.get("flows_completed", 0))
    reason = (summary.get("not_completed_reason") or "unknown") if left > 0 else None
    return {"flows_not_completed": left, "not_completed_reason": reason}


def not_completed_warning(summary: dict[str, Any]) -> str | None:
    """The one-line warning of a run that left flows unfinished (``None`` if none did).

    >>> text = not_completed_warning({"flows_total": 1024, "flows_not_completed": 2,
    ...     "not_completed_reason": "black-holed by failed link(s) leaf0->spine1"})
    >>> for part in text.split("; "):
    ...     print(part)
    2 of 1,024 flows did not complete (black-holed by failed link(s) leaf0->spine1)
    FCT statistics cover the 1,022 that did
    """
    left = int(summary.get("flows_not_completed", 0))
    if left <= 0:
        return None
    total = int(summary.get("flows_total", 0))
    why = summary.get("not_completed_reason") or "unknown"
    done = total - left
    cover = f"FCT statistics cover the {done:,} that did" if done else "no FCT statistics"
    return f"{left:,} of {total:,} flows did not complete ({why}); {cover}"
