"""Run every full verification script (scripts/verify_*.py) and print their measured numbers.

The test suite runs reduced versions (fewer seeds, wider tolerances) of these checks; this
runs them in full.  Usage: ``python scripts/verify.py [NAME ...]`` (e.g. ``foundation ark``).
Exit code 1 if any check fails.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent


def main(names: list[str]) -> int:
    scripts = sorted(HERE.glob("verify_*.py"))
    if names:
        scripts = [s for s in scripts if s.stem.removeprefix("verify_") in names]
    failed = []
    for script in scripts:
        print(f"== {script.name}", flush=True)
        t0 = time.perf_counter()
        code = subprocess.call([sys.executable, str(script)])
        print(
            f"== {script.name}: {'ok' if code == 0 else 'FAILED'} in {time.perf_counter() - t0:.0f} s\n"
        )
        if code:
            failed.append(script.name)
    if failed:
        print("failed:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
