"""Scenario configuration: typed models, built-in presets, loading and overrides."""

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

__all__ = [
    "EngineConfig",
    "LbConfig",
    "NicConfig",
    "RecordsConfig",
    "Scenario",
    "SwitchConfig",
    "TopologyConfig",
    "builtin_descriptions",
    "builtin_names",
    "load_scenario",
]
