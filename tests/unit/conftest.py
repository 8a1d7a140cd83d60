"""Fixtures shared by the unit tests; `from routing_cases import ...` works in this folder."""

import os
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


@pytest.fixture
def chromium() -> str:
    """The headless browser of the report tests: skipped where none is installed, a failure
    under CI (``.ci/run`` installs Debian's chromium)."""
    from fabricsim.report.browser import find_browser

    exe = find_browser()
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set but no Chromium browser is installed (apt-get install chromium)")
        pytest.skip("no Chromium-family browser on PATH (apt-get install chromium)")
    return exe
