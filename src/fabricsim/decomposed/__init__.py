"""The decomposed engine: link-level decomposition of a run into packet-level link simulations.

``routes`` -> ``link_workloads`` -> ``cluster`` -> ``link_fabric`` + ``simulate`` (on the
experiments backend) -> ``compose``; :class:`DecomposedEngine` runs the pipeline.
"""

from fabricsim.decomposed.engine import DecomposedEngine

__all__ = ["DecomposedEngine"]
