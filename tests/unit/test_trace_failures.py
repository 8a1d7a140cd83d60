"""export-trace and link failures: the trace carries none, so say so and say what restores
them (issue 37 item 5)."""

from __future__ import annotations

import shlex

import pytest

import fabricsim
from fabricsim.cli import main
from fabricsim.config.loader import parse_set_options
from fabricsim.workloads.trace_failures import (
    htsim_failed_flag,
    htsim_failed_links,
    restore_options,
)

K4 = {"topology.k": 4}
FAILURES = [
    {"topology.failed_links": ["agg0_0->core0", "core3->agg1_1"]},
    {"topology.degraded_links": {"agg1_0->core1": 0.25, "core0->agg0_0": 1e-6}},
    {"topology.failed_switches": ["core1"], "topology.failed_link_mode": "withdraw"},
    {"topology.link_failures": [{"link": "agg0_0->core0", "at_s": 1e-5}]},
]


def _permutation(**overrides):
    return fabricsim.load_scenario("permutation").with_overrides({**K4, **overrides})


@pytest.mark.parametrize("failure", FAILURES)
def test_the_printed_set_options_restore_the_failure(failure):
    sc = _permutation(**failure)
    options = restore_options(sc.topology)
    back = _permutation().with_overrides(parse_set_options(options))
    assert back.topology == sc.topology


def test_an_intact_fabric_needs_nothing():
    assert restore_options(_permutation().topology) == []


def test_htsim_failed_n_is_its_first_n_core_to_agg_links():
    topo = _permutation().topology
    assert htsim_failed_links(topo, 3) == {
        "core0->agg0_0": 0.1,  # htsim agg 0, uplinks 0 and 1
        "core1->agg0_0": 0.1,
        "core2->agg0_1": 0.1,  # htsim agg 1 (pod 0, position 1), uplink 0
    }
    fabric = fabricsim.experiments.runner.fabric_of(_permutation())  # every name is a link of ours
    assert set(htsim_failed_links(topo, 16)) <= set(fabric.link_names)
    assert len(htsim_failed_links(topo, 10**6)) == 16  # k pods x k/2 aggs x k/2 uplinks


@pytest.mark.parametrize(
    ("failure", "flag"),
    [
        ({"topology.degraded_links": {"core0->agg0_0": 0.1, "core1->agg0_0": 0.1}}, (2, True)),
        ({"topology.degraded_links": {"core0->agg0_0": 0.5}}, (1, False)),
        ({"topology.degraded_links": {"core1->agg0_0": 0.1}}, None),  # not the first link
        ({"topology.degraded_links": {"agg0_0->core0": 0.1}}, None),  # the other direction
        ({"topology.failed_links": ["core0->agg0_0"]}, None),  # down, not slowed
    ],
)
def test_htsim_form_only_for_its_own_failure(failure, flag):
    assert htsim_failed_flag(_permutation(**failure).topology) == flag


def _export(tmp_path, capsys, fmt: str, failure: dict) -> tuple[list[str], str]:
    sets = [f"{k}={v}" for k, v in {**K4, **failure}.items()]
    argv = ["export-trace", "permutation", "--format", fmt, "--out", str(tmp_path / "t.x")]
    for s in sets:
        argv += ["--set", s.replace("'", "")]
    assert main(argv) == 0
    err = capsys.readouterr().err
    return [line for line in err.splitlines() if line.strip()], err


@pytest.mark.parametrize("fmt", ["htsim", "csv"])
def test_export_warns_in_one_line_and_gives_what_restores_the_failure(tmp_path, capsys, fmt):
    lines, _ = _export(tmp_path, capsys, fmt, {"topology.failed_links": "[agg0_0->core0]"})
    assert len(lines) == 1 and lines[0].startswith("warning: t.x carries no link failure")
    options = [w for w in shlex.split(lines[0].split("add ", 1)[1]) if w != "--set"]
    assert options == ["topology.failed_links=[agg0_0->core0]"]
    lines, _ = _export(tmp_path, capsys, fmt, {})
    assert lines == []


def test_export_prints_the_htsim_flag_when_htsim_makes_the_same_failure(tmp_path, capsys):
    failure = {"topology.degraded_links": "{core0->agg0_0: 0.1, core1->agg0_0: 0.1}"}
    lines, _ = _export(tmp_path, capsys, "htsim", failure)
    assert len(lines) == 1 and "run htsim_uec with -failed 2 " in lines[0]
