"""Inspection verbs: ``scenarios``, ``ecmp-math``, ``ports`` and ``export-trace``."""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from fabricsim._compat import LazyModule
from fabricsim.cli.app import ScenarioArg, SetOpt, app
from fabricsim.cli.common import out_path, scenario_from_options
from fabricsim.config.loader import builtin_descriptions
from fabricsim.config.presets import registered_presets
from fabricsim.errors import ConfigError
from fabricsim.experiments.budget import check_budget
from fabricsim.metrics.outdir import check_out_file
from fabricsim.metrics.results import atomic_write
from fabricsim.routing.inverse import check_dst_qp, path_ports, stage_ports
from fabricsim.workloads.trace import messages_text

if TYPE_CHECKING:
    from fabricsim.analysis import ecmp_math as ecmp
else:  # perf: imported when the verb runs, not at every start of `fabricsim`
    ecmp = LazyModule("fabricsim.analysis.ecmp_math")


@app.command()
def scenarios() -> None:
    """List the built-in scenarios and the presets with one-line descriptions."""
    for name, desc in builtin_descriptions().items():
        typer.echo(f"{name:16s} {desc}")
    for name, preset in registered_presets().items():
        typer.echo(f"{name:16s} preset: {preset.help}")


@app.command("ecmp-math")
def ecmp_math(
    flows: Annotated[int, typer.Option("--flows", help="N flows")],
    uplinks: Annotated[int, typer.Option("--uplinks", help="M equal uplinks")],
    qp_scaling: Annotated[int, typer.Option("--qp-scaling", help="queue pairs per flow")] = 1,
    monte_carlo: Annotated[int, typer.Option("--monte-carlo", help="also simulate T trials")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """Exact ECMP collision statistics of N flows hashed onto M uplinks."""
    try:
        stats = ecmp.ecmp_collision_stats(flows, uplinks, qp_scaling)
        mc = (
            ecmp.monte_carlo_collision_stats(flows, uplinks, qp_scaling, trials=monte_carlo)
            if monte_carlo
            else None
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    data = stats.to_dict()
    if mc is not None:
        data["monte_carlo"] = mc.to_dict() | {"trials": monte_carlo}
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    typer.echo(f"{flows} flows x {qp_scaling} QP on {uplinks} uplinks ({stats.method})")
    for key in (
        "p_no_collision",
        "expected_idle_uplinks",
        "expected_max_load",
        "efficiency",
        "slowdown",
    ):
        typer.echo(f"  {key:22s} {data[key]:.6g}")
    typer.echo("  max load distribution:")
    for load, p in data["max_load_distribution"].items():
        typer.echo(f"    {load:>4s}  {p:.6g}")


def _ip(text: str, field: str) -> int:
    try:
        return int(ipaddress.IPv4Address(text))
    except ValueError:
        raise ConfigError(f"{field}: not an IPv4 address: {text!r}") from None


#: ``ports`` options of one ECMP stage (--paths mode) and of a whole path (--scenario mode)
STAGE_OPTIONS = ("--paths", "--src-ip", "--dst-ip", "--dst-port", "--proto", "--hash", "--salt",
                 "--tier")  # fmt: skip
PATH_OPTIONS = ("--scenario", "--src-host", "--dst-host", "--dst-qp", "--set")


def _needs(options: list[str]) -> str:
    return f"{', '.join(options)} {'needs' if len(options) == 1 else 'need'}"


def _one_mode(stage: Mapping[str, object], path: Mapping[str, object]) -> str:
    """``stage`` or ``path``: the mode the given options describe; a mix is refused."""
    in_stage = [k for k, v in stage.items() if v is not None]
    in_path = [k for k, v in path.items() if v not in (None, [])]
    if in_stage and in_path:
        raise ConfigError(
            f"ports: {', '.join(in_stage)} (one ECMP stage) and {', '.join(in_path)} (a whole "
            "path in a scenario) are two modes; give the options of one (a scenario's switches "
            "set the hash, salt and tier, its hosts the addresses)"
        )
    if path["--scenario"] is not None:
        if path["--src-host"] is None or path["--dst-host"] is None:
            raise ConfigError("--scenario needs --src-host and --dst-host")
        return "path"
    if stage["--paths"] is not None:
        return "stage"
    if in_path:
        raise ConfigError(f"ports: {_needs(in_path)} --scenario (a whole path)")
    if in_stage:
        raise ConfigError(f"ports: {_needs(in_stage)} --paths K (one ECMP stage of K members)")
    raise ConfigError("ports: give --paths K (one stage) or --scenario with --src-host/--dst-host")


@app.command()
def ports(
    paths: Annotated[int | None, typer.Option("--paths", help="one stage: K members")] = None,
    src_ip: Annotated[str | None, typer.Option("--src-ip", help="default 10.0.0.1")] = None,
    dst_ip: Annotated[str | None, typer.Option("--dst-ip", help="default 10.0.0.2")] = None,
    dst_port: Annotated[int | None, typer.Option("--dst-port", help="default 4791")] = None,
    proto: Annotated[int | None, typer.Option("--proto", help="default 17 (UDP)")] = None,
    hash_method: Annotated[
        str | None, typer.Option("--hash", help="switch.hash_method (default crc32WithSalt)")
    ] = None,
    salt: Annotated[
        int | None, typer.Option("--salt", help="the switch's 32-bit salt (default 0)")
    ] = None,
    tier: Annotated[
        int | None, typer.Option("--tier", help="switch tier (crc32Offset; default 1)")
    ] = None,
    scenario: Annotated[
        str | None, typer.Option("--scenario", help="whole path in a scenario")
    ] = None,
    src_host: Annotated[int | None, typer.Option("--src-host")] = None,
    dst_host: Annotated[int | None, typer.Option("--dst-host")] = None,
    dst_qp: Annotated[
        int | None,
        typer.Option(
            "--dst-qp",
            help="the destination QP (matters if switch.hash_fields has dst_qp; default 0)",
        ),
    ] = None,
    set_: SetOpt = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Which UDP source ports land on which path (the inverse ECMP hash).

    Two modes: ``--paths K`` with the 5-tuple options (one stage), or ``--scenario`` with
    ``--src-host``/``--dst-host`` (a whole path, hashed as the scenario's switches do).
    """
    if dst_qp is not None:  # checked before any fabric is built
        check_dst_qp(dst_qp)
    stage = {"--paths": paths, "--src-ip": src_ip, "--dst-ip": dst_ip, "--dst-port": dst_port,
             "--proto": proto, "--hash": hash_method, "--salt": salt, "--tier": tier}  # fmt: skip
    path = {"--scenario": scenario, "--src-host": src_host, "--dst-host": dst_host,
            "--dst-qp": dst_qp, "--set": set_}  # fmt: skip
    if _one_mode(stage, path) == "path":
        assert scenario is not None and src_host is not None and dst_host is not None
        sc = scenario_from_options(scenario, set_, None)
        check_budget(sc, sc.engine.kind)  # the whole fabric is built: refuse bombs first
        result = path_ports(sc, src_host, dst_host, 0 if dst_qp is None else dst_qp)
    else:
        assert paths is not None
        result = stage_ports(
            paths,
            _ip("10.0.0.1" if src_ip is None else src_ip, "--src-ip"),
            _ip("10.0.0.2" if dst_ip is None else dst_ip, "--dst-ip"),
            4791 if dst_port is None else dst_port,
            17 if proto is None else proto,
            "crc32WithSalt" if hash_method is None else hash_method,
            0 if salt is None else salt,
            1 if tier is None else tier,
        )
    if as_json:
        typer.echo(json.dumps(result, indent=1))
        return
    for label, info in result["paths"].items():
        typer.echo(f"{label:40s} {info['count']:6d} ports  first: {info['ports'][:8]}")
    if result.get("empty_paths"):
        typer.echo(f"paths no port reaches: {', '.join(result['empty_paths'])}")


def _out_file(text: str) -> Path:
    """An ``--out`` file that can be written (metrics/outdir.py)."""
    path = out_path(text, "--out", "file")
    assert path is not None
    return check_out_file(path)


@app.command("export-trace")
def export_trace(
    scenario: ScenarioArg,
    fmt: Annotated[str, typer.Option("--format", help="htsim (.cm) or csv")] = "csv",
    out: Annotated[str, typer.Option("--out", help="file to write")] = "trace.csv",
    set_: SetOpt = None,
    seed: Annotated[int | None, typer.Option("--seed")] = None,
) -> None:
    """Write the scenario's traffic (messages) as CSV or an htsim connection matrix."""
    if fmt not in ("htsim", "csv"):
        raise ConfigError(f"--format: must be htsim or csv (got {fmt!r})")
    target = _out_file(out)
    sc = scenario_from_options(scenario, set_, seed)
    check_budget(sc, sc.engine.kind)  # the fabric and the workload are built: refuse bombs
    text, count, notes = messages_text(sc, fmt, target.name)
    if os.path.realpath(target) != os.devnull:  # /dev/null: asked to discard; never replace it
        atomic_write(target, text)  # replaces the file (never writes through a link)
    typer.echo(f"wrote {count} messages to {out}")
    for note in notes:
        typer.echo(note, err=True)
