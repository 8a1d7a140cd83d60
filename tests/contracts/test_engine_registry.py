"""The engine registry's contract: an engine is its builder plus its declaration, nothing else.

A dummy third engine is registered here (never shipped): ``--engine`` accepts it, the runner
builds it with its own builder, the keys it declares it reads are no longer refused on it (and
are refused on the flow engine naming it), and what it does not declare is refused in the one
line the declaration implies.  Every registered engine is built by the one pipeline
(:func:`fabricsim.experiments.runner.build`), which the tools and tests use too.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest

from fabricsim.config.loader import load_scenario
from fabricsim.engine_api import EngineOutput
from fabricsim.errors import ConfigError, EngineRefusal
from fabricsim.experiments import budget, engines
from fabricsim.experiments.runner import build, build_engine, run
from fabricsim.lb.base import RateCapPolicy

ECMP = load_scenario("ecmp-collision")


class _Dummy:
    """Every flow finishes at its start plus its bytes at 1 Gb/s, on no path."""

    def __init__(self, sc, fabric, router, flows, policy) -> None:
        self.flows = flows

    def run(self) -> EngineOutput:
        f = self.flows
        n = len(f)
        return EngineOutput(
            finish_s=f.start_s + f.size_bytes * 8 / 1e9,
            delivered_bytes=f.size_bytes.copy(),
            path=[""] * n,
            entropy=f.src_port.copy(),
            summary={"dummy_runs": 1},
        )


DUMMY = engines.EngineCapabilities(
    name="dummy",
    build=_Dummy,
    reads=("nic.cc", "nic.nscc."),
    policies=("ecmp",),
    spraying_types=("none", "default"),
    switch_methods=("ecmp",),
    records=(),
    link_failures=False,
    flow_models=(),
    workloads=(ECMP.workload.kind, "trace"),
    packet_budget=False,
)


@pytest.fixture
def dummy() -> Iterator[engines.EngineCapabilities]:
    before = dict(engines.KEY_ENGINES)
    engines.register_engine(DUMMY)
    try:
        yield DUMMY
    finally:
        engines.unregister_engine(DUMMY.name)
    assert before == engines.KEY_ENGINES  # the table follows the registry back


def _perm(**overrides: object):
    return ECMP.with_overrides(overrides)


def test_a_registered_engine_runs_through_its_own_builder(dummy) -> None:
    res = run(_perm(), "dummy")
    assert res.summary["engine"] == "dummy" and res.summary["dummy_runs"] == 1
    assert res.summary["flows_completed"] == res.summary["flows_total"] == 8
    assert isinstance(build_engine(_perm(), "dummy"), _Dummy)


def test_the_keys_it_reads_flow_from_its_declaration(dummy) -> None:
    assert engines.key_engines("nic.cc") == ("packet", "decomposed", "dummy")
    assert engines.key_engines("nic.nscc.target_delay_us") == ("packet", "decomposed", "dummy")
    assert "nic.cc" not in dummy.unread_keys and "nic.rto_us" in dummy.unread_keys
    assert "engine.flow_solver" in dummy.unread_keys  # the flow engine's own keys too
    engines.check_supported(_perm(**{"nic.cc": "nscc"}), "dummy")
    with pytest.raises(EngineRefusal) as exc:
        engines.check_supported(_perm(**{"nic.cc": "nscc"}), "flow")
    assert str(exc.value) == (
        "nic.cc=nscc is read only by the packet or decomposed or dummy engine (the flow engine has no "
        "such mechanism); remove it or use --engine packet"
    )
    with pytest.raises(EngineRefusal) as exc:
        engines.check_supported(_perm(**{"nic.rto_us": 100}), "dummy")
    assert str(exc.value) == (
        "nic.rto_us=100.0 is read only by the packet or decomposed engine (the dummy engine has no such "
        "mechanism); remove it or use --engine packet"
    )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"workload.kind": "incast"},
            "workload.kind=incast is not run by the dummy engine; use --engine flow",
        ),
        (
            {"records.port_stats": True},
            "records.port_stats is packet-level detail the dummy engine does not model; "
            "use --engine packet",
        ),
        (
            {"switch.load_balancing_method": "spray"},
            "switch.load_balancing_method=spray acts per packet on queue state; use --engine packet",
        ),
    ],
)
def test_what_it_does_not_declare_is_refused_in_one_line(dummy, overrides, message) -> None:
    sc = ECMP.with_overrides(overrides)
    with pytest.raises(EngineRefusal) as exc:
        build(sc, "dummy")
    assert str(exc.value) == message


def test_its_memory_terms_come_from_its_declaration(dummy) -> None:
    calls: list[int] = []

    def terms(sc, fab, load, conns, out) -> tuple[int, int]:
        calls.append(conns)
        out["flows"] = 1e12
        return 0, 0

    engines.register_engine(replace(DUMMY, memory_terms=terms))
    assert budget.estimate(_perm(), "dummy").breakdown["flows"] == 10**12 and calls == [8]
    with pytest.raises(ConfigError, match=r"needs about 1,000 GB \(flows\)"):
        build(_perm(**{"engine.max_memory_gb": 16}), "dummy")
    engines.register_engine(DUMMY)  # none declared: the flow engine's terms
    plain = budget.estimate(_perm(), "dummy")
    assert plain.bytes_estimate == budget.estimate(_perm(), "flow").bytes_estimate


def test_unregistered_engines_are_refused_naming_the_registered(dummy) -> None:
    with pytest.raises(
        ConfigError, match=r"must be one of flow, packet, decomposed, dummy \(got 'x'\)"
    ):
        build(_perm(), "x")
    engines.unregister_engine("dummy")
    with pytest.raises(
        ConfigError, match=r"must be one of flow, packet, decomposed \(got 'dummy'\)"
    ):
        build(_perm(), "dummy")
    engines.register_engine(DUMMY)


@pytest.mark.parametrize("engine", sorted(engines.ENGINES))
def test_every_registered_engine_is_built_by_the_one_pipeline(engine: str) -> None:
    b = build(ECMP, engine)
    assert b.engine_name == engine and b.sc.engine.kind == engine
    out = b.engine.run()
    assert len(out.finish_s) == len(b.flows) and np.isfinite(out.finish_s).all()


def test_the_pipeline_caps_rates_and_checks_the_budget() -> None:
    """What the old ``PacketEngine.from_scenario`` skipped: rate caps, the memory budget and
    ``engine.max_packets``."""
    moe = load_scenario("moe").with_overrides(
        {"workload.scheduler": "rate_based", "workload.tokens_per_gpu": 4}
    )
    assert isinstance(build(moe, "packet").policy, RateCapPolicy)
    with pytest.raises(ConfigError, match=r"over engine\.max_memory_gb=1e-06 GB"):
        build(ECMP.with_overrides({"engine.max_memory_gb": 1e-6}), "packet")
    with pytest.raises(EngineRefusal, match=r"over engine\.max_packets=1;"):
        build_engine(ECMP.with_overrides({"engine.max_packets": 1}), "packet")


def test_the_old_runner_alias_is_gone() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("fabricsim.runner")
