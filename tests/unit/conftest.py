"""Fixtures shared by the unit tests; `from routing_cases import ...` works in this folder."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(params=["incremental", "reference"])
def both_solvers(request, monkeypatch):
    """Run the test on both flow-engine solvers: the default (incremental), then the reference
    in its place (``engine.flow_solver``); the value is the solver's name.  Use with
    ``pytestmark = pytest.mark.usefixtures("both_solvers")``."""
    if request.param == "reference":
        from fabricsim.flowsim import engine
        from fabricsim.flowsim.reference import ReferenceRates

        monkeypatch.setattr(engine, "MaxMinKernel", lambda capacity, _: ReferenceRates(capacity))
    return request.param
