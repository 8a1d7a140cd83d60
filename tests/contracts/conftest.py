"""The contract suite's fixtures; `from contract_cases import ...` works in this folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from contract_cases import write_inputs  # noqa: E402


@pytest.fixture(scope="session")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tiny input files (trace CSV, MoE matrix, Chakra traces, prompt CSV), written once."""
    return write_inputs(tmp_path_factory.mktemp("contract_inputs"))
