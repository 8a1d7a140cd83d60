"""Run a scenario: :mod:`fabricsim.experiments.runner` under its older name.

Kept because tests, scripts, examples and doctests import ``fabricsim.runner`` (``run``,
``fabric_of``, ``router_of``, ``check_engine``, ``ENGINES``); new code imports
:mod:`fabricsim.experiments.runner`.
"""

from fabricsim.experiments.engines import estimated_packets
from fabricsim.experiments.runner import ENGINES, check_engine, fabric_of, router_of, run

__all__ = ["ENGINES", "check_engine", "estimated_packets", "fabric_of", "router_of", "run"]
