"""The one planner of the experiments: every run as a :class:`RunSpec`.

A plan is a list of run specs (scenario dict, engine, seed, tag, the varied parameters), each
validated (and checked against its engine) before anything runs:

* :func:`plan_sweep`: ``--grid`` / ``--zip`` axes x seeds (``fabricsim sweep``);
* :func:`plan_methods`: load-balancing methods x seeds (``fabricsim compare``);
* :func:`plan_study`: a paired study's grid points x seeds x ``--vs`` values (``fabricsim study``,
  the ARK study); :func:`plan_qps`: the ARK QPS sweep's request rates x seeds x policies.

Examples
--------
>>> sc = load_scenario("ecmp-collision")
>>> [(s.id, s.tag, s.seed) for s in plan_methods(sc, "flow", ["ecmp", "pinned"], 2)]
[('ecmp/seed-1', 'ecmp', 1), ('ecmp/seed-2', 'ecmp', 2), ('pinned/seed-1', 'pinned', 1), ('pinned/seed-2', 'pinned', 2)]
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fabricsim.config.loader import effective_scenario, load_scenario, parse_set_options
from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError
from fabricsim.experiments.engines import capabilities
from fabricsim.experiments.methods import method_overrides
from fabricsim.experiments.runner import check_engine

_VERSION = 1
MAX_POINTS = 100_000
"""Most runs one sweep may hold (``--grid`` values x ``--zip`` length x ``--seeds``)."""


@dataclass(frozen=True)
class RunSpec:
    """One run of an experiment.

    Attributes
    ----------
    id : str
        The run's name in its experiment, unique: a sweep point's id (``p0000``), a
        comparison run's directory (``ecmp/seed-1``), a study run's (``ark-seed1``).
    scenario : dict
        The effective scenario (:meth:`Scenario.to_dict`, seed applied), already checked;
        workers rebuild it with :func:`fabricsim.config.loader.effective_scenario`.
    engine : str or None
        ``flow`` or ``packet``; None: the scenario's.
    seed : int
        The run's seed.
    tag : str
        What the run stands for: a comparison's method, the study's policy ('' in a sweep).
    params : dict
        The keys the plan varies and their values in this run.
    index : int
        Position in the plan.
    config_hash : str
        The scenario's hash (sweeps: what a resumed point must match).
    """

    id: str
    scenario: dict[str, Any] = field(repr=False)
    engine: str | None
    seed: int
    tag: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    index: int = 0
    config_hash: str = ""

    def task(self, **extra: Any) -> dict[str, Any]:
        """The plain dict a worker gets (``id``, ``scenario``, ``engine``, ... and ``extra``)."""
        return {
            "id": self.id, "scenario": self.scenario, "engine": self.engine, "seed": self.seed,
            "tag": self.tag, "params": self.params, **extra,
        }  # fmt: skip


@dataclass(frozen=True)
class SweepPlan:
    """A validated sweep: its spec (what the manifest records) and its points in row order."""

    spec: dict[str, Any]
    points: list[RunSpec]
    engine: str | None

    @property
    def keys(self) -> list[str]:
        return [k for k, _ in self.spec["grid"]] + [k for k, _ in self.spec["zip"]]


# -- comparisons and the ARK study --------------------------------------------------------------


def plan_methods(sc: Scenario, engine: str, methods: Sequence[str], seeds: int) -> list[RunSpec]:
    """Every (method, seed) of a comparison: the scenario under each method's overrides
    (timelines on where the engine records them), seeds ``sc.seed ..``; each method checked
    against ``engine`` once."""
    specs: list[RunSpec] = []
    timelines = "timelines" in capabilities(engine).records
    for method in methods:
        over = method_overrides(method, engine, sc.lb.qp_count)
        if timelines:
            over["records.timelines"] = True
        variant = sc.varying(set(over)).with_overrides(over)
        check_engine(variant, engine)  # the user's keys checked here, once per method
        for i in range(seeds):
            seed = sc.seed + i
            data = variant.with_overrides({"seed": seed}).to_dict()
            n = len(specs)
            specs.append(RunSpec(f"{method}/seed-{seed}", data, engine, seed, method, over, n))
    return specs


def plan_qps(
    base: Scenario, qps_values: Iterable[float], seeds: Iterable[int], policies: Sequence[str]
) -> list[RunSpec]:
    """Every (QPS, seed, policy) of the ARK QPS sweep (flow engine), in that order, checked."""
    effective = effective_scenario(base.to_dict())
    specs: list[RunSpec] = []
    for qps in qps_values:
        for seed in seeds:
            for policy in policies:
                over = {"workload.qps": float(qps), "lb.policy": policy, "seed": int(seed)}
                sc = effective.with_overrides(over)
                check_engine(sc, "flow")
                n, params = len(specs), {"workload.qps": float(qps)}
                name = f"qps{float(qps):g}-{policy}-seed{seed}"
                specs.append(RunSpec(name, sc.to_dict(), "flow", int(seed), policy, params, n))
    return specs


def _slug(value: Any) -> str:
    """A value as part of a directory name (``25.0`` -> ``25``, ``a/b`` -> ``a_b``)."""
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in text)[:40] or "_"


def point_label(params: dict[str, Any]) -> str:
    """A grid point's short name: the last part of each key and its value (``qps25``).

    >>> point_label({"workload.qps": 25.0, "topology.spines": 8})
    'qps25-spines8'
    """
    return "-".join(f"{k.rsplit('.', 1)[-1]}{_slug(v)}" for k, v in params.items())


def plan_study(
    base: Scenario,
    vs: tuple[str, list[Any]],
    grid: dict[str, list[Any]],
    seeds: Sequence[int],
    engine: str | None,
) -> list[RunSpec]:
    """Every (grid point, seed, ``vs`` value) of a paired study, each checked, in that order.

    The runs of one grid point and seed differ only in the ``vs`` key: the same seed gives
    each value the same workload and the same switch salts.  A run's ``tag`` is its ``vs``
    value's text and its ``params`` the grid point.
    """
    key, values = vs
    varied = base.varying({key, *grid})  # a value's own keys stay for the runs that read them
    for option, axis in (("--vs", {key: values}), ("--grid", grid)):
        for k, vals in axis.items():  # each value alone first, so an error names its option
            for v in vals:
                try:
                    varied.with_overrides({k: v})
                except ConfigError as exc:
                    raise _prefixed(option, k, exc) from None
    specs: list[RunSpec] = []
    for params in _param_sets(grid, {}):
        for seed in seeds:
            for value in values:
                sc = varied.with_overrides({**params, key: value, "seed": int(seed)})
                check_engine(sc, engine or sc.engine.kind)
                label = "-".join(p for p in (point_label(params), _slug(value)) if p)
                n = len(specs)
                specs.append(
                    RunSpec(f"{label}-seed{seed}", sc.to_dict(), engine, sc.seed, str(value),
                            params, n, sc.config_hash())
                )  # fmt: skip
    return specs


# -- sweeps -------------------------------------------------------------------------------------


def _split_values(text: str) -> list[str]:
    """Split at commas outside brackets/braces/quotes (``a,[1, 2],c`` -> 3 values)."""
    out: list[str] = []
    cur: list[str] = []
    depth, quote = 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return [v.strip() for v in out]


def parse_axis(item: str, option: str = "--grid") -> tuple[str, list[Any]]:
    """Parse ``KEY=V1,V2,...`` into the key and its values (YAML scalars, like ``--set``).

    Examples
    --------
    >>> parse_axis("workload.qps=5,10.5")
    ('workload.qps', [5, 10.5])
    >>> parse_axis("lb.policy=ecmp,ark")
    ('lb.policy', ['ecmp', 'ark'])
    """
    if "=" not in item:
        raise ConfigError(f"{option} {item!r}: expected KEY=V1,V2,..., e.g. workload.qps=5,10")
    key, raw = item.split("=", 1)
    key = key.strip()
    if not key:
        raise ConfigError(f"{option} {item!r}: empty key")
    texts = [v for v in _split_values(raw) if v != ""]
    if not texts:
        raise ConfigError(f"{option} {key}: no values; give KEY=V1,V2,...")
    values = [parse_set_options([f"v={t}"])["v"] for t in texts]
    if len({json.dumps(v, sort_keys=True) for v in values}) != len(values):
        raise ConfigError(f"{option} {key}: repeated value in {raw!r}")
    return key, values


def _axes(grid: list[str], zipped: list[str]) -> tuple[dict[str, list], dict[str, list]]:
    g: dict[str, list] = {}
    z: dict[str, list] = {}
    for option, items, target in (("--grid", grid, g), ("--zip", zipped, z)):
        for item in items:
            key, values = parse_axis(item, option)
            if key in g or key in z:
                raise ConfigError(f"{option} {key}: key given twice")
            target[key] = values
    lengths = {len(v) for v in z.values()}
    if len(lengths) > 1:
        sizes = ", ".join(f"{k}: {len(v)}" for k, v in z.items())
        raise ConfigError(f"--zip: every zipped key needs the same number of values ({sizes})")
    return g, z


def _param_sets(grid: dict[str, list], zipped: dict[str, list]) -> list[dict[str, Any]]:
    axes: list[list[dict[str, Any]]] = [[{k: v} for v in vals] for k, vals in grid.items()]
    if zipped:
        n = len(next(iter(zipped.values())))
        axes.append([{k: vals[i] for k, vals in zipped.items()} for i in range(n)])
    return [dict(kv for part in combo for kv in part.items()) for combo in itertools.product(*axes)]


def _prefixed(option: str, key: str, exc: ConfigError) -> ConfigError:
    text = str(exc)
    return ConfigError(text if text.startswith(option) else f"{option} {key}: {text}")


def _check_seeds(seeds: Any) -> None:
    """Raise ``ConfigError`` unless ``seeds`` is a whole number in ``1 .. MAX_POINTS``."""
    if isinstance(seeds, bool) or not isinstance(seeds, int):
        raise ConfigError(f"--seeds: expected a whole number (got {seeds!r})")
    if seeds < 1:
        raise ConfigError(f"--seeds: must be >= 1 (got {seeds})")
    if seeds > MAX_POINTS:
        raise ConfigError(f"--seeds: at most {MAX_POINTS} runs in one sweep (got {seeds} seeds)")


def _check_size(g: dict[str, list], z: dict[str, list], seeds: int) -> None:
    """Raise ``ConfigError`` for an empty sweep, one past :data:`MAX_POINTS`, or two seed axes."""
    count = seeds
    for values in g.values():
        count *= len(values)
    if z:
        count *= len(next(iter(z.values())))
    if count > MAX_POINTS:
        sizes = " x ".join(
            [str(len(v)) for v in g.values()] + ([str(len(next(iter(z.values()))))] if z else [])
        )
        raise ConfigError(
            f"--grid/--zip/--seeds: {count} runs ({sizes} values x {seeds} seeds) in one sweep; "
            f"at most {MAX_POINTS}: split it into several sweeps"
        )
    if not g and not z and seeds == 1:
        raise ConfigError("--grid: empty grid; give --grid KEY=V1,V2,... (or --zip, or --seeds N)")
    if ("seed" in g or "seed" in z) and seeds > 1:
        raise ConfigError("--grid seed: sweep seeds with --seeds N or with a seed key, not both")


def _points(
    base: Any, g: dict[str, list], z: dict[str, list], seed_list: list[int], engine: str | None
) -> list[RunSpec]:
    """Every point of the sweep, in row order, each checked against ``engine``."""
    points: list[RunSpec] = []
    checked: set[str] = set()
    for params in _param_sets(g, z):
        for seed in seed_list:
            sc = _point_scenario(base, params, seed if "seed" not in params else None, checked)
            check_engine(sc, engine or sc.engine.kind)
            n = len(points)
            points.append(
                RunSpec(f"p{n:04d}", sc.to_dict(), engine, sc.seed, "", params, n, sc.config_hash())
            )
    return points


def plan_sweep(
    scenario: Any,
    grid: Iterable[str] = (),
    zipped: Iterable[str] = (),
    seeds: int = 1,
    sets: Iterable[str] = (),
    engine: str | None = None,
) -> SweepPlan:
    """Validate a sweep and list its points; raise :class:`ConfigError` on bad input.

    Parameters
    ----------
    scenario
        Built-in name, YAML path, dict or Scenario.
    grid, zipped
        ``KEY=V1,V2,...`` strings: grid keys form a cartesian product (the first varies
        slowest); zipped keys vary together and form the last axis.
    seeds
        Seeds per parameter set: the scenario's seed, seed + 1, ...
    sets
        ``KEY=VALUE`` overrides applied to every point (``--set``).
    engine
        ``flow`` or ``packet``; default: the scenario's.
    """
    grid, zipped, sets = list(grid), list(zipped), list(sets)
    _check_seeds(seeds)
    g, z = _axes(grid, zipped)
    _check_size(g, z, seeds)
    overrides = parse_set_options(sets)
    for key in overrides:
        if key in g or key in z:
            raise ConfigError(f"--set {key}: also a sweep key; give it in one place")
    base = load_scenario(scenario)
    if overrides:
        base = base.with_overrides(overrides)
    base = base.varying(set(g) | set(z))  # a policy's keys stay for the points that read them
    seed_list = [base.seed + i for i in range(seeds)]
    points = _points(base, g, z, seed_list, engine)
    spec = {
        "version": _VERSION,
        "scenario": base.name,
        "base_config_hash": base.config_hash(),
        "engine": engine,
        "grid": [[k, v] for k, v in g.items()],  # lists: JSON keeps their order
        "zip": [[k, v] for k, v in z.items()],
        "seeds": seed_list if not ("seed" in g or "seed" in z) else None,
        "sets": overrides,
    }
    return SweepPlan(spec, points, engine)


def _point_scenario(
    base: Any, params: dict[str, Any], seed: int | None, checked: set[str] | None = None
) -> Any:
    for key, value in params.items():  # one key at a time so an error names its option
        tag = json.dumps([key, value], sort_keys=True, default=str)
        if checked is not None:
            if tag in checked:
                continue
            checked.add(tag)
        try:
            base.with_overrides({key: value})
        except ConfigError as exc:
            raise _prefixed("--grid", key, exc) from None
    over = dict(params)
    if seed is not None:
        over["seed"] = seed
    return base.with_overrides(over)
