"""Start-up: heavy libraries are imported where they are used, not when fabricsim starts."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("pandas", "pyarrow", "scipy", "matplotlib", "dask")


def _loaded(code: str) -> dict[str, bool]:
    """Which of HEAVY a fresh interpreter has imported after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY}}}))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.splitlines()[-1])


def test_importing_fabricsim_and_its_cli_imports_no_heavy_library():
    assert _loaded("import fabricsim, fabricsim.cli") == dict.fromkeys(HEAVY, False)


def test_the_lazy_module_imports_on_first_use():
    loaded = _loaded("from fabricsim._compat import pd\nassert pd.DataFrame({'a': [1]}).shape")
    assert loaded["pandas"]
