"""Issue 37 (cfg): input forms a newcomer writes -- names twice, YAML 1.1 words, merge keys,
did-you-mean for scenario and link names."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

import fabricsim
from fabricsim.config.loader import load_scenario, parse_set_options, parse_yaml
from fabricsim.errors import ConfigError

PERM = {"kind": "permutation"}


def test_alias_and_name_together_is_one_key_given_twice():
    with pytest.raises(ConfigError) as err:
        load_scenario({"workload": PERM, "nic": {"EntropyMaskBits": 3, "entropy_mask_bits": 4}})
    text = str(err.value)
    assert "nic.entropy_mask_bits" in text and "twice" in text and "EntropyMaskBits" in text
    assert "unknown key" not in text


@pytest.mark.parametrize(("raw", "word"), [("on", "on"), ("off", "off"), ("auto", "auto")])
def test_pacing_acks_words_read_as_booleans_by_yaml(raw, word):
    yaml_sc = load_scenario(parse_yaml(f"workload: {{kind: moe, pacing_acks: {raw}}}\n", "s"))
    assert yaml_sc.workload.pacing_acks == word
    set_sc = load_scenario("moe").with_overrides(parse_set_options([f"workload.pacing_acks={raw}"]))
    assert set_sc.workload.pacing_acks == word


def test_a_boolean_where_no_word_pair_fits_is_still_refused():
    with pytest.raises(ConfigError, match="workload.scheduler: must be a number or a name"):
        load_scenario({"workload": {"kind": "moe", "scheduler": True}})


def test_yaml_merge_keys_and_extension_blocks(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "x-fabric: &fabric {kind: leaf_spine, spines: 8, leaves: 2}\n"
        "topology:\n  <<: *fabric\n  leaves: 3\n"
        "workload: {kind: permutation}\n"
    )
    sc = load_scenario(path)
    assert (sc.topology.spines, sc.topology.leaves) == (8, 3)  # the explicit key wins
    assert "x-fabric" not in sc.user_keys and "topology.spines" in sc.user_keys


def test_merge_keys_still_refuse_a_duplicate_explicit_key():
    with pytest.raises(ConfigError, match="duplicate key"):
        parse_yaml("a: &x {b: 1}\nc: {<<: *x, d: 2, d: 3}\n", "s")


def test_mistyped_scenario_name_gets_the_nearest_name():
    with pytest.raises(ConfigError, match="did you mean permutation\\?"):
        load_scenario("permutaton")


@pytest.mark.parametrize(
    ("key", "value", "near"),
    [
        ("topology.failed_links", ["leaf0->spin1"], "leaf0->spine1"),
        ("topology.degraded_links", {"leaf1->spine2x": 0.5}, "leaf1->spine2"),
    ],
)
def test_mistyped_link_name_gets_the_nearest_link(key, value, near):
    sc = load_scenario("ecmp-collision").with_overrides({key: value})
    with pytest.raises(ConfigError, match=f"did you mean '{near}'"):
        fabricsim.run(sc, engine="flow")


def test_mistyped_mid_run_failure_link_is_named_before_the_run():
    from fabricsim.topology import build_fabric

    sc = load_scenario("permutation").with_overrides(
        {"topology.k": 4, "topology.link_failures": [{"link": "agg0_0->cor0", "at_s": 0.001}]}
    )
    with pytest.raises(ConfigError, match="did you mean 'agg0_0->core0'"):
        build_fabric(sc.topology)


# -- PFC settings that cannot work ----------------------------------------------------------
SPRAY = load_scenario("spray-example")  # 400 Gbps, 1 us links, 4096 + 88 B packets


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"switch.pfc": True, "switch.buffer_bytes": 100}, "switch.buffer_bytes: must be >="),
        (
            {"switch.pfc": True, "switch.pfc_xoff_bytes": 5000, "switch.pfc_xon_bytes": 9000},
            "pfc_xon_bytes (9000) must be <= pfc_xoff_bytes (5000)",
        ),
        (
            {"switch.pfc": True, "switch.buffer_bytes": 200_000, "switch.pfc_xon_bytes": 90_000},
            "switch.pfc_xon_bytes: must be <= PFC's XOFF",
        ),
        (
            {"switch.pfc": True, "switch.buffer_bytes": 200_000, "switch.pfc_xoff_bytes": 150_000},
            "switch.buffer_bytes: must be >=",
        ),
        ({"nic.transport": "roce", "switch.buffer_bytes": 400_000}, "switch.buffer_bytes"),
    ],
)
def test_pfc_settings_that_cannot_work_are_refused(overrides, needle):
    with pytest.raises(ConfigError) as err:
        SPRAY.with_overrides(overrides)
    assert needle in str(err.value)
    assert len(str(err.value).splitlines()) == 1


def test_pfc_buffer_bound_is_exactly_xoff_plus_headroom():
    from fabricsim.config.roce import pfc_thresholds

    off, _, room = pfc_thresholds(0, 400e9, 1_000_000, 4184, None, None, None)
    ok = SPRAY.with_overrides({"switch.pfc": True, "switch.buffer_bytes": 2 * 4184 + room})
    assert ok.switch.buffer_bytes == off + room
    with pytest.raises(ConfigError, match=f"= {off + room} bytes at 400 Gbps"):
        SPRAY.with_overrides({"switch.pfc": True, "switch.buffer_bytes": off + room - 1})
    # without PFC any buffer of at least a byte is a lossy port's business
    assert SPRAY.with_overrides({"switch.buffer_bytes": 100}).switch.buffer_bytes == 100


# -- unit suffixes ---------------------------------------------------------------------------
ECMP = load_scenario("ecmp-collision")


@pytest.mark.parametrize(
    ("key", "raw", "value"),
    [
        ("workload.size_bytes", "4MB", 4_000_000),
        ("workload.size_bytes", "4MiB", 4 * 1024**2),
        ("workload.size_bytes", "4 kB", 4000),
        ("workload.size_bytes", "1.5KiB", 1536),
        ("topology.link_gbps", "100Gbps", 100.0),
        ("topology.fabric_link_gbps", "400Mbps", 0.4),
        ("topology.host_link_gbps", "1.6Tbps", 1600.0),
        ("topology.link_delay_us", "1us", 1.0),
        ("topology.link_delay_us", "500ns", 0.5),
        ("topology.link_delay_us", "2ms", 2000.0),
        ("engine.time_limit_s", "1ms", 0.001),
        ("engine.max_memory_gb", "512MB", 0.512),
        ("workload.size_bytes", 4096, 4096),  # a plain number keeps its meaning
        ("topology.link_delay_us", 1.5, 1.5),
    ],
)
def test_unit_suffixes_through_set(key, raw, value):
    sc = ECMP.with_overrides(parse_set_options([f"{key}={raw}"]))
    node = sc
    for part in key.split("."):
        node = getattr(node, part)
    assert node == pytest.approx(value)


def test_unit_suffixes_in_a_yaml_file_and_in_lists(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "topology: {link_gbps: 100Gbps, link_delay_us: 500ns, host_nic_gbps: {0: 200Gbps}}\n"
        "workload: {kind: permutation, size_bytes: 4MiB, start_s: 1ms}\n"
        "nic: {rto_us: 2ms}\n"
    )
    sc = load_scenario(path)
    assert sc.workload.size_bytes == 4 * 1024**2 and sc.workload.start_s == 0.001
    assert sc.topology.host_link_gbps == 100 and sc.topology.link_delay_us == 0.5
    assert sc.topology.host_nic_gbps == {0: 200.0} and sc.nic.rto_us == 2000


@pytest.mark.parametrize(
    ("key", "raw", "needle"),
    [
        ("workload.size_bytes", "4Mbps", "workload.size_bytes: '4Mbps' is not a size"),
        ("topology.link_gbps", "4MB", "topology.link_gbps: '4MB' is not a rate"),
        ("topology.link_delay_us", "3 parsecs", "is not a time"),
        ("workload.size_bytes", "1.5B", "integer"),
    ],
)
def test_a_wrong_suffix_names_the_suffixes_the_key_takes(key, raw, needle):
    with pytest.raises(ConfigError) as err:
        ECMP.with_overrides(parse_set_options([f"{key}={raw}"]))
    assert needle in str(err.value)


# -- reproducible records: resolved input paths, content hashes ------------------------------
TRACE = "src,dst,size_bytes,start_s\n0,9,100000,0\n1,10,100000,0\n"


def _trace_dir(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "t.csv").write_text(TRACE)
    (sub / "s.yaml").write_text("name: t\nworkload: {kind: trace, path: t.csv}\n")
    return sub


def test_config_hash_does_not_depend_on_how_the_path_was_spelled(tmp_path, monkeypatch):
    sub = _trace_dir(tmp_path)
    monkeypatch.chdir(tmp_path)
    relative = load_scenario("sub/s.yaml")
    absolute = load_scenario(str(sub / "s.yaml"))
    assert relative.workload.path == absolute.workload.path == str(sub / "t.csv")
    assert relative.config_hash() == absolute.config_hash()
    by_set = absolute.with_overrides({"workload.path": "sub/../sub/t.csv"})
    assert by_set.workload.path == str(sub / "t.csv")
    assert by_set.config_hash() == absolute.config_hash()
    # the same content elsewhere, same hash; other content, another hash
    (tmp_path / "copy.csv").write_text(TRACE)
    assert absolute.with_overrides({"workload.path": "copy.csv"}).config_hash() == (
        absolute.config_hash()
    )
    (tmp_path / "other.csv").write_text(TRACE.replace("100000", "200000"))
    assert absolute.with_overrides({"workload.path": "other.csv"}).config_hash() != (
        absolute.config_hash()
    )


def test_a_recorded_config_yaml_reruns_from_elsewhere_and_checks_the_content(tmp_path, monkeypatch):
    sub = _trace_dir(tmp_path)
    monkeypatch.chdir(sub)
    res = fabricsim.run(load_scenario("s.yaml"), engine="flow")
    res.save(tmp_path / "run")
    recorded = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert recorded["workload"]["path"] == str(sub / "t.csv")
    assert recorded["inputs"] == {str(sub / "t.csv"): hashlib.sha256(TRACE.encode()).hexdigest()}
    monkeypatch.chdir("/")
    again = load_scenario(tmp_path / "run" / "config.yaml")
    assert again.config_hash() == res.summary["config_hash"]
    (sub / "t.csv").write_text(TRACE + "2,11,5,0\n")
    with pytest.raises(ConfigError, match="workload.path: .* changed since this scenario"):
        load_scenario(tmp_path / "run" / "config.yaml")


def test_scenarios_without_input_files_keep_their_hash_and_record():
    sc = load_scenario("ecmp-collision")
    assert "inputs" not in sc.to_dict()
    golden = Path(__file__).parents[1] / "regression/golden/ecmp-collision-flow/summary.json"
    pinned = json.loads(golden.read_text())["config_hash"]  # it moves only with a new key
    assert sc.config_hash() == pinned
