"""Command line: argv -> config -> run.  No model logic lives here.

Exit codes: 0 success, 2 bad input (one line on stderr), 1 internal error.
"""

from __future__ import annotations

import ipaddress
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from fabricsim.errors import ConfigError

try:  # typer >= 0.20 vendors click
    from typer._click import exceptions as click_exc
except ImportError:  # pragma: no cover - older typer with external click
    from click import exceptions as click_exc  # type: ignore[no-redef]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="fabricsim: simulate AI data-center fabrics (ECMP, spraying, ARK, UET transport).",
)

SetOpt = Annotated[
    list[str] | None, typer.Option("--set", help="KEY=VALUE override (dotted key); repeatable")
]
EngineOpt = Annotated[str | None, typer.Option("--engine", help="flow or packet")]


def _out_path(text: str | None, option: str) -> Path | None:
    """An ``--out`` value as a path; ``''`` is refused (it would mean the current directory)."""
    if text is None:
        return None
    if not text.strip():
        raise ConfigError(f"{option}: empty path; give a directory name, e.g. {option} runs/x")
    return Path(text)


def _check_out_dir(path: Path, kind: str = "run") -> None:
    """Refuse an unusable output directory before anything runs (metrics/outdir.py)."""
    from fabricsim.metrics.outdir import check_out_dir

    check_out_dir(path, kind)


def _is_tty(quiet: bool) -> bool:
    return (not quiet) and sys.stdout.isatty()


def _scenario(name: str, sets: list[str] | None, seed: int | None) -> Any:
    from fabricsim.config.loader import load_scenario, parse_set_options

    sc = load_scenario(name)
    overrides = parse_set_options(sets or [])
    if seed is not None:
        overrides["seed"] = seed
    return sc.with_overrides(overrides) if overrides else sc


def _print_summary(summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{summary.get('scenario')} on the {summary.get('engine')} engine")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in summary.items():
        if isinstance(value, dict | list):
            continue
        table.add_row(key, f"{value:.6g}" if isinstance(value, float) else str(value))
    Console().print(table)


@app.command()
def run(
    scenario: Annotated[str | None, typer.Argument(help="YAML path or built-in name")] = None,
    engine: EngineOpt = None,
    set_: SetOpt = None,
    seed: Annotated[int | None, typer.Option("--seed", help="override the scenario seed")] = None,
    out: Annotated[str | None, typer.Option("--out", help="output directory")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="print nothing but errors")] = False,
) -> None:
    """Run a scenario (no SCENARIO: the default ARK KV-cache study, ECMP vs ARK)."""
    import fabricsim

    out_dir = _out_path(out, "--out")
    if scenario is None:
        from fabricsim.studies.ark import default_study

        if engine not in (None, "flow"):
            raise ConfigError(
                f"--engine {engine}: the default study (ark: ~4e8 packets) runs on the flow "
                "engine; name a scenario to use --engine packet"
            )
        _scenario("ark", set_, seed)  # bad --set / --seed fail here, before anything is written
        target = out_dir or Path("runs/ark-study")
        _check_out_dir(target, "study")
        default_study(out=target, sets=set_ or [], seed=seed, quiet=quiet)
        return
    sc = _scenario(scenario, set_, seed)
    target = out_dir or Path("runs") / f"{sc.name}-{engine or sc.engine.kind}"
    _check_out_dir(target)  # before the run: a bad --out fails in milliseconds
    if _is_tty(quiet):
        from rich.console import Console

        with Console().status(f"running {sc.name} on the {engine or sc.engine.kind} engine"):
            res = fabricsim.run(sc, engine=engine)
    else:
        res = fabricsim.run(sc, engine=engine)
    res.save(target)
    if not quiet:
        _print_summary(res.summary)
        typer.echo(f"wrote {target}/")


@app.command()
def scenarios() -> None:
    """List the built-in scenarios with one-line descriptions."""
    from fabricsim.config.loader import builtin_descriptions

    for name, desc in builtin_descriptions().items():
        typer.echo(f"{name:16s} {desc}")


