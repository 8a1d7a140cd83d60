"""The contract every registered mechanism must pass on every engine that declares it.

The cases are derived, at collection time, from the registries and from the engines'
declarations (:data:`fabricsim.experiments.engines.ENGINES`), never from a hand-kept list:

* ``lb.policy``: ``ENGINES[e].policies`` (itself the :func:`fabricsim.lb.base.registered_policies`
  registry, less the flow-engine-only policies on the packet engine);
* ``nic.packet_spraying_type``: ``ENGINES[e].spraying_types`` (the types registered with
  :func:`fabricsim.lb.spraying.register_spraying` whose declared engines include ``e``: a type
  with a fluid form runs on both, a packet-only one on the packet engine);
* ``switch.load_balancing_method``: ``ENGINES[e].switch_methods`` (the methods registered with
  :func:`fabricsim.lb.switch.register_switch_method` that declare ``e`` in ``engines``);
* ``nic.cc``: every CC registered with :func:`fabricsim.cc.register_cc`, on each engine that
  reads ``nic.cc`` (``nic.cc`` not in its ``unread_keys``);
* ``engine.flow_model``: ``ENGINES[e].flow_models``;
* ``records.*``: ``ENGINES[e].records``;
* ``workload.kind``: ``ENGINES[e].workloads``, and each value of a workload's selector fields
  (``VARIANT_FIELDS``; the values are the field's ``Literal``).

Each case runs a small scenario (8 hosts, ~100 KB messages, an idle fabric: no failures) twice
and asserts: it runs; ``bytes_conserved`` is True and every byte is delivered; every flow
completes; the flow table has the documented columns in order; both runs give equal
``summary``, ``flows``, ``tables`` and ``json_records`` (determinism).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pandas as pd
import pytest
from contract_cases import (
    CC_NEEDS,
    POLICY_KNOBS,
    SMALL_WORKLOADS,
    VARIANT_FIELDS,
    VARIANT_NEEDS,
    resolve,
    scenario,
)

import fabricsim
import fabricsim.cc  # noqa: F401  (registers every CC)
import fabricsim.lb  # noqa: F401  (registers every policy)
import fabricsim.workloads  # noqa: F401  (registers every workload builder)
from fabricsim.cc.base import registered_cc
from fabricsim.config.applicability import WORKLOAD_KEYS
from fabricsim.config.workloads import WorkloadConfig
from fabricsim.experiments.engines import ENGINES

# flows.parquet columns every run has, in this order (docs/design.md; runner._flow_columns).
FLOW_COLUMNS = [
    "flow_id",
    "src",
    "dst",
    "size_bytes",
    "start_s",
    "finish_s",
    "fct_s",
    "path",
    "entropy",
]

# Transport and lossless-fabric variants (the transport's Literal values and their options).
TRANSPORT_KEYS: dict[tuple[str, str], dict[str, Any]] = {
    ("nic.transport", "roce"): {"nic.transport": "roce"},
    ("nic.roce.retransmit", "selective"): {
        "nic.transport": "roce",
        "nic.roce.retransmit": "selective",
    },
    ("switch.pfc", "true"): {"switch.pfc": True},
    ("nic.transport", "roce-lossy"): {"nic.transport": "roce", "switch.pfc": False},
}

# (engine, key, value) -> why it fails its contract today.  Each is a finding for the lead,
# kept visible as a strict xfail (it turns the suite red once fixed, so remove it then).
KNOWN_FAILURES: dict[tuple[str, str, str], str] = {}

_WORKLOAD_MODELS = {
    m.model_fields["kind"].default: m for m in get_args(get_args(WorkloadConfig)[0])
}


def _reads(caps: Any, key: str) -> bool:
    return key not in caps.unread_keys


def _read_under(kind: str, key: str, field: str, value: Any) -> bool:
    """Whether workload ``key`` is read when ``field`` is ``value`` (config/applicability.py)."""
    selector, values = WORKLOAD_KEYS.get(kind, {}).get(key, (None, ()))
    return selector != field or value in values


def _workload_cases(kind: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(key, value, workload) for a workload kind and each value of its selector fields."""
    base = SMALL_WORKLOADS.get(kind, {"kind": kind})
    yield "workload.kind", kind, base
    model = _WORKLOAD_MODELS.get(kind)
    for field in VARIANT_FIELDS.get(kind, ()):
        if model is None:
            continue
        for value in get_args(model.model_fields[field].annotation):
            if value == base.get(field, model.model_fields[field].default):
                continue  # the base case already runs it
            kept = {k: v for k, v in base.items() if _read_under(kind, k, field, value)}
            workload = {**kept, field: value, **VARIANT_NEEDS.get((kind, field, value), {})}
            yield f"workload.{kind}.{field}", value, workload


