"""Fabric builders and the immutable fabric description."""

from fabricsim.topology.builders import build_fabric
from fabricsim.topology.fabric import Fabric

__all__ = ["Fabric", "build_fabric"]