@app.command("ecmp-math")
def ecmp_math(
    flows: Annotated[int, typer.Option("--flows", help="N flows")],
    uplinks: Annotated[int, typer.Option("--uplinks", help="M equal uplinks")],
    qp_scaling: Annotated[int, typer.Option("--qp-scaling", help="queue pairs per flow")] = 1,
    monte_carlo: Annotated[int, typer.Option("--monte-carlo", help="also simulate T trials")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """Exact ECMP collision statistics of N flows hashed onto M uplinks."""
    from fabricsim.analysis.ecmp_math import ecmp_collision_stats, monte_carlo_collision_stats

    try:
        stats = ecmp_collision_stats(flows, uplinks, qp_scaling)
        mc = (
            monte_carlo_collision_stats(flows, uplinks, qp_scaling, trials=monte_carlo)
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


@app.command()
def ports(
    paths: Annotated[int | None, typer.Option("--paths", help="one stage: K members")] = None,
    src_ip: Annotated[str, typer.Option("--src-ip")] = "10.0.0.1",
    dst_ip: Annotated[str, typer.Option("--dst-ip")] = "10.0.0.2",
    dst_port: Annotated[int, typer.Option("--dst-port")] = 4791,
    proto: Annotated[int, typer.Option("--proto")] = 17,
    hash_method: Annotated[
        str, typer.Option("--hash", help="switch.hash_method")
    ] = "crc32WithSalt",
    salt: Annotated[int, typer.Option("--salt", help="the switch's 32-bit salt")] = 0,
    tier: Annotated[int, typer.Option("--tier", help="switch tier (crc32Offset)")] = 1,
    scenario: Annotated[
        str | None, typer.Option("--scenario", help="whole path in a scenario")
    ] = None,
    src_host: Annotated[int | None, typer.Option("--src-host")] = None,
    dst_host: Annotated[int | None, typer.Option("--dst-host")] = None,
    set_: SetOpt = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Which UDP source ports land on which path (the inverse ECMP hash)."""
    from fabricsim.routing.inverse import path_ports, stage_ports

    if scenario is not None:
        if src_host is None or dst_host is None:
            raise ConfigError("--scenario needs --src-host and --dst-host")
        sc = _scenario(scenario, set_, None)
        result = path_ports(sc, src_host, dst_host)
    elif paths is not None:
        result = stage_ports(
            paths,
            _ip(src_ip, "--src-ip"),
            _ip(dst_ip, "--dst-ip"),
            dst_port,
            proto,
            hash_method,
            salt,
            tier,
        )
    else:
        raise ConfigError(
            "ports: give --paths K (one stage) or --scenario with --src-host/--dst-host"
        )
    if as_json:
        typer.echo(json.dumps(result, indent=1))
        return
    for label, info in result["paths"].items():
        typer.echo(f"{label:40s} {info['count']:6d} ports  first: {info['ports'][:8]}")
    if result.get("empty_paths"):
        typer.echo(f"paths no port reaches: {', '.join(result['empty_paths'])}")


@app.command("export-trace")
def export_trace(
    scenario: Annotated[str, typer.Argument(help="YAML path or built-in name")],
    fmt: Annotated[str, typer.Option("--format", help="htsim (.cm) or csv")] = "csv",
    out: Annotated[str, typer.Option("--out", help="file to write")] = "trace.csv",
    set_: SetOpt = None,
    seed: Annotated[int | None, typer.Option("--seed")] = None,
) -> None:
    """Write the scenario's traffic (messages) as CSV or an htsim connection matrix."""
    from fabricsim.workloads.trace import export_messages

    if fmt not in ("htsim", "csv"):
        raise ConfigError(f"--format: must be htsim or csv (got {fmt!r})")
    target = _out_file(out)
    sc = _scenario(scenario, set_, seed)
    count = export_messages(sc, fmt, target)
    typer.echo(f"wrote {count} messages to {out}")


def _out_file(text: str) -> Path:
    """An ``--out`` file that can be written (metrics/outdir.py)."""
    from fabricsim.metrics.outdir import check_out_file

    path = _out_path(text, "--out")
    assert path is not None
    return check_out_file(path)


def _register_optional() -> None:
    """Commands whose modules arrive with later capabilities."""
    import importlib

    for module in ("fabricsim.cli_extra", "fabricsim.cli_compare"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise


_register_optional()


def _interrupted() -> None:
    """Ctrl-C: one line, and no second traceback if another Ctrl-C arrives while printing."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        sys.stderr.write("\ninterrupted\n" if sys.stderr.isatty() else "interrupted\n")
        sys.stderr.flush()
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    """Console entry point with the exit-code contract."""
    command = typer.main.get_command(app)
    try:
        code = command.main(args=argv, prog_name="fabricsim", standalone_mode=False)
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        return 2
    except (KeyboardInterrupt, typer.Abort):
        _interrupted()
        return 130
    except click_exc.UsageError as exc:
        typer.echo(f"error: {exc.format_message()}", err=True)
        return 2
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except click_exc.ClickException as exc:
        typer.echo(f"error: {exc.format_message()}", err=True)
        return 2
    except Exception as exc:  # noqa: BLE001 - the contract: one line, exit 1
        typer.echo(f"internal error: {type(exc).__name__}: {exc}", err=True)
        if "--debug" in (argv or sys.argv):
            raise
        return 1
    if code == 130:  # typer turns Ctrl-C into Exit(130) and returns it here
        _interrupted()
    return code if isinstance(code, int) else 0  # click returns ctx.exit()'s code here


if __name__ == "__main__":  # run as a script: use the imported module (its commands are registered)
    from fabricsim.cli import main as _main

    sys.exit(_main())