def _cases() -> Iterator[Any]:
    for engine, caps in ENGINES.items():
        rows: list[tuple[str, str, dict[str, Any], dict[str, Any] | None]] = []
        rows += [
            (
                "lb.policy",
                p,
                {
                    "lb.policy": p,
                    **{k: v for k, v in POLICY_KNOBS.get(p, {}).items() if _reads(caps, k)},
                },  # fmt: skip
                None,
            )
            for p in caps.policies
        ]
        rows += [
            ("nic.packet_spraying_type", s, {"nic.packet_spraying_type": s}, None)
            for s in caps.spraying_types
        ]
        rows += [
            ("switch.load_balancing_method", m, {"switch.load_balancing_method": m}, None)
            for m in caps.switch_methods
        ]
        if _reads(caps, "nic.cc"):
            rows += [
                ("nic.cc", c, {"nic.cc": c, **CC_NEEDS.get(c, {})}, None) for c in registered_cc()
            ]
        for (key, value), overrides in TRANSPORT_KEYS.items():  # on engines that read them
            if all(_reads(caps, k) for k in ("nic.transport", "switch.pfc")):
                rows += [(key, value, overrides, None)]
        rows += [("engine.flow_model", f, {"engine.flow_model": f}, None) for f in caps.flow_models]
        rows += [("records", r, {f"records.{r}": True}, None) for r in caps.records]
        for kind in caps.workloads:
            rows += [(key, value, {}, wl) for key, value, wl in _workload_cases(kind)]
        for key, value, overrides, workload in rows:
            reason = KNOWN_FAILURES.get((engine, key, value))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(
                engine, key, value, overrides, workload, marks=marks, id=f"{engine}-{key}={value}"
            )


def _same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN (an unfinished flow's percentiles)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


@pytest.mark.parametrize(("engine", "key", "value", "overrides", "workload"), list(_cases()))
def test_contract(
    engine: str,
    key: str,
    value: str,
    overrides: dict[str, Any],
    workload: dict[str, Any] | None,
    inputs: dict[str, Path],
) -> None:
    if workload is not None and workload["kind"] not in SMALL_WORKLOADS:
        pytest.fail(
            f"workload.kind={workload['kind']} has no small configuration: add one to "
            "tests/contracts/contract_cases.py SMALL_WORKLOADS"
        )
    d = scenario(overrides, None if workload is None else resolve(workload, inputs))
    first = fabricsim.run(d, engine=engine)
    s = first.summary
    assert s["engine"] == engine
    assert s["bytes_conserved"] is True, f"{key}={value} on {engine}: bytes not conserved"
    assert s["flows_total"] > 0, "the small scenario has no flows"
    assert s["flows_completed"] == s["flows_total"], (
        f"{key}={value} on {engine}: {s['flows_total'] - s['flows_completed']} of "
        f"{s['flows_total']} flows unfinished on an idle fabric"
    )
    assert s["bytes_delivered"] == s["bytes_total"]
    assert list(first.flows.columns[: len(FLOW_COLUMNS)]) == FLOW_COLUMNS
    assert len(first.flows) == s["flows_total"]
    assert first.flows["fct_s"].notna().all() and (first.flows["fct_s"] > 0).all()
    if key == "records":
        assert first.tables or first.json_records, f"records.{value} on {engine} recorded nothing"

    second = fabricsim.run(d, engine=engine)
    assert _same(first.summary, second.summary), f"{key}={value} on {engine}: summary differs"
    pd.testing.assert_frame_equal(first.flows, second.flows)
    assert first.tables.keys() == second.tables.keys()
    for name, table in first.tables.items():
        pd.testing.assert_frame_equal(table, second.tables[name], obj=f"table {name}")
    assert _same(first.json_records, second.json_records)
