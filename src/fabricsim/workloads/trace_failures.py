"""What an exported trace cannot carry: the scenario's link failures (``export-trace``).

A message table (CSV) or an htsim connection matrix (``.cm``) holds traffic only, so a trace
exported from a scenario with failed or degraded links would replay on an intact fabric.
:func:`failure_notes` says so in one line and gives what restores the failure:

* in fabricsim, the ``--set`` options (``topology.failed_links``, ``degraded_links``,
  ``failed_switches``, ``link_failures``, ``failed_link_mode``) to add when running the
  trace back on the same topology;
* in htsim, the command-line flag ``-failed N`` when the failure is exactly the one it makes:
  htsim_uec slows the core->aggregation downlinks of the first ``N`` (aggregation switch,
  uplink) pairs, aggregation-major, to 1/10 of their rate (csg-htsim ``FatTreeTopology``;
  its aggregation switch ``a`` uplink ``l`` is our ``agg{a // (k/2)}_{a % (k/2)}`` to
  ``core{(a % (k/2)) * (k/2) + l}``).

htsim's ``.cm`` also has ``failure switch_type AGG switch_id S link_id L`` lines (with a
``Failures N`` header) that remove an aggregation-core link, but which core they name depends
on the htsim build (csg-htsim's ``add_failed_link`` numbers cores ``podpos * k/2 + link``,
its topology builder ``podpos + k/2 * link``), and fabricsim's own reader refuses them: they
are not written, and any other failure gets the warning alone.
"""

from __future__ import annotations

from fabricsim.config.models import Scenario, TopologyConfig

#: the rate fraction htsim's ``-failed N`` leaves on each slowed link (csg-htsim: speed / 10)
HTSIM_FAILED_FRACTION = 0.1


def _yaml_float(x: float) -> str:
    """A float as YAML reads it back as the same float (``1e-05`` is a string to YAML 1.1)."""
    text = repr(float(x))
    mantissa, e, exponent = text.partition("e")
    if e and "." not in mantissa:
        text = f"{mantissa}.0e{exponent}"
    return text


def restore_options(topo: TopologyConfig) -> list[str]:
    """The ``--set`` options that put ``topo``'s failures back (none for an intact fabric)."""
    out = []
    if topo.failed_links:
        out.append(f"topology.failed_links=[{', '.join(topo.failed_links)}]")
    if topo.degraded_links:
        pairs = ", ".join(f"{k}: {_yaml_float(v)}" for k, v in topo.degraded_links.items())
        out.append(f"topology.degraded_links={{{pairs}}}")
    if topo.failed_switches:
        out.append(f"topology.failed_switches=[{', '.join(topo.failed_switches)}]")
    if topo.link_failures:
        items = ", ".join(
            f"{{link: {f.link}, at_s: {_yaml_float(f.at_s)}}}" for f in topo.link_failures
        )
        out.append(f"topology.link_failures=[{items}]")
    if out and topo.failed_link_mode != "blackhole":
        out.append(f"topology.failed_link_mode={topo.failed_link_mode}")
    return out


def htsim_failed_links(topo: TopologyConfig, count: int) -> dict[str, float]:
    """The links htsim_uec's ``-failed count`` slows, as ``degraded_links`` of a k-ary fat tree."""
    half = topo.k // 2
    out = {}
    for flat in range(min(count, topo.k * half * half)):
        agg, uplink = divmod(flat, half)
        pod, pos = divmod(agg, half)
        out[f"core{pos * half + uplink}->agg{pod}_{pos}"] = HTSIM_FAILED_FRACTION
    return out


def htsim_failed_flag(topo: TopologyConfig) -> tuple[int, bool] | None:
    """``(N, same_rate)`` if the scenario slows exactly the links of htsim_uec's ``-failed N``
    (``same_rate``: each to 1/10, as htsim does), else None."""
    if topo.kind != "fat_tree" or topo.hosts_per_edge not in (None, topo.k // 2):
        return None
    if topo.failed_links or topo.failed_switches or topo.link_failures or topo.parallel_links > 1:
        return None
    count = len(topo.degraded_links)
    if not count or set(htsim_failed_links(topo, count)) != set(topo.degraded_links):
        return None
    return count, all(v == HTSIM_FAILED_FRACTION for v in topo.degraded_links.values())


def _links(n: int) -> str:
    return f"{n} core->agg link{'s' if n > 1 else ''}"


def _quoted(options: list[str]) -> str:
    return " ".join(f"--set '{o}'" for o in options)


def failure_notes(sc: Scenario, fmt: str, name: str) -> list[str]:
    """One line on what the exported file ``name`` loses of the scenario's failures, or none."""
    topo = sc.topology
    options = restore_options(topo)
    if not options:
        return []
    back = f"to replay it on the same topology in fabricsim, add {_quoted(options)}"
    if fmt != "htsim":
        return [
            f"warning: {name} carries no link failure (a CSV trace has no form for them); {back}"
        ]
    flag = htsim_failed_flag(topo)
    if flag is not None and flag[1]:
        return [
            f"note: {name} carries no link failure; run htsim_uec with -failed {flag[0]} (it "
            f"slows the same {_links(flag[0])} to 1/10 of their rate); {back}"
        ]
    if flag is not None:
        return [
            f"warning: {name} carries no link failure; htsim_uec's -failed {flag[0]} slows the "
            f"same {_links(flag[0])}, but to 1/10 of their rate, not to the scenario's "
            f"fractions; {back}"
        ]
    return [
        f"warning: {name} carries no link failure, and no htsim form matches this one "
        f"(-failed N slows htsim's first N core->agg links to 1/10; .cm failure lines are not "
        f"written: their core numbering differs between htsim builds); {back}"
    ]
