"""Scenario configuration: typed models, built-in presets, loading, overrides, the name table."""

from fabricsim.config.loader import builtin_descriptions, builtin_names, load_scenario
from fabricsim.config.models import (
    EngineConfig,
    LbConfig,
    NicConfig,
    RecordsConfig,
    Scenario,
    SwitchConfig,
    TopologyConfig,
)
from fabricsim.config.names import (
    NameEntry,
    RegisteredName,
    name_entries,
    register_name,
    registered_names,
    unregister_name,
)

__all__ = [
    "EngineConfig",
    "LbConfig",
    "NameEntry",
    "NicConfig",
    "RecordsConfig",
    "RegisteredName",
    "Scenario",
    "SwitchConfig",
    "TopologyConfig",
    "builtin_descriptions",
    "builtin_names",
    "load_scenario",
    "name_entries",
    "register_name",
    "registered_names",
    "unregister_name",
]
