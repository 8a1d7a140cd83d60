"""A single run's output for people: the fabric and workload lines, units per magnitude; --json."""

import io
import json
import re

import numpy as np
import pandas as pd
import pytest

import fabricsim
from fabricsim.cli import main
from fabricsim.metrics import results


def _run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_single_run_prints_fabric_workload_and_scaled_units(capsys, tmp_path):
    code, out, err = _run(capsys, "run", "ecmp-collision", "--out", str(tmp_path / "r"))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "ecmp-collision · flow engine · seed 1"
    assert lines[1].startswith("fabric:   leaf-spine, 16 hosts: 2 leaves × 8 hosts, 8 spines")
    assert lines[2].startswith("workload: leaf 0 → leaf 1")
    assert re.search(r"FCT\s+mean \d+(\.\d+)? µs · P50", out), out
    assert "8 of 8 = 100 %" in out and "(conserved)" in out
    assert not re.search(r"\de[-+]\d", out), "no e-notation in the table"
    assert len(lines) < 20


@pytest.mark.full
def test_packet_run_shows_shares_of_packets(capsys, tmp_path):
    code, out, _ = _run(capsys, "run", "moe", "--out", str(tmp_path / "m"))
    assert code == 0
    assert re.search(r"packets trimmed\s+[\d,]+ of [\d,]+ = \d+ %", out), out
    assert re.search(r"CCT\s+\d+(\.\d+)? µs \(lower bound", out), out


def test_run_json_is_the_summary(capsys, tmp_path):
    target = tmp_path / "r"
    code, out, _ = _run(capsys, "run", "ecmp-collision", "--out", str(target), "--json")
    assert code == 0
    assert json.loads(out) == json.loads((target / "summary.json").read_text())


def _columns(rng, n: int) -> dict:
    """Columns of every kind a run's flow table holds (and a few more)."""
    fct = rng.normal(size=n)
    fct[rng.random(n) < 0.2] = np.nan  # unfinished flows: null in the file
    path = np.empty(n, dtype=object)
    path[:] = [f"leaf{i}->spine{j}" for i, j in rng.integers(0, 9, (n, 2))]
    return {
        "flow_id": np.arange(n, dtype=np.int64),
        "src": np.array([f"host{i}" for i in rng.integers(0, 99, n)]),
        "fct_s": fct,
        "path": list(path),
        "path_obj": path,
        "entropy": rng.integers(0, 2**31, n).astype(np.int32),
        "port": rng.integers(0, 2**16, n).astype(np.uint16),
        "share": rng.random(n).astype(np.float32),
        "done": rng.random(n) < 0.5,
        "name": ["ü" * int(k) for k in rng.integers(1, 4, n)],  # not ASCII
    }


@pytest.mark.parametrize("n", [1, 3, 1000, 70_000])
def test_columns_are_written_as_pandas_writes_them(n):
    """columns_parquet_bytes (no pandas) == parquet_bytes(pd.DataFrame(columns)), byte for byte."""
    cols = _columns(np.random.default_rng(n), n)
    assert results._arrow_table(cols) is not None, "written without pandas"
    assert results.columns_parquet_bytes(cols) == results.parquet_bytes(pd.DataFrame(cols))


@pytest.mark.parametrize(
    "cols",
    [
        {"mixed": ["a", 1]},
        {"maybe": ["a", None]},
        {"empty": []},
        {"when": np.array(["2024-01-01"], dtype="datetime64[ns]")},
        {"a": np.arange(2), "b": np.arange(3)},
    ],
)
def test_other_columns_are_written_by_pandas(cols):
    assert results._arrow_table(cols) is None
    try:
        expected = results.parquet_bytes(pd.DataFrame(cols))
    except Exception as exc:  # pandas or pyarrow refuses them: so does columns_parquet_bytes
        with pytest.raises(type(exc)):
            results.columns_parquet_bytes(cols)
    else:
        assert results.columns_parquet_bytes(cols) == expected


def test_result_flows_are_a_dataframe_made_on_first_read(tmp_path):
    res = fabricsim.run("ecmp-collision")
    assert isinstance(res._flows, dict)  # columns until read
    before = res.to_files()["flows.parquet"]
    flows = res.flows
    assert isinstance(flows, pd.DataFrame) and res.flows is flows
    assert list(flows.columns[:3]) == ["flow_id", "src", "dst"]
    assert res.to_files()["flows.parquet"] == before  # the same bytes from the DataFrame
    flows["extra"] = 1.0
    assert pd.read_parquet(io.BytesIO(res.to_files()["flows.parquet"]))["extra"].eq(1.0).all()
