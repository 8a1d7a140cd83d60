"""Issue 37 (cfg): the refusal classes of configuration, one line, exit 2, nothing written.

Unit suffixes a key does not take, mistyped scenario and link names (with the nearest name),
keys set explicitly that the run does not read (at their default too), keys of the other
engine, PFC settings that cannot work, one key under both its names, and a recorded
scenario whose input file changed.  Each case runs ``fabricsim`` in a forked, limited child
(harness.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import assert_refused, run_cli, snapshot

RUN = ["run", "ecmp-collision", "--out", "out"]  # leaf-spine, flow engine
PACKET = ["run", "spray-example", "--out", "out"]  # leaf-spine, packet engine
TREE = ["run", "permutation", "--out", "out", "--set", "topology.k=4"]  # fat tree


def _set(base: list[str], *pairs: str) -> list[str]:
    out = list(base)
    for pair in pairs:
        out += ["--set", pair]
    return out


def _yaml(t: Path, text: str) -> list[str]:
    (t / "s.yaml").write_text(text)
    return ["run", "s.yaml", "--out", "out"]


def _changed_trace(t: Path) -> list[str]:
    """A recorded config.yaml whose trace changed since: refused, naming workload.path."""
    (t / "t.csv").write_text("src,dst,size_bytes,start_s\n0,9,1000,0\n0,10,2000,0\n")
    digest = "'" + "0" * 64 + "'"  # quoted: YAML would read 000... as 0
    (t / "s.yaml").write_text(
        f"workload: {{kind: trace, path: {t / 't.csv'}}}\ninputs: {{{t / 't.csv'}: {digest}}}\n"
    )
    return ["run", "s.yaml", "--out", "out"]


SUFFIX_CASES: dict[str, tuple] = {
    "size in bits per second": (_set(RUN, "workload.size_bytes=4Mbps"), "is not a size"),
    "size in seconds": (_set(RUN, "workload.size_bytes=4s"), "is not a size"),
    "size with a made-up suffix": (_set(RUN, "workload.size_bytes=4MX"), "MiB"),
    "fractional bytes": (_set(RUN, "workload.size_bytes=1.5B"), "workload.size_bytes"),
    "rate in bytes": (_set(RUN, "topology.link_gbps=100GB"), "is not a rate"),
    "rate in seconds": (_set(RUN, "topology.fabric_link_gbps=1us"), "Gbps"),
    "rate below the range by suffix": (_set(RUN, "topology.link_gbps=1bps"), "link_gbps"),
    "delay in bytes": (_set(RUN, "topology.link_delay_us=1MB"), "is not a time"),
    "delay in parsecs": (_set(RUN, "topology.link_delay_us=3 parsecs"), "is not a time"),
    "negative delay by suffix": (_set(RUN, "topology.link_delay_us=-1ms"), "link_delay_us"),
    "time limit in rates": (_set(RUN, "engine.time_limit_s=1Gbps"), "is not a time"),
    "time limit beyond the clock by suffix": (
        _set(RUN, "engine.time_limit_s=2e9ms"),
        "time_limit_s",
    ),
    "memory in seconds": (_set(RUN, "engine.max_memory_gb=4s"), "is not a size"),
    "yaml size in bits": (
        lambda t: _yaml(t, "workload: {kind: permutation, size_bytes: 4Mb}\n"),
        "workload.size_bytes",
    ),
}
NAME_CASES: dict[str, tuple] = {
    "mistyped scenario": (["run", "permutaton", "--out", "o"], "did you mean permutation?"),
    "mistyped scenario with underscore": (
        ["run", "ecmp_colision", "--out", "o"],
        "did you mean ecmp-collision?",
    ),
    "mistyped failed link": (
        _set(RUN, "topology.failed_links=[leaf0->spin1]"),
        "did you mean 'leaf0->spine1'",
    ),
    "mistyped degraded link": (
        _set(RUN, "topology.degraded_links={lef1->spine2: 0.5}"),
        "did you mean 'leaf1->spine2'",
    ),
    "mistyped mid-run failure link": (
        _set(
            ["run", "permutation", "--engine", "packet", "--out", "o"],
            "topology.k=4",
            "topology.link_failures=[{link: agg0_0->cor0, at_s: 0.001}]",
        ),
        "did you mean 'agg0_0->core0'",
    ),
    "fat-tree link on a leaf-spine": (
        _set(RUN, "topology.failed_links=[edge0_0->agg0_0]"),
        "topology.failed_links",
    ),
}
UNREAD_CASES: dict[str, tuple] = {
    # explicit keys at their default that the fabric, policy or method does not read
    "planes=2 on a leaf-spine": (_set(RUN, "topology.planes=2"), "topology.planes"),
    "plane_kind on a leaf-spine": (_set(RUN, "topology.plane_kind=leaf_spine"), "plane_kind"),
    "k=8 on a leaf-spine": (_set(RUN, "topology.k=8"), "topology.k"),
    "spines=4 on a fat tree": (_set(TREE, "topology.spines=4"), "topology.spines"),
    "rails=8 on a leaf-spine": (_set(RUN, "topology.rails=8"), "topology.rails"),
    "plane_select=hash on a leaf-spine": (_set(RUN, "nic.plane_select=hash"), "plane_select"),
    "qp_count=1 under ecmp": (_set(RUN, "lb.qp_count=1"), "lb.qp_count"),
    "ARK delay at default under ecmp": (
        _set(RUN, "lb.ark_control_delay_us=5"),
        "lb.ark_control_delay_us",
    ),
    "flowlet gap at default under ecmp": (
        _set(PACKET, "switch.flowlet_gap_us=10"),
        "switch.flowlet_gap_us",
    ),
    "pfc_xon_bytes null without PFC": (
        _set(PACKET, "switch.pfc_xon_bytes=null"),
        "switch.pfc_xon_bytes",
    ),
    "nscc key at default without nscc": (
        _set(PACKET, "nic.nscc.target_delay_us=null"),
        "nic.nscc",
    ),
    "prompt tokens at default with zipf prompts": (
        ["run", "ark", "--out", "o", "--set", "workload.prompt_tokens=13300"],
        "workload.prompt_tokens",
    ),
    "yaml key at default that does nothing": (
        lambda t: _yaml(t, "topology: {planes: 2}\nworkload: {kind: permutation}\n"),
        "topology.planes",
    ),
    # keys of the other engine, any value
    "timeline interval on the flow engine": (
        _set(RUN, "records.timeline_interval_us=10"),
        "records.timeline_interval_us",
    ),
    "buffer bytes on the flow engine": (_set(RUN, "switch.buffer_bytes=100000"), "buffer_bytes"),
    "buffer bdp at default on the flow engine": (_set(RUN, "switch.buffer_bdp=1"), "buffer_bdp"),
    "RTO on the flow engine": (_set(RUN, "nic.rto_us=100"), "nic.rto_us"),
    "retries on the flow engine": (_set(RUN, "nic.max_retries=8"), "nic.max_retries"),
    "base RTT auto on the flow engine": (
        _set(RUN, "nic.initial_base_rtt_us=auto"),
        "initial_base_rtt_us",
    ),
    "constant CC named on the flow engine": (_set(RUN, "nic.cc=constant"), "nic.cc"),
    "PDC groups on the flow engine": (_set(RUN, "nic.pdc_groups_enabled=false"), "pdc_groups"),
    "DCQCN tuning on the flow engine": (_set(RUN, "nic.dcqcn.g=0.5"), "nic.dcqcn.g"),
    "ECN max prob on the flow engine": (_set(RUN, "switch.ecn_max_prob=1"), "ecn_max_prob"),
    "flow solver on the packet engine": (
        _set(PACKET, "engine.flow_solver=incremental"),
        "engine.flow_solver",
    ),
    "flow model at default on the packet engine": (
        _set(PACKET, "engine.flow_model=max_min"),
        "engine.flow_model",
    ),
    "a packet key in a yaml run on flow": (
        lambda t: _yaml(t, "workload: {kind: permutation}\nnic: {rto_us: 50}\n"),
        "nic.rto_us",
    ),
}
PFC_CASES: dict[str, tuple] = {
    "PFC on a 100-byte buffer": (
        _set(PACKET, "switch.pfc=true", "switch.buffer_bytes=100"),
        "switch.buffer_bytes: must be >=",
    ),
    "PFC XON above XOFF": (
        _set(PACKET, "switch.pfc=true", "switch.pfc_xoff_bytes=5000", "switch.pfc_xon_bytes=9000"),
        "pfc_xon_bytes",
    ),
    "PFC XON above the derived XOFF": (
        _set(PACKET, "switch.pfc=true", "switch.buffer_bytes=200000", "switch.pfc_xon_bytes=1e5"),
        "switch.pfc_xon_bytes",
    ),
    "PFC XOFF + headroom over the buffer": (
        _set(
            PACKET, "switch.pfc=true", "switch.buffer_bytes=200000", "switch.pfc_xoff_bytes=150000"
        ),
        "headroom",
    ),
    "PFC headroom over the buffer": (
        _set(
            PACKET, "switch.pfc=true", "switch.buffer_bytes=50000", "switch.pfc_headroom_bytes=1e6"
        ),
        "switch.buffer_bytes",
    ),
    "RoCE XOFF from ECN over the buffer": (
        _set(PACKET, "nic.transport=roce", "switch.buffer_bytes=400000"),
        "switch.buffer_bytes",
    ),
    "XON above XOFF without PFC too": (
        _set(PACKET, "switch.pfc_xoff_bytes=5000", "switch.pfc_xon_bytes=9000"),
        "pfc_xon_bytes",
    ),
}
SPELLING_CASES: dict[str, tuple] = {
    "alias and name together": (
        lambda t: _yaml(
            t, "workload: {kind: permutation}\nnic: {EntropyMaskBits: 3, entropy_mask_bits: 4}\n"
        ),
        "given twice",
    ),
    "switch alias and name together": (
        lambda t: _yaml(
            t,
            "workload: {kind: permutation}\nswitch: {EcmpHashMethod: crc32, hash_method: crc32}\n",
        ),
        "given twice",
    ),
    "a boolean where no on/off name fits": (
        lambda t: _yaml(t, "workload: {kind: moe, scheduler: on}\n"),
        "workload.scheduler",
    ),
    "merge of an unknown key": (
        lambda t: _yaml(
            t, "x-fab: &fab {spinez: 4}\ntopology: {<<: *fab}\nworkload: {kind: permutation}\n"
        ),
        "did you mean topology.spines?",
    ),
    "a merge of a list is not a mapping": (
        lambda t: _yaml(t, "x-l: &l [1, 2]\ntopology: {<<: *l}\nworkload: {kind: permutation}\n"),
        "broken YAML",
    ),
    "recorded trace changed since": (_changed_trace, "changed since this scenario was recorded"),
}
CASES = {**SUFFIX_CASES, **NAME_CASES, **UNREAD_CASES, **PFC_CASES, **SPELLING_CASES}


@pytest.mark.parametrize("case", sorted(CASES))
def test_config_refusal_is_one_line(case, tmp_path):
    make_args, needle = CASES[case]
    argv = make_args(tmp_path) if callable(make_args) else make_args
    before = snapshot(tmp_path)
    outcome = run_cli(argv, tmp_path, wall_s=30)
    assert_refused(outcome, before, snapshot(tmp_path), needle=needle, wall_s=30)


def test_there_are_enough_cases():
    assert len(CASES) >= 50
