"""``fabricsim keys``, docs/keys.md, did-you-mean and every error of a file at once."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fabricsim.cli import main
from fabricsim.config.keys import all_keys, close_keys, key_infos, keys_markdown
from fabricsim.config.names import POINTS, registered_names
from fabricsim.config.suggest import closest

DOCS = Path(__file__).resolve().parents[2] / "docs" / "keys.md"

# Every key of DESIGN.md's key table (section 3), as the contract names them.
DESIGN_KEYS = """
seed preset engine.flow_model engine.flow_solver engine.kind engine.max_memory_gb
engine.max_packets engine.time_limit_s lb.ark_control_delay_us lb.dst_port lb.policy
lb.qp_count lb.qp_field lb.qp_mode nic.ack_bytes nic.ack_coalesce nic.ack_request nic.cc
nic.cwnd_bdp nic.entropy_mask_bits nic.entropy_value_set_size
nic.failure_detection_rtt_multiplier nic.freezing_timeout_us nic.header_bytes
nic.initial_base_rtt_us nic.max_retries nic.packet_spraying_type nic.pdc_groups_enabled
nic.rdma_data_mss nic.reps_buffer_size_mask_bits nic.reroute_rtts nic.rto_us
nic.starting_port_offset nic.transport records.port_stats records.switch_lb_stats
records.timeline_interval_us records.timelines records.uet_monitor records.uet_transport_stats
switch.adaptive_quantum_bytes switch.buffer_bdp switch.buffer_bytes switch.ecn_max_bytes
switch.ecn_min_bytes switch.flowlet_gap_us switch.flowlet_pick switch.hash_fields
switch.hash_method switch.header_buffer_bytes switch.load_balancing_method switch.pfc
switch.pfc_xoff_bytes switch.pfc_xon_bytes switch.salt_mode switch.trimming
topology.degraded_links topology.fabric_link_gbps topology.failed_link_mode
topology.failed_links topology.host_link_gbps topology.hosts_per_edge topology.hosts_per_leaf
topology.k topology.kind topology.leaves topology.link_delay_us topology.link_failures
topology.link_gbps topology.parallel_links topology.spines topology.servers topology.rails
topology.planes workload.kind workload.model workload.path workload.qps workload.requests
workload.scheduler
""".split()  # noqa: SIM905 - a word list reads better than 80 quoted strings


def _run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_every_design_key_and_nscc_section_is_listed():
    known = {k.key for k in all_keys()}
    assert [k for k in DESIGN_KEYS if k not in known] == []
    assert any(k.startswith("nic.nscc.") for k in known)
    assert all(k.help for k in all_keys()), [k.key for k in all_keys() if not k.help]


def test_every_registered_strategy_is_listed(capsys):
    code, out, _ = _run(capsys, "keys")
    assert code == 0
    for point in POINTS:
        for name in registered_names(point):
            assert f"      {name} " in out or f"      {name}\n" in out, (point, name)


def test_a_newly_registered_name_appears_by_itself():
    from fabricsim.config.names import register_name, unregister_name

    register_name("nic.cc", "demo_keys_cc", "a demonstration CC")
    try:
        info = key_infos("nic.cc")[0]
        assert ("demo_keys_cc", "a demonstration CC") in info.names
    finally:
        unregister_name("nic.cc", "demo_keys_cc")


def test_prefix_type_default_range_unit(capsys):
    code, out, _ = _run(capsys, "keys", "topology.link_delay_us")
    assert code == 0
    assert out.splitlines()[0] == (
        "topology.link_delay_us = 1 µs   float 0 … 1e+06   suffixes ps ns us ms s"
    )
    assert out.splitlines()[1].strip() == "propagation delay per link, us"
    code, out, _ = _run(capsys, "keys", "nic.nscc")
    assert code == 0 and all(line.startswith(("nic.nscc.", " ")) for line in out.splitlines())


def test_workload_keys_say_their_kind():
    qps = [k for k in key_infos("workload.qps")]
    assert [k.applies for k in qps] == ["workload.kind=kv_cache"]
    sizes = {k.applies for k in key_infos("workload.size_bytes")}
    assert {"workload.kind=permutation", "workload.kind=incast"} <= sizes
    assert key_infos("topology.k")[0].applies.startswith("topology.kind=fat_tree")


def test_json_output(capsys):
    code, out, _ = _run(capsys, "keys", "lb", "--json")
    assert code == 0
    data = json.loads(out)
    policy = next(d for d in data if d["key"] == "lb.policy")
    assert policy["default"] == "ecmp"
    assert {n["name"] for n in policy["names"]} == set(registered_names("lb.policy"))
    assert set(data[0]) == {"key", "type", "default", "allowed", "unit", "help", "applies",
                            "aliases", "names", "suffixes"}  # fmt: skip


def test_unknown_prefix_is_exit_2_with_a_suggestion(capsys):
    code, out, err = _run(capsys, "keys", "nic.nsc")
    assert code == 2 and out == ""
    assert err == "error: nic.nsc: no such key or section; did you mean nic.nscc?\n"


def test_docs_keys_md_is_current():
    """docs/keys.md is `fabricsim keys --markdown` (in a fresh process: only built-in names)."""
    fresh = subprocess.run(
        [sys.executable, "-m", "fabricsim", "keys", "--markdown"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    from fabricsim.experiments.engines import key_engines

    assert fresh == keys_markdown(key_engines) or "demo" in keys_markdown()
    assert DOCS.read_text() == fresh, (
        "docs/keys.md is stale: fabricsim keys --markdown > docs/keys.md"
    )


TYPOS = [  # (--set KEY=VALUE, what the error must suggest)
    ("topology.spine=4", "did you mean topology.spines?"),
    ("topology.leafs=4", "did you mean topology.leaves?"),
    ("lb.polcy=ark", "did you mean lb.policy?"),
    ("lb.policy=ECMP", "did you mean ecmp?"),
    ("lb.policy=qpscaling", "did you mean qp_scaling?"),
    ("nic.cc=NSCC", "did you mean nscc?"),
    ("nic.packet_spraying_type=rep", "did you mean reps?"),
    ("topology.kind=fat-tree", "did you mean fat_tree?"),
    ("swich.trimming=false", "did you mean switch?"),
    ("nic.nscc.md_gian=0.3", "did you mean nic.nscc.md_gain?"),
    ("workload.qsp=3", "did you mean workload.qps?"),
    ("switch.load_balancing_method=adaptiv", "did you mean adaptive?"),
]


@pytest.mark.parametrize(("setting", "hint"), TYPOS, ids=[t[0] for t in TYPOS])
def test_did_you_mean(capsys, tmp_path, setting, hint):
    code, out, err = _run(capsys, "run", "ark", "--set", setting, "--out", str(tmp_path / "o"))
    assert code == 2, err
    assert err.count("\n") == 1 and hint in err, err
    assert not (tmp_path / "o").exists()


def test_no_suggestion_when_nothing_is_close():
    assert closest("zzzz", ["ecmp", "ark"]) is None
    assert close_keys("topology.qqqqqqq") == []


def test_every_error_of_a_file_at_once(capsys, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(
        "topology: {kind: leaf_spine, spine: 4, leaves: 0}\n"
        "workload: {kind: kv_cache, qsp: 5}\n"
        "lb: {policy: ECMP}\n"
    )
    code, out, err = _run(capsys, "run", str(path), "--out", str(tmp_path / "o"))
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 4, err
    assert all(line.startswith("error: ") for line in lines)
    text = "\n".join(lines)
    for part in ("topology.spine: unknown key; did you mean topology.spines?",
                 "topology.leaves:", "workload.qsp: unknown key; did you mean workload.qps?",
                 "lb.policy:"):  # fmt: skip
        assert part in text, text
    assert not (tmp_path / "o").exists()


def test_many_errors_are_capped(capsys, tmp_path):
    path = tmp_path / "bad.yaml"
    fields = ", ".join(f"bogus{i}: 1" for i in range(8))
    path.write_text(f"topology: {{{fields}}}\nworkload: {{kind: permutation}}\n")
    code, _, err = _run(capsys, "run", str(path))
    lines = err.splitlines()
    assert code == 2 and len(lines) == 6 and lines[-1] == "error: ... and 3 more errors"


def test_units_and_allowed_values_of_awkward_fields(capsys):
    info = {k.key: k for k in all_keys()}
    moe_zipf = next(k for k in key_infos("workload.zipf_s"))
    assert moe_zipf.unit == ""  # an exponent, not seconds
    assert info["nic.dcqcn.ai_mbps"].unit == "Mb/s"
    assert info["switch.hash_fields"].allowed.startswith("each one of: src_ip, dst_ip")
    moe_model = next(k for k in key_infos("workload.model") if k.applies == "workload.kind=moe")
    assert moe_model.type == "deepseek-v3 | qwen3-235b | null" and moe_model.allowed == ""
    assert main(["keys", "..."]) == 2
    assert "no such key" in capsys.readouterr().err


def test_keys_say_which_unit_suffixes_a_key_takes():
    info = {k.key: k for k in all_keys()}
    assert "MiB" in info["nic.header_bytes"].suffixes and "MB" in info["nic.header_bytes"].suffixes
    assert info["topology.fabric_link_gbps"].suffixes == ("bps", "kbps", "Mbps", "Gbps", "Tbps")
    assert "ms" in info["engine.time_limit_s"].suffixes
    assert info["engine.time_limit_s"].unit_column == "s; suffixes ps, ns, us, ms, s"
    assert info["nic.cc"].suffixes == () and info["seed"].suffixes == ()
    zipf = next(k for k in key_infos("workload.zipf_s"))
    assert zipf.suffixes == ()  # an exponent
    assert "µs; suffixes ps, ns, us, ms, s" in DOCS.read_text()
