"""Scenario models: presets, aliases, overrides, the effective config and its hash."""

import pytest
import yaml

import fabricsim
from fabricsim.config.loader import builtin_names, load_scenario, parse_set_options
from fabricsim.errors import ConfigError

STABLE_NAMES = {"ark", "ecmp-collision", "spray-example", "permutation", "incast"}


def test_builtin_names_are_stable():
    assert set(builtin_names()) >= STABLE_NAMES


@pytest.mark.parametrize("name", sorted(STABLE_NAMES))
def test_builtins_validate(name):
    sc = load_scenario(name)
    assert sc.name == name
    assert sc.config_hash() == load_scenario(name).config_hash()


def test_camelcase_aliases_accepted():
    sc = load_scenario(
        {
            "workload": {"kind": "permutation"},
            "nic": {
                "EntropyMaskBits": 3,
                "PacketSprayingType": "Recycled Entropy Packet Spraying",
                "REPSBufferSizeMaskBits": 4,
                "InitialBaseRTT": "auto",
            },
            "switch": {"EcmpHashMethod": "crc32"},
        }
    )
    assert sc.nic.entropy_mask_bits == 3
    assert sc.nic.packet_spraying_type == "reps"
    assert sc.nic.reps_buffer_size_mask_bits == 4
    assert sc.nic.initial_base_rtt_us == "auto"
    assert sc.switch.hash_method == "crc32"


def test_overrides_with_dotted_and_camelcase_keys():
    sc = load_scenario("ark").with_overrides(
        {"workload.qps": 5, "nic.EntropyMaskBits": 2, "topology.spines": 8, "lb.policy": "pinned"}
    )
    assert (sc.workload.qps, sc.nic.entropy_mask_bits, sc.topology.spines, sc.lb.policy) == (
        5.0,
        2,
        8,
        "pinned",
    )


def test_link_gbps_sets_all_tiers():
    sc = load_scenario({"workload": {"kind": "permutation"}, "topology": {"link_gbps": 400}})
    assert sc.topology.host_link_gbps == sc.topology.fabric_link_gbps == 400


def test_degraded_links_override_adds_entry():
    sc = load_scenario("ark").with_overrides({"topology.degraded_links.leaf0->spine1": 0.5})
    assert sc.topology.degraded_links == {"leaf0->spine1": 0.5}


def test_parse_set_values_are_yaml_scalars():
    assert parse_set_options(["a=25", "b=true", "c=[x, y]", "d=1e-3", "e=text"]) == {
        "a": 25,
        "b": True,
        "c": ["x", "y"],
        "d": 1e-3,
        "e": "text",
    }


@pytest.mark.parametrize(
    "over, needle",
    [
        ({"topology.k": 7}, "even"),
        ({"nic.starting_port_offset": 70000}, "65535"),
        ({"workload.qps": -1}, "workload.qps"),
        ({"lb.policy": "magic"}, "lb.policy"),
        ({"nic.initial_base_rtt_us": -2}, "auto"),
    ],
)
def test_out_of_range_names_field(over, needle):
    with pytest.raises(ConfigError, match=needle):
        load_scenario("ark").with_overrides(over)


def test_effective_config_has_every_default(tmp_path):
    res = fabricsim.run("ecmp-collision")
    res.save(tmp_path)
    cfg = yaml.safe_load((tmp_path / "config.yaml").read_text())
    assert cfg["nic"]["rdma_data_mss"] == 4096
    assert cfg["switch"]["hash_method"] == "crc32WithSalt"
    assert load_scenario(tmp_path / "config.yaml").config_hash() == res.summary["config_hash"]
