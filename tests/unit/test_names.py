"""Config's name table (config/names.py): filled by the registrations, read by validation."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import fabricsim
from fabricsim.config.models import NicConfig
from fabricsim.config.names import (
    POINTS,
    register_name,
    registered_names,
    resolve_name,
    unregister_name,
)
from fabricsim.errors import ConfigError

FRESH = """
import json
from fabricsim.config.loader import load_scenario
sc = load_scenario({
    "workload": {"kind": "permutation"},
    "lb": {"policy": "pinned"},
    "nic": {"packet_spraying_type": "reps", "cc": "nscc"},
    "switch": {"hash_method": "crc32Offset", "load_balancing_method": "flowlet"},
})
from fabricsim.config.names import POINTS, registered_names
print(json.dumps({p: list(registered_names(p)) for p in POINTS}))
"""


def test_a_fresh_interpreter_validates_with_every_registered_name() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", FRESH], capture_output=True, text=True, env=env, check=True
    )
    seen = json.loads(out.stdout)
    assert seen == {p: list(registered_names(p)) for p in POINTS}
    assert {"ark", "ideal_spray"} <= set(seen["lb.policy"])
    assert {"reps", "oblivious"} <= set(seen["nic.packet_spraying_type"])
    assert {"adaptive", "flowlet", "spray"} <= set(seen["switch.load_balancing_method"])


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("nic.cc", "cubic", "nic.cc: must be one of constant, dcqcn, nscc (got 'cubic')"),
        (
            "switch.load_balancing_method",
            3,
            "switch.load_balancing_method: must be one of ecmp, adaptive, flowlet, spray (got 3)",
        ),
        (
            "switch.hash_method",
            "md5",
            "switch.hash_method: must be one of crc32WithSalt, crc32, crc32Offset, random "
            "(got 'md5')",
        ),
    ],
)
def test_an_unknown_name_is_one_line_listing_the_registered_ones(key, value, message) -> None:
    with pytest.raises(ConfigError) as exc:
        fabricsim.load_scenario("ecmp-collision").with_overrides({key: value})
    assert str(exc.value) == message


def test_spraying_names_ignore_case_spaces_and_underscores_other_points_do_not() -> None:
    assert resolve_name("nic.packet_spraying_type", "Oblivious Packet_Spraying") == "oblivious"
    assert resolve_name("nic.packet_spraying_type", "NONE") == "none"
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides(
        {"nic.PacketSprayingType": "REPS"}
    )
    assert sc.nic.packet_spraying_type == "reps"
    with pytest.raises(ValueError, match="must be one of constant, dcqcn, nscc"):
        resolve_name("nic.cc", "NSCC")


def test_unknown_points_and_empty_help_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown extension point 'nic.colour'"):
        register_name("nic.colour", "red", "a colour")
    with pytest.raises(ValueError, match="one-line help"):
        register_name("nic.cc", "quiet_test", "  ")
    assert "quiet_test" not in registered_names("nic.cc")


def test_the_json_schema_lists_the_names_registered_when_it_is_made() -> None:
    register_name("nic.packet_spraying_type", "schema_test", "a throwaway")
    try:
        schema = NicConfig.model_json_schema()["properties"]["PacketSprayingType"]
        assert schema["enum"] == list(registered_names("nic.packet_spraying_type"))
        assert "schema_test" in schema["enum"] and schema["type"] == "string"
    finally:
        unregister_name("nic.packet_spraying_type", "schema_test")
    schema = NicConfig.model_json_schema()["properties"]["PacketSprayingType"]
    assert "schema_test" not in schema["enum"]
