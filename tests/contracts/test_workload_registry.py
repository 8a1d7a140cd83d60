"""The workload registry's contract: a kind is its model plus one registration, nothing else.

Each ``workload.kind`` registers its pydantic model, its generator and its budget terms
(:func:`fabricsim.workloads.register`).  Every registered kind is run through here: a tiny
scenario of it builds, its generator makes flows, and its budget terms count at least the
flows the generator makes and about the bytes it sends (within a factor of two when known
from the config); the memory estimate is positive and the kinds validation lists are the
registry's.
"""

from __future__ import annotations

import pytest
from contract_cases import SMALL_WORKLOADS, resolve, scenario

from fabricsim import workloads
from fabricsim.config import validation
from fabricsim.config.loader import load_scenario
from fabricsim.config.workloads import WORKLOAD_KINDS, WORKLOAD_MODELS, IncastWorkload
from fabricsim.errors import ConfigError
from fabricsim.experiments.budget import estimate
from fabricsim.experiments.budget_counts import _fabric, _load
from fabricsim.experiments.runner import fabric_of
from fabricsim.workloads.base import FlowTable, WorkloadLoad, register, workload_kind

KINDS = workloads.registered_workloads()


def test_every_model_of_the_union_is_registered_and_nothing_else() -> None:
    assert sorted(KINDS) == sorted(WORKLOAD_KINDS)
    for model in WORKLOAD_MODELS:
        kind = model.model_fields["kind"].default
        registered = workload_kind(kind)
        assert registered is not None and registered.model is model, kind
    assert validation._WORKLOAD_KINDS == WORKLOAD_KINDS  # the messages list the union's kinds


def test_validation_lists_the_registered_kinds() -> None:
    with pytest.raises(ConfigError) as exc:
        load_scenario(scenario({}, {"kind": "incas"}))
    assert str(exc.value) == (
        f"workload: unknown workload kind; allowed: {', '.join(WORKLOAD_KINDS)}; "
        "did you mean incast?"
    )


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_builds_generates_and_budgets(kind: str, inputs) -> None:
    assert kind in SMALL_WORKLOADS, f"add a small {kind} case to contract_cases.SMALL_WORKLOADS"
    sc = load_scenario(scenario({}, resolve(SMALL_WORKLOADS[kind], inputs)))
    assert isinstance(sc.workload, workload_kind(kind).model)
    flows = workloads.generate(sc, fabric_of(sc))
    assert len(flows) > 0
    load = _load(sc, _fabric(sc))
    assert isinstance(load, WorkloadLoad)
    assert load.flows >= len(flows), (kind, load.flows, len(flows))
    if load.bytes_total is not None:
        sent = float(flows.size_bytes.sum())
        assert 0.5 * sent <= load.bytes_total <= 2 * sent, (kind, load.bytes_total, sent)
    else:
        assert load.notes, kind  # unknown bytes are said so
    for engine in ("flow", "packet"):
        est = estimate(sc, engine)
        assert est.bytes_estimate > 0 and est.flows == load.flows
    model = workload_kind(kind).model
    for named in (load.flows_key, load.packets_key):  # what an over-budget refusal names
        if named is not None:
            section, field = named[0].split(".")
            assert section == "workload" and field in model.model_fields, (kind, named)


def test_a_registration_alone_changes_generation_and_budget() -> None:
    """Re-registering a kind (the test's generator and terms) is all generate and the budget
    read: no other table names the kind."""
    original = workload_kind("incast")
    assert original is not None
    seen: list[str] = []

    def budget(wl: IncastWorkload, fab) -> WorkloadLoad:
        seen.append("budget")
        return WorkloadLoad(flows=123, pairs=1, bytes_total=1.0, busiest=1.0)

    def generate(sc, fabric) -> FlowTable:
        seen.append("generate")
        return FlowTable.build(sc, [1, 2], [0, 0], [10, 20], [0.0, 0.0])

    sc = load_scenario(scenario({}, {"kind": "incast", "senders": 4}))
    try:
        register("incast", model=IncastWorkload, budget=budget)(generate)
        assert len(workloads.generate(sc, fabric_of(sc))) == 2
        assert estimate(sc, "flow").flows == 123
        assert seen == ["generate", "budget"]
    finally:
        register("incast", model=original.model, budget=original.budget)(original.generate)
    assert estimate(sc, "flow").flows == 4


def test_a_registration_names_its_own_model() -> None:
    with pytest.raises(ValueError, match="its model IncastWorkload is 'incast'"):
        register("permutation", model=IncastWorkload, budget=lambda wl, fab: WorkloadLoad())
