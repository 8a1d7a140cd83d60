"""Start-up and exit: heavy libraries are imported where they are used, not when fabricsim
starts; after a single run the program exits without tearing the interpreter down."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

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


@pytest.mark.full
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


# atexit callbacks run in teardown only; a daemon thread makes program() exit as usual
PROGRAM = """
import atexit, sys, threading
atexit.register(lambda: print("teardown", flush=True))
if sys.argv[1] == "thread":
    threading.Thread(target=threading.Event().wait, daemon=True).start()
from fabricsim.cli import program
sys.argv = ["fabricsim", *sys.argv[2:]]
sys.exit(program())
"""


def _program(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", PROGRAM, *argv], capture_output=True, text=True, check=False
    )


def test_the_program_skips_teardown_after_a_single_run(tmp_path):
    cm = tmp_path / "t.cm"
    cm.write_text(CM)
    run = ["run", str(cm), "--set", "topology.k=4", "--out"]
    done = _program("-", *run, str(tmp_path / "a"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("(summary.json has every figure)")  # flushed
    assert "teardown" not in done.stdout
    assert (tmp_path / "a" / "flows.parquet").is_file()
    quiet = _program("-", *run, str(tmp_path / "b"), "--json")
    assert quiet.returncode == 0 and json.loads(quiet.stdout)["flows_total"] == 3
    assert (tmp_path / "b" / "summary.json").is_file()


@pytest.mark.full
def test_the_program_exits_as_usual_otherwise(tmp_path):
    cm = tmp_path / "t.cm"
    cm.write_text(CM)
    with_thread = _program(
        "thread", "run", str(cm), "--set", "topology.k=4", "--quiet", "--out", str(tmp_path / "a")
    )
    assert (with_thread.returncode, with_thread.stdout) == (0, "teardown\n")
    bad = _program("-", "run", str(cm), "--set", "topology.k=five", "--out", str(tmp_path / "b"))
    assert bad.returncode == 2 and bad.stdout == "teardown\n"
    other = _program("-", "scenarios")
    assert other.returncode == 0 and other.stdout.endswith("teardown\n")


@pytest.mark.full
def test_a_single_run_of_the_program_goes_without_the_collector_and_main_keeps_it(tmp_path):
    cm = tmp_path / "t.cm"
    cm.write_text(CM)
    run = ["run", str(cm), "--set", "topology.k=4", "--quiet", "--out"]
    # a daemon thread keeps the program from its fast exit, so the atexit hook reports
    on_exit = PROGRAM.replace('print("teardown", flush=True)', "print(gc.isenabled(), flush=True)")
    on_exit = on_exit.replace("import atexit,", "import atexit, gc,")
    program_run = subprocess.run(
        [sys.executable, "-c", on_exit, "thread", *run, str(tmp_path / "a")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (program_run.returncode, program_run.stdout) == (0, "False\n"), program_run.stderr
    in_process = (
        "import gc\nfrom fabricsim.cli import main\n"
        f"assert main({[*run, str(tmp_path / 'b')]!r}) == 0\nprint(gc.isenabled())"
    )
    done = subprocess.run(
        [sys.executable, "-c", in_process], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout) == (0, "True\n"), done.stderr


CLI_LIBRARIES = ("typer", "click", "rich", "pyarrow.parquet", "pyarrow")
OTHER_KINDS = tuple(
    f"fabricsim.workloads.{m}"
    for m in ("chakra_replay", "collective", "kv_cache", "moe", "chakra", "patterns")
)


def _modules_after(code: str, names: tuple[str, ...]) -> dict[str, bool]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {names}}}))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_a_run_from_python_imports_neither_the_command_line_nor_the_parquet_writer(tmp_path):
    """``fabricsim.run``: typer, click and rich are the command line's, pyarrow (and its
    Parquet writer) the saved files'; ``Result.save`` imports pyarrow, still not typer."""
    cm = tmp_path / "t.cm"
    cm.write_text(CM)
    run = f"import fabricsim\nres = fabricsim.run({str(cm)!r}, 'packet')\n"
    assert _modules_after(run, CLI_LIBRARIES) == dict.fromkeys(CLI_LIBRARIES, False)
    saved = _modules_after(f"{run}res.save({str(tmp_path / 'out')!r})", CLI_LIBRARIES)
    assert saved == {
        **dict.fromkeys(CLI_LIBRARIES, False),
        "pyarrow.parquet": True,
        "pyarrow": True,
    }


def test_a_run_imports_the_generator_of_its_own_workload_kind_only(tmp_path):
    """A trace run imports ``workloads.trace``, none of the other kinds' modules; looking a
    kind up imports its module (the registry lists every kind, in its declared order)."""
    cm = tmp_path / "t.cm"
    cm.write_text(CM)
    names = (*OTHER_KINDS, "fabricsim.workloads.trace")
    run = f"import fabricsim\nfabricsim.run({str(cm)!r}, 'flow')\n"
    assert _modules_after(run, names) == {**dict.fromkeys(OTHER_KINDS, False), names[-1]: True}
    listed = _modules_after(
        "from fabricsim.workloads import registered_workloads\n"
        "assert registered_workloads() == ('chakra', 'collective', 'kv_cache', 'moe', 'permutation', "
        "'incast', 'leaf_to_leaf', 'trace'), registered_workloads()",
        names,
    )
    assert listed == dict.fromkeys(names, True)
