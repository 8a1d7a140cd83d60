"""Fabric builders and the immutable fabric description."""

from fabricsim.topology.builders import build_fabric, fabric_for
from fabricsim.topology.fabric import Fabric

__all__ = ["Fabric", "build_fabric", "fabric_for"]
