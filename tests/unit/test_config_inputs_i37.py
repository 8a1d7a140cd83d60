"""Issue 37 (cfg): input forms a newcomer writes -- names twice, YAML 1.1 words, merge keys,
did-you-mean for scenario and link names."""

from __future__ import annotations

import pytest

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
