"""Bad traffic files (traces, .cm matrices, prompt/GPU-profile CSVs, MoE matrices): one line,
exit 2, nothing written, quickly.

Each case writes its input files into a fresh directory, takes a snapshot, runs ``fabricsim
run`` in a forked, resource-limited child (harness.py) and checks the bad-input contract.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from harness import assert_refused, run_cli, snapshot

from fabricsim.units import MAX_MESSAGE_BYTES

NOT_UTF8 = b"\xff\xfe\x00garbage"
HEADER = "src,dst,size_bytes,start_s\n"
CM_HEAD = "Nodes 16\nConnections 1\n"


def _scenario(t: Path, workload: str) -> list[str]:
    """Write a scenario with this workload (flow style YAML); the argv that runs it."""
    (t / "s.yaml").write_text(f"workload: {workload}\n")
    return ["run", "s.yaml", "--out", str(t / "out")]


def _run(t: Path, workload: str, name: str, data: str | bytes) -> list[str]:
    """Write ``data`` to the file ``name`` and a scenario using it; the argv that runs it."""
    path = t / name
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)
    return _scenario(t, workload)


def trace(name: str, data: str | bytes):
    return lambda t: _run(t, f"{{kind: trace, path: {name}}}", name, data)


def csv(rows: str):
    return trace("t.csv", HEADER + rows)


def cm(lines: str, head: str = CM_HEAD):
    return trace("t.cm", head + lines)


def cm_direct(text: str):
    """``fabricsim run t.cm``: the htsim-uec preset sizes its fabric from the header."""

    def build(t: Path) -> list[str]:
        (t / "t.cm").write_text(text)
        return ["run", "t.cm", "--out", str(t / "out")]

    return build


BODY = "Connections 1\n0->1 start 0 size 100\n"


def parquet(**columns):
    def build(t: Path) -> list[str]:
        frame = {"src": [0, 1], "dst": [9, 10], "size_bytes": [10, 20], "start_s": [0.0, 0.0]}
        pd.DataFrame({**frame, **columns}).to_parquet(t / "t.parquet")
        return _scenario(t, "{kind: trace, path: t.parquet}")

    return build


def directory(t: Path) -> list[str]:
    (t / "d.csv").mkdir()
    return _scenario(t, "{kind: trace, path: d.csv}")


def kv(key: str, name: str, data: str | bytes, prompt: str = ""):
    return lambda t: _run(t, f"{{kind: kv_cache, requests: 4, {prompt}{key}: {name}}}", name, data)


def moe(data: str | bytes):
    return lambda t: _run(t, "{kind: moe, matrix: file, path: m.csv}", "m.csv", data)


def _matrix(value: str) -> str:
    rows = [["0"] * 16 for _ in range(16)]
    rows[0][9] = value
    return "\n".join(",".join(r) for r in rows) + "\n"


PROMPT = "prompt: trace, "
GPU_HEADER = "prompt_tokens,prefill_s,decode_s\n"
BIG = MAX_MESSAGE_BYTES

CASES: dict[str, tuple] = {
    # --- CSV traces: encoding and shape
    "trace csv not utf-8": (trace("t.csv", NOT_UTF8), "UTF-8"),
    "trace csv empty": (trace("t.csv", ""), "empty"),
    "trace csv header only": (csv(""), "no messages"),
    "trace csv missing column": (trace("t.csv", "src,dst,size_bytes\n0,9,10\n"), "start_s"),
    "trace csv extra field": (csv("0,9,10,0,7\n"), "line 2"),
    "trace csv missing file": (lambda t: _scenario(t, "{kind: trace, path: no.csv}"), "no.csv"),
    "trace path is a directory": (directory, "regular file"),
    # --- CSV traces: sizes (issue item 4: two rows of 5e18 bytes wrapped int64)
    "two rows of 5e18 bytes": (
        csv("0,9,5000000000000000000,0\n1,10,5000000000000000000,0\n"),
        "size_bytes",
    ),
    "size above 2**50": (csv(f"0,9,{BIG + 1},0\n"), "2**50"),
    "size 1.5": (csv("0,9,1.5,0\n"), "not a whole number"),
    "size 0": (csv("0,9,0,0\n"), "less than 1 byte"),
    "size negative": (csv("0,9,-10,0\n"), "less than 1 byte"),
    "size nan": (csv("0,9,nan,0\n"), "not a number"),
    "size inf": (csv("0,9,inf,0\n"), "not finite"),
    "size empty cell": (csv("0,9,,0\n"), "empty"),
    "size text": (csv("0,9,lots,0\n"), "'lots' is not a number"),
    "total above 2**62": (csv(f"0,9,{BIG},0\n" * 4097), "in total"),
    # --- CSV traces: start times
    "start nan": (csv("0,9,10,NaN\n"), "not a number"),
    "start inf": (csv("0,9,10,inf\n"), "not finite"),
    "start -inf": (csv("0,9,10,-inf\n"), "not finite"),
    "start negative": (csv("0,9,10,-1\n"), "negative"),
    "start 1e7 s": (csv("0,9,10,1e7\n"), "start_s 1e7 is later than"),
    # --- CSV traces: hosts and ids
    "host outside the fabric": (csv("0,99,10,0\n"), "line 2: dst 99 is outside the fabric"),
    "host name outside": (csv("host0,host16,10,0\n"), "host16 is outside the fabric"),
    "host not a name": (csv("gpu0,1,10,0\n"), "'gpu0' is not a host"),
    "host negative": (csv("-1,1,10,0\n"), "src -1 is not a host"),
    "host 1e30": (csv("1e30,1,10,0\n"), "src 1e30 is not a host"),
    "host fractional": (csv("1.5,2,10,0\n"), "src 1.5 is not a host"),
    "send to self": (csv("3,3,10,0\n"), "same host"),
    "duplicate id": (trace("t.csv", HEADER[:-1] + ",id\n0,9,10,0,1\n1,9,10,0,1\n"), "used twice"),
    "blank line keeps line numbers": (csv("0,9,10,0\n\n0,9,x,0\n"), "line 4"),
    # --- Parquet traces
    "parquet corrupt": (trace("t.parquet", bytes(range(256)) * 4), "not a readable Parquet"),
    "parquet not utf-8 bytes": (trace("t.parquet", NOT_UTF8), "t.parquet"),
    "parquet start is a date": (parquet(start_s=pd.to_datetime(["2024-01-01"] * 2)), "start_s"),
    "parquet size is text": (parquet(size_bytes=["10", "abc"]), "row 2: size_bytes"),
    "parquet size is bool": (parquet(size_bytes=[True, False]), "true/false"),
    "parquet size nan": (parquet(size_bytes=[10.0, float("nan")]), "not a number"),
    "parquet size uint64 max": (
        parquet(size_bytes=np.array([2**64 - 1, 5], dtype=np.uint64)),
        "size_bytes",
    ),
    # --- htsim .cm matrices
    "cm not utf-8": (trace("t.cm", NOT_UTF8), "UTF-8"),
    "cm trailing junk": (cm("0->1 start 0 size 100 junk\n"), "junk"),
    "cm trailing junk pair": (cm("0->1 start 0 size 100 junk 5\n"), "unknown word 'junk'"),
    "cm Connections abc": (cm("0->1 size 100\n", "Nodes 16\nConnections abc\n"), "Connections"),
    "cm bare Connections": (cm("0->1 size 100\n", "Nodes 16\nConnections\n"), "Connections"),
    "cm Nodes abc": (cm("0->1 size 100\n", "Nodes abc\nConnections 1\n"), "Nodes"),
    "cm start 1.2.3": (cm("0->1 start 1.2.3 size 100\n"), "'1.2.3' is not a number"),
    "cm start nan": (cm("0->1 start nan size 100\n"), "not a number"),
    "cm start inf": (cm("0->1 start inf size 100\n"), "not finite"),
    "cm start negative": (cm("0->1 start -5 size 100\n"), "negative"),
    "cm start 1e300 us": (cm("0->1 start 1e300 size 100\n"), "later than"),
    "cm size 1e5": (cm("0->1 start 0 size 1e5\n"), "whole number"),
    "cm size text": (cm("0->1 start 0 size big\n"), "whole number"),
    "cm size negative": (cm("0->1 start 0 size -100\n"), "less than 1 byte"),
    "cm size 0": (cm("0->1 start 0 size 0\n"), "less than 1 byte"),
    "cm size 1e23 digits": (cm("0->1 start 0 size 99999999999999999999999\n"), "2**50"),
    "cm no size": (cm("0->1 start 0\n"), "no size"),
    "cm key twice": (cm("0->1 size 5 size 6\n"), "twice"),
    "cm prio": (cm("0->1 size 5 prio 3\n"), "prio"),
    "cm trigger": (cm("0->1 id 1 size 5 trigger 3\n"), "trigger"),
    "cm Triggers 2": (cm("0->1 size 5\n", "Nodes 16\nTriggers 2\nConnections 1\n"), "trigger"),
    "cm count mismatch": (cm("0->1 size 5\n1->2 size 5\n"), "declares 1"),
    "cm node outside Nodes": (cm("0->9 size 5\n", "Nodes 4\nConnections 1\n"), "Nodes 4"),
    "cm host outside fabric": (cm("0->99 size 5\n", "Connections 1\n"), "outside the fabric"),
    "cm unparsable line": (cm("zero to one\n"), "cannot parse"),
    # --- .cm headers, strictly (issue 37 item 2): they size the htsim-uec preset's fabric
    "cm Nodes 10 digits": (cm_direct("Nodes 1000000000\n" + BODY), "'Nodes 1000000000' must be"),
    "cm Nodes 20 digits": (cm_direct("Nodes 99999999999999999999\n" + BODY), "2..524288"),
    "cm comment with -> then huge Nodes": (
        cm_direct("# 0->1 an example\nNodes 1000000000\n" + BODY),
        "line 2: 'Nodes 1000000000'",
    ),
    "cm Nodes 0 preset": (cm_direct("Nodes 0\n" + BODY), "'Nodes 0' must be 2..524288"),
    "cm Nodes 1 preset": (cm_direct("Nodes 1\n" + BODY), "'Nodes 1' must be"),
    "cm Nodes with a comment": (cm_direct("Nodes 16 # hosts\n" + BODY), "got '16 # hosts'"),
    "cm Nodes negative": (cm_direct("Nodes -16\n" + BODY), "got '-16'"),
    "cm Nodes bare": (cm_direct("Nodes\n" + BODY), "got nothing"),
    "cm Nodes 16.0": (cm_direct("Nodes 16.0\n" + BODY), "got '16.0'"),
    "cm Nodes 20 not a fat tree": (cm_direct("Nodes 20\n" + BODY), "k^3/4 hosts"),
    "cm Nodes 0 in a scenario": (cm("0->1 size 5\n", "Nodes 0\nConnections 1\n"), "'Nodes 0'"),
    "cm Nodes above the fabric": (
        cm("0->1 size 5\n", "Nodes 32\nConnections 1\n"),
        "'Nodes 32' is more than the fabric's 16 hosts",
    ),
    "cm Nodes 600000 in a scenario": (
        cm("0->1 size 5\n", "Nodes 600000\nConnections 1\n"),
        "must be 2..524288",
    ),
    # --- kv_cache prompt traces and GPU profiles
    "prompt csv not utf-8": (kv("prompt_path", "p.csv", NOT_UTF8, PROMPT), "UTF-8"),
    "prompt tokens too many": (
        kv("prompt_path", "p.csv", "prompt_tokens\n99999999999999999999\n", PROMPT),
        "prompt_tokens",
    ),
    "prompt tokens nan": (
        kv("prompt_path", "p.csv", "prompt_tokens\nnan\n", PROMPT),
        "not a number",
    ),
    "gpu profile not utf-8": (kv("gpu_profile_path", "g.csv", NOT_UTF8), "gpu_profile_path"),
    "gpu profile nan": (
        kv("gpu_profile_path", "g.csv", GPU_HEADER + "100,nan,0.01\n"),
        "not a number",
    ),
    "gpu profile inf": (
        kv("gpu_profile_path", "g.csv", GPU_HEADER + "100,0.1,inf\n"),
        "not finite",
    ),
    "gpu profile 1e7 s": (kv("gpu_profile_path", "g.csv", GPU_HEADER + "100,1e7,0.01\n"), "1e+06"),
    # --- MoE matrix files
    "moe matrix not utf-8": (moe(NOT_UTF8), "UTF-8"),
    "moe matrix nan": (moe(_matrix("nan")), "not a number"),
    "moe matrix inf": (moe(_matrix("inf")), "not finite"),
    "moe matrix 1e30": (moe(_matrix("1e30")), "2**50"),
    "moe matrix text": (moe(_matrix("x")), "line 1, column 10"),
    "moe matrix ragged": (moe("0,1\n1\n"), "line 2"),
    # --- any workload: the total of a run (kv_cache: 4097 flows of ~2**50 bytes)
    "kv_cache total above 2**62": (
        lambda t: _scenario(
            t,
            "{kind: kv_cache, prompt: fixed, prompt_tokens: 1000000000, "
            "kv_bytes_per_token: 1125899, requests: 4097}",
        ),
        "in total",
    ),
    "kv_cache flow above 2**50": (
        lambda t: _scenario(
            t,
            "{kind: kv_cache, prompt: fixed, prompt_tokens: 1000000000, "
            "kv_bytes_per_token: 1125900, requests: 4}",
        ),
        "2**50",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_traffic_file_is_refused(tmp_path, case):
    build, needle = CASES[case]
    argv = build(tmp_path)
    before = snapshot(tmp_path)
    outcome = run_cli(argv, tmp_path, wall_s=30)
    assert_refused(outcome, before, snapshot(tmp_path), needle=needle, wall_s=30)


def test_valid_trace_still_runs(tmp_path):
    argv = csv("0,9,1000,0\n1,10,2000.0,1e-6\nhost2,host11,3000,2e-6\n")(tmp_path)
    outcome = run_cli(argv, tmp_path, wall_s=30)
    assert outcome.code == 0, outcome.stderr
    assert "Traceback" not in outcome.stderr
    summary = (tmp_path / "out" / "summary.json").read_text()
    assert '"bytes_total": 6000' in summary


def test_valid_cm_still_runs(tmp_path):
    argv = cm(
        "0->9 id 1 start 0 size 1000\n3->12 id 2 start 1.5 size 2000\n", "Nodes 16\nConnections 2\n"
    )(tmp_path)
    outcome = run_cli(argv, tmp_path, wall_s=30)
    assert outcome.code == 0, outcome.stderr
    assert '"bytes_total": 3000' in (tmp_path / "out" / "summary.json").read_text()


def test_cm_comment_with_arrow_does_not_hide_the_header(tmp_path):
    argv = cm_direct("# 0->1 start 0 size 100\nNodes 16\n" + BODY)(tmp_path)
    outcome = run_cli(argv, tmp_path, wall_s=60)
    assert outcome.code == 0, outcome.stderr
    config = (tmp_path / "out" / "config.yaml").read_text()
    assert "\n  k: 4\n" in config  # 16 hosts: k=4, not the default 128-host k=8
