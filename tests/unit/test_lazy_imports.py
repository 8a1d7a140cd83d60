"""Start-up: heavy libraries are imported where they are used, not when fabricsim starts."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("pandas", "pyarrow", "scipy", "matplotlib", "dask", "rich")


def _loaded(code: str) -> dict[str, bool]:
    """Which of HEAVY a fresh interpreter has imported after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY}}}))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.splitlines()[-1])


def test_importing_fabricsim_and_its_cli_imports_no_heavy_library():
    """Nor rich: the command line prints with it, ``--quiet`` does not."""
    assert _loaded("import fabricsim, fabricsim.cli") == dict.fromkeys(HEAVY, False)


def test_the_lazy_module_imports_on_first_use():
    loaded = _loaded("from fabricsim._compat import pd\nassert pd.DataFrame({'a': [1]}).shape")
    assert loaded["pandas"]


CM = "Nodes 16\nConnections 3\n0->9 id 1 start 0 size 20000\n3->12 id 2 start 5.5 size 1000\n15->0 id 7 start 2 size 4096\n"


def test_a_run_that_only_writes_its_files_imports_no_pandas(tmp_path):
    """`fabricsim run X --quiet`: packet and flow engine, a built-in and a .cm trace (pyarrow
    writes the files; rich is only imported to print)."""
    cm = tmp_path / "t.cm"
    cm.write_text(CM)
    runs = [
        ["run", str(cm), "--set", "nic.packet_spraying_type=reps", "--set", "topology.k=4"],
        [
            "run",
            "incast",
            "--engine",
            "packet",
            "--set",
            "topology.k=4",
            "--set",
            "workload.senders=3",
            "--set",
            "workload.size_bytes=20000",
        ],
        ["run", "ecmp-collision"],
    ]
    for i, argv in enumerate(runs):
        out = tmp_path / f"r{i}"
        code = f"from fabricsim.cli import main\nassert main({argv + ['--quiet', '--out', str(out)]!r}) == 0"
        loaded = _loaded(code)
        assert (out / "flows.parquet").is_file()
        assert loaded == {**dict.fromkeys(HEAVY, False), "pyarrow": True}, argv
