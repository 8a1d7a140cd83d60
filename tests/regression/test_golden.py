"""Golden runs: outputs byte-identical to the stored ones (see golden_runs.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "golden_runs", Path(__file__).with_name("golden_runs.py")
)
assert _spec and _spec.loader
golden_runs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden_runs)


@pytest.mark.parametrize("name", sorted(golden_runs.RUNS))
def test_golden_run_is_unchanged(name):
    folder = golden_runs.GOLDEN / name
    files = golden_runs.canonical(name)
    stored = json.loads((folder / "digests.json").read_text())
    assert sorted(files) == sorted(stored), "a different set of output tables"
    for fname, text in files.items():
        kept = folder / fname
        if kept.exists():  # small files are kept whole: compare them for a readable diff
            assert text == kept.read_text(), f"{name}/{fname} changed"
    assert golden_runs.digest(files) == stored
