"""The ``keys`` verb: every scenario key with its type, default, allowed values, unit and help."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from fabricsim._compat import LazyModule
from fabricsim.cli.app import app
from fabricsim.errors import ConfigError

if TYPE_CHECKING:
    from fabricsim.config import keys as config_keys
    from fabricsim.experiments import engines
else:  # perf: imported when the verb runs, not at every start of `fabricsim`
    config_keys = LazyModule("fabricsim.config.keys")
    engines = LazyModule("fabricsim.experiments.engines")


@app.command()
def keys(
    prefix: Annotated[
        str, typer.Argument(help="only keys under this one, e.g. nic.nscc or topology")
    ] = "",
    as_json: Annotated[bool, typer.Option("--json", help="print the keys as a JSON list")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="print docs/keys.md (every key, as tables)")
    ] = False,
) -> None:
    """List the scenario keys (YAML and --set) with type, default, allowed values, unit and help."""
    if markdown:
        if prefix or as_json:
            raise ConfigError("--markdown: prints every key; give no PREFIX and no --json")
        typer.echo(config_keys.keys_markdown(engines.key_engines), nl=False)
        return
    infos = config_keys.key_infos(prefix)
    if not infos:
        hint = config_keys.close_keys(prefix.strip().rstrip(".")) if prefix.strip(". ") else []
        raise ConfigError(
            f"{prefix}: no such key or section"
            + (f"; did you mean {hint[0]}?" if hint else " (fabricsim keys lists them all)")
        )
    if as_json:
        typer.echo(json.dumps([k.as_dict() for k in infos], indent=1, ensure_ascii=False))
    else:
        typer.echo(config_keys.keys_text(infos), nl=False)
