"""Bad kv_cache input through the command line: one line on stderr, exit code 2."""

from __future__ import annotations

import pytest

from fabricsim.cli import main


def _run(capsys, tmp_path, *sets: str) -> tuple[int, str]:
    argv = ["run", "ark", "--out", str(tmp_path / "out"), "--quiet"]
    for item in sets:
        argv += ["--set", item]
    code = main(argv)
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("sets", "needle"),
    [
        (("workload.qps=-1",), "workload.qps"),
        (("workload.qps=0",), "workload.qps"),
        (("workload.model=gpt-9",), "workload.model: unknown model"),
        (("workload.gpu=tpu9",), "workload.gpu: unknown GPU"),
        (("workload.prompt_min_tokens=60000",), "workload.prompt_max_tokens: must be >= "),
        (("workload.prompt=trace",), "workload.prompt_path"),
        (("workload.requests=0",), "workload.requests"),
    ],
)
def test_bad_config_is_one_line_exit_2(capsys, tmp_path, sets, needle):
    code, err = _run(capsys, tmp_path, *sets)
    assert code == 2
    assert needle in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("prompt_tokens\n1000\nabc\n", "line 3: 'abc' is not an integer"),
        ("a,b\n1,2\n", "missing column 'prompt_tokens'"),
        ("", "file is empty"),
        ("prompt_tokens\n-4\n", "prompt_tokens must be > 0"),
    ],
)
def test_malformed_prompt_trace(capsys, tmp_path, content, needle):
    trace = tmp_path / "prompts.csv"
    trace.write_text(content)
    code, err = _run(
        capsys,
        tmp_path,
        "workload.prompt=trace",
        f"workload.prompt_path={trace}",
        "workload.requests=5",
    )
    assert code == 2
    assert err.startswith("error: workload.prompt_path: ")
    assert needle in err and err.count("\n") == 1


def test_missing_gpu_profile(capsys, tmp_path):
    code, err = _run(capsys, tmp_path, f"workload.gpu_profile_path={tmp_path / 'nope.csv'}")
    assert code == 2 and "workload.gpu_profile_path" in err and err.count("\n") == 1


def test_bad_pool_through_cli(capsys, tmp_path):
    code, err = _run(capsys, tmp_path, "workload.decode_hosts=[3, 40]", "workload.requests=5")
    assert code == 2 and "workload.decode_hosts: host 40 is outside" in err
