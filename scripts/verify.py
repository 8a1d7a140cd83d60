"""Run every full verification (scripts/verify_*.py and the slow test tier) with its numbers.

The test suite runs reduced versions (fewer seeds, wider tolerances) of these checks; this
runs them in full.  Areas: one per ``scripts/verify_<name>.py`` (``foundation``: the ECMP
collision statistics over 20 000 seeds; ``packet``, ``ark``, ...), and ``slow``: the tests
marked ``slow`` (``python -m pytest -m slow``; the default ``pytest`` run deselects them).
Usage: ``python scripts/verify.py [NAME ...]`` (e.g. ``foundation slow``); exit code 1 if any
check fails.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent  # the pyproject.toml with the pytest settings (markers, testpaths)


def areas() -> dict[str, list[str]]:
    """``{name: command}`` of every registered verification, in run order."""
    out = {
        s.stem.removeprefix("verify_"): [sys.executable, str(s)]
        for s in sorted(HERE.glob("verify_*.py"))
    }
    out["slow"] = [sys.executable, "-m", "pytest", "-m", "slow", "-q", "-p", "no:cacheprovider"]
    return out


def main(names: list[str]) -> int:
    known = areas()
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"unknown area(s) {', '.join(unknown)}; known: {', '.join(known)}")
        return 2
    selected = {n: cmd for n, cmd in known.items() if not names or n in names}
    failed = []
    for name, cmd in selected.items():
        print(f"== {name}: {' '.join(cmd[1:])}", flush=True)
        t0 = time.perf_counter()
        code = subprocess.call(cmd, cwd=ROOT if name == "slow" else None)
        print(f"== {name}: {'ok' if code == 0 else 'FAILED'} in {time.perf_counter() - t0:.0f} s\n")
        if code:
            failed.append(name)
    if failed:
        print("failed:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
