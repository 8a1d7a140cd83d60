"""A scenario in two lines for people: its fabric and its workload (tables, figure titles).

From the config alone (the fabric's counts are :mod:`.budget_counts`'), so describing a
k = 64 fat tree costs nothing.

Examples
--------
>>> from fabricsim.config.loader import load_scenario
>>> sc = load_scenario("ark")
>>> describe_fabric(sc)
'leaf-spine, 16 hosts: 2 leaves × 8 hosts, 4 spines; 100 Gbps, 1 µs per link; 2:1 oversubscribed'
>>> describe_workload(sc)
'KV cache: 1,000 requests at QPS 25, llama-3-8b, rank-Zipf θ 0.7 prompts of 1,000…52,600 tokens'
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from fabricsim.config.models import Scenario
from fabricsim.experiments.budget_counts import _fabric
from fabricsim.units import human_bytes, human_rate

__all__ = ["describe_fabric", "describe_run", "describe_workload"]


def _rates(t: Any) -> str:
    host, fabric = float(t.host_link_gbps), float(t.fabric_link_gbps)
    core = t.core_link_gbps
    if t.host_nic_gbps:
        host_text = f"hosts {human_rate(host)} (per-host rates set)"
    else:
        host_text = human_rate(host)
    if host == fabric and core in (None, fabric) and not t.host_nic_gbps:
        text = human_rate(host)
    else:
        text = f"hosts {host_text}, fabric {human_rate(fabric)}"
        if core not in (None, fabric):
            text += f", core {human_rate(float(core))}"
    return f"{text}, {t.link_delay_us:g} µs per link"


def _shape(t: Any) -> str:
    if t.kind == "fat_tree":
        per = t.hosts_per_edge or t.k // 2
        return f"3-tier fat tree k={t.k} ({per} hosts per edge)"
    if t.kind == "rail_optimized":
        pxn = ", PXN over NVLink" if t.pxn else ""
        return f"rail-optimized: {t.servers} servers × {t.rails} rails, {t.spines} spines{pxn}"
    if t.kind == "multi_plane":
        inner = _shape(t.model_copy(update={"kind": t.plane_kind}))
        kind, _, rest = inner.partition(": ")
        return f"{t.planes}-plane {kind}: {rest} per plane" if rest else f"{t.planes}-plane {kind}"
    par = f" × {t.parallel_links} links" if t.parallel_links > 1 else ""
    hosts = "host" if t.hosts_per_leaf == 1 else "hosts"
    return f"leaf-spine: {t.leaves} leaves × {t.hosts_per_leaf} {hosts}, {t.spines} spines{par}"


def _oversubscription(t: Any) -> str:
    """Leaf-spine host capacity over uplink capacity per leaf (``2:1``), '' when 1:1 or not known."""
    if t.kind != "leaf_spine" or t.host_nic_gbps:
        return ""
    down = t.hosts_per_leaf * t.host_link_gbps
    up = t.spines * t.parallel_links * t.fabric_link_gbps
    if up <= 0 or down <= up * (1 + 1e-9):
        return ""
    ratio = Fraction(down / up).limit_denominator(16)
    return f"; {ratio.numerator}:{ratio.denominator} oversubscribed"


def describe_fabric(sc: Scenario) -> str:
    """The fabric in one line: kind, hosts, tiers, rates and delay, oversubscription, failures."""
    t = sc.topology
    hosts = _fabric(sc).hosts
    shape = _shape(t)
    kind, _, rest = shape.partition(": ")
    head = f"{kind}, {hosts:,} hosts: {rest}" if rest else f"{shape}, {hosts:,} hosts"
    text = f"{head}; {_rates(t)}{_oversubscription(t)}"
    failed = len(t.failed_links) + len(t.failed_switches)
    if failed or t.degraded_links:
        text += f"; {len(t.failed_links)} failed, {len(t.degraded_links)} degraded links"
        if t.failed_switches:
            text += f", {len(t.failed_switches)} failed switches"
    return text


def _leaf_pairs(sc: Scenario, src_leaf: int, dst_leaf: int) -> str:
    """``host i to host 8+i``: the host names a leaf-to-leaf step pairs (hosts are numbered leaf
    by leaf); ``host i of each leaf`` where a leaf's hosts are not known from the keys alone."""
    t = sc.topology
    per = {"leaf_spine": t.hosts_per_leaf, "fat_tree": t.hosts_per_edge or t.k // 2}.get(t.kind)
    if per is None:
        return "host i to host i of each leaf"

    def name(leaf: int) -> str:
        return f"host {leaf * per}+i" if leaf else "host i"

    return f"{name(src_leaf)} to {name(dst_leaf)}"


def describe_workload(sc: Scenario) -> str:
    """The workload in one line (kind, size, rate, distribution)."""
    w: Any = sc.workload
    kind = w.kind
    if kind == "kv_cache":
        if w.prompt == "zipf":
            prompts = (
                f"rank-Zipf θ {w.prompt_theta:g} prompts of "
                f"{w.prompt_min_tokens:,}…{w.prompt_max_tokens:,} tokens"
            )
        elif w.prompt == "fixed":
            prompts = f"{w.prompt_tokens:,}-token prompts"
        else:
            prompts = f"prompts from {w.prompt_path}"
        return f"KV cache: {w.requests:,} requests at QPS {w.qps:g}, {w.model}, {prompts}"
    if kind == "moe":
        what = w.model or f"Zipf s={w.zipf_s:g}"
        return f"MoE dispatch ({w.matrix} matrix, {what}), {w.scheduler} scheduler"
    if kind == "permutation":
        return f"permutation: every host sends {human_bytes(w.size_bytes)} to another"
    if kind == "incast":
        return f"incast: {w.senders} senders → host {w.receiver}, {human_bytes(w.size_bytes)} each"
    if kind == "leaf_to_leaf":
        return (
            f"leaf {w.src_leaf} → leaf {w.dst_leaf}: {_leaf_pairs(sc, w.src_leaf, w.dst_leaf)}, "
            f"{human_bytes(w.size_bytes)} each"
        )
    if kind == "collective":
        who = f"{len(w.hosts)} hosts" if w.hosts else "all hosts"
        sizes = w.size_list
        what = (
            human_bytes(sizes[0])
            if len(sizes) == 1
            else (f"{human_bytes(sizes[0])}..{human_bytes(sizes[-1])} ({len(sizes)} sizes)")
        )
        how = f"{w.algo}, {w.channels} channel{'s' if w.channels > 1 else ''}"
        how += ", hierarchical" if w.hierarchical else ""
        return f"collective: {w.operation.replace('_', ' ')} ({how}) of {what} over {who}"
    if kind == "chakra":
        return f"Chakra trace replay: {w.path}, compute x {w.compute_scale:g}"
    return f"trace: {w.path}"


def describe_run(sc: Scenario, engine: str, seeds: list[int] | None = None) -> str:
    """``<scenario> · <engine> engine · seed(s) ...`` (figure titles and report sections)."""
    chosen = seeds if seeds is not None else [sc.seed]
    word = "seed" if len(chosen) == 1 else "seeds"
    shown = ", ".join(map(str, chosen[:6])) + (" …" if len(chosen) > 6 else "")
    return f"{sc.name} · {engine} engine · {word} {shown}"
