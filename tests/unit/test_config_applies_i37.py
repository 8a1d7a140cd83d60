"""Issue 37 (cfg) items 3 and 5: a key set explicitly that the run does not read is refused,
whatever its value, and the engine column of one table decides for every key."""

from __future__ import annotations

import pytest
import yaml

import fabricsim
from fabricsim.config.keys import all_keys
from fabricsim.config.loader import builtin_names, load_scenario
from fabricsim.errors import EngineRefusal
from fabricsim.experiments import engines
from fabricsim.experiments.engines import ENGINES, KEY_ENGINES, check_supported, key_engines

ECMP = load_scenario("ecmp-collision")  # leaf-spine, flow engine by default


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"topology.planes": 2}, "topology.planes does nothing on topology.kind=leaf_spine"),
        ({"topology.k": 8}, "topology.k does nothing"),
        ({"nic.plane_select": "hash"}, "nic.plane_select=hash is read only when topology.kind"),
        ({"lb.qp_count": 1}, "lb.qp_count=1 is read only by lb.policy=qp_scaling"),
        (
            {"switch.flowlet_gap_us": 10.0},
            "switch.flowlet_gap_us=10.0 is read only by switch.load_balancing_method=flowlet",
        ),
        (
            {"switch.pfc_xoff_bytes": None},
            "switch.pfc_xoff_bytes=null is read only when switch.pfc",
        ),
    ],
)
def test_a_key_set_to_its_default_that_does_nothing_is_refused(overrides, needle):
    with pytest.raises(EngineRefusal, match="^" + needle.replace(".", r"\.")):
        check_supported(ECMP.with_overrides(overrides), "packet")


@pytest.mark.parametrize(
    "key",
    [
        "records.timeline_interval_us",
        "switch.buffer_bytes",
        "switch.buffer_bdp",
        "nic.rto_us",
        "nic.max_retries",
        "nic.cc",
        "nic.transport",
    ],
)
def test_packet_only_keys_on_the_flow_engine_are_refused_at_any_value(key):
    info = {k.key: k for k in all_keys()}[key]
    value = yaml.safe_load(info.default)
    sc = ECMP.with_overrides({key: value})  # its default, set explicitly
    with pytest.raises(EngineRefusal) as err:
        check_supported(sc, "flow")
    assert str(err.value).startswith(f"{key}=") and "--engine packet" in str(err.value)
    check_supported(sc, "packet")  # the engine that reads it runs it


def test_flow_only_keys_on_the_packet_engine_are_refused_at_any_value():
    sc = ECMP.with_overrides({"engine.flow_solver": "incremental"})
    with pytest.raises(EngineRefusal, match="read only by the flow engine.*--engine flow"):
        check_supported(sc, "packet")
    check_supported(sc, "flow")


def test_the_engine_table_names_registered_engines_and_real_keys():
    keys = {k.key for k in all_keys()}
    for key, readers in KEY_ENGINES.items():
        assert set(readers) <= set(ENGINES), key
        if key.endswith("."):
            assert any(k.startswith(key) for k in keys), key
        else:
            assert key in keys, key
    # the capability declarations are the table's, nested sections expanded
    assert "nic.nscc.target_delay_us" in ENGINES["flow"].unread_keys
    assert ENGINES["packet"].unread_keys == (
        "engine.flow_model",
        "engine.flow_solver",
        "engine.decomposed.cluster_tolerance",
        "engine.decomposed.aggregate",
    )
    assert key_engines("topology.spines") is None  # unlisted: every engine


def test_a_third_engine_joins_through_the_table(monkeypatch):
    """A key read by packet and a new engine: refused on flow naming both, read by the new."""
    monkeypatch.setitem(KEY_ENGINES, "nic.rto_us", ("packet", "decomposed"))
    assert "nic.rto_us" not in engines.unread_keys("decomposed")
    assert "nic.rto_us" in engines.unread_keys("flow")
    caps = engines.FLOW
    sc = ECMP.with_overrides({"nic.rto_us": 100})
    with pytest.raises(EngineRefusal, match="packet or decomposed engine"):
        engines._check_keys_read(sc, caps)


def test_built_in_keys_and_preset_keys_do_not_count():
    for name in builtin_names():
        sc = load_scenario(name)
        check_supported(sc, sc.engine.kind)
    sc = load_scenario("moe").with_overrides({"engine.kind": "flow"})  # moe sets nic.cc: nscc
    check_supported(sc, "flow")


def test_a_recorded_config_yaml_reruns_on_either_engine(tmp_path):
    res = fabricsim.run(ECMP, engine="flow")
    res.save(tmp_path / "run")
    again = load_scenario(tmp_path / "run" / "config.yaml")
    assert again.config_hash() == ECMP.config_hash()
    check_supported(again, "flow")
    check_supported(again, "packet")
    # a key given on top of the record still counts
    with pytest.raises(EngineRefusal, match="topology.k does nothing"):
        check_supported(again.with_overrides({"topology.k": 8}), "flow")


def test_a_comparison_baseline_setting_defaults_is_not_refused():
    """An experiment's per-variant keys at their defaults (varied) do not count as set."""
    sc = ECMP.varying({"lb.qp_count"}).with_overrides({"lb.qp_count": 1})
    check_supported(sc, "flow")


def test_an_effective_dict_with_another_workload_is_still_a_record(tmp_path):
    """The API idiom: ``to_dict()`` of a scenario, a section replaced, loaded again (its
    filled-in defaults do not count; ``inputs`` is filled in at load and not needed)."""
    (tmp_path / "t.csv").write_text("src,dst,size_bytes,start_s\n0,9,1000,0\n")
    data = load_scenario("ark").to_dict()
    data["workload"] = {"kind": "trace", "path": str(tmp_path / "t.csv")}
    sc = load_scenario(data)
    assert sc.inputs and "nic.ack_request" not in sc.user_keys
    check_supported(sc, "flow")
