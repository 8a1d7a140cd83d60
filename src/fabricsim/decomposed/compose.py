"""Step 4 of the decomposed engine: each flow's FCT from the delays of its links.

A flow's FCT is its FCT alone on the idle fabric (:attr:`~fabricsim.decomposed.routes.Routes.
ideal_s`) plus, summed over the links it crosses, the delay each link added, weighted by the
flow's share on the link (a flow on one path: the plain sum along it; a sprayed flow: the
mean over its paths of their sums).  The delay a link added to a flow is:

* on a simulated link: the flow's own delay there (its FCT in the link simulation less its FCT
  alone on the same small fabric);
* on a link of a cluster simulated through another link (:mod:`fabricsim.decomposed.cluster`):
  a delay drawn from that link's sub-flows of the same size class (sizes within a factor of
  two: ``floor(log2(bytes))``; the nearest class present if the class is empty), from a stream
  of the scenario's seed and the link's name;
* on a quiet link (it cannot queue): 0.

A sub-flow that did not finish in its simulation leaves its flow unfinished.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> sample_by_class(np.array([1000, 1500, 10**6]), np.array([1.0, 2.0, 9.0]),
...                 np.array([1200, 900_000, 50]), rng).tolist()
[2.0, 9.0, 1.0]
"""

from __future__ import annotations

import numpy as np

from fabricsim.decomposed.link_workloads import LinkWorkloads
from fabricsim.decomposed.routes import Routes
from fabricsim.rng import stream
from fabricsim.topology.fabric import Fabric


def size_class(size_bytes: np.ndarray) -> np.ndarray:
    """``floor(log2(bytes))`` (sizes within a factor of two share a class)."""
    return np.floor(np.log2(np.maximum(size_bytes, 1))).astype(np.int64)


def sample_by_class(
    sizes: np.ndarray, delays: np.ndarray, wanted: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """A delay for each size in ``wanted``, drawn from ``delays`` of the same size class
    (the nearest class present, the smaller one on a tie)."""
    have = size_class(sizes)
    classes = np.unique(have)
    want = size_class(wanted)
    at = np.searchsorted(classes, want)
    lo = classes[np.clip(at - 1, 0, len(classes) - 1)]
    hi = classes[np.clip(at, 0, len(classes) - 1)]
    pick = np.where(np.abs(want - lo) <= np.abs(hi - want), lo, hi)
    order = np.argsort(have, kind="stable")
    sorted_have = have[order]
    start = np.searchsorted(sorted_have, pick, side="left")
    stop = np.searchsorted(sorted_have, pick, side="right")
    draw = start + np.floor(rng.random(len(wanted)) * (stop - start)).astype(np.int64)
    return delays[order][draw]


def row_delays(
    w: LinkWorkloads,
    reps: np.ndarray,
    results: dict[int, np.ndarray],
    fabric: Fabric,
    seed: int,
    quiet: float = 0.0,
) -> np.ndarray:
    """The delay each link added to each sub-flow, in the rows of ``w`` (see the module);
    ``results`` may hold another per-sub-flow figure (the ``scaled`` ratios), sampled alike,
    with ``quiet`` its value on a quiet link."""
    out = np.full(len(w.flow), quiet)
    for i in range(len(w.links)):
        if w.quiet[i]:
            continue
        r = w.rows(i)
        rep = int(reps[i])
        if rep == i:
            out[r] = results[i]
            continue
        rr = w.rows(rep)
        finished = ~np.isnan(results[rep])
        if not finished.any():
            out[r] = np.nan
            continue
        rng = stream(seed, f"decomposed/sample/{fabric.link_names[int(w.links[i])]}")
        out[r] = sample_by_class(
            w.size_bytes[rr][finished], results[rep][finished], w.size_bytes[r], rng
        )
    return out


def compose(routes: Routes, w: LinkWorkloads, delays: np.ndarray) -> np.ndarray:
    """Per flow: its FCT, s (NaN: it did not finish, or cannot)."""
    n = len(routes.ideal_s)
    weighted = delays * routes.coef[w.row]
    added = np.bincount(w.flow, weights=np.nan_to_num(weighted, nan=0.0), minlength=n)
    lost = np.bincount(w.flow, weights=np.isnan(weighted).astype(float), minlength=n) > 0
    fct = routes.ideal_s + added
    fct[lost | ~np.isfinite(routes.ideal_s)] = np.nan
    return fct


ROUNDS = 8
"""Points of a flow's lifetime at which the ``bottleneck`` composition finds its bottleneck."""


def bottleneck_shares(
    routes: Routes, w: LinkWorkloads, delays: np.ndarray, rate_bps: np.ndarray
) -> np.ndarray:
    """Per row of ``w``: the part of the link's delay that counts toward the flow's.

    The contention a flow meets on a link at time ``t`` is the arrival rate of the link's other
    sub-flows active at ``t`` (each from its start to its finish on that link) over the link's
    rate.  At :data:`ROUNDS` points of a flow's lifetime (its start to its start plus its ideal
    FCT and its largest link delay), the links of the flow with the most contention are its
    bottleneck (several at a tie share it equally).  A link's part is the share of its
    contention, summed over the rounds, that falls in rounds where it is the bottleneck: a link
    that is the bottleneck whenever it is contended counts in full (so does one contended at
    no sampled point), one that never is not at all.  Delays that
    links add at the same time overlap (the flow moves at its slowest link's pace), delays
    added at different times add up: the correction Parsimon's proportional aggregator makes,
    with ties shared.
    """
    n = len(routes.ideal_s)
    d = np.nan_to_num(delays, nan=0.0)
    ideal = routes.ideal_s[w.flow]
    begin = w.start_s
    end = begin + ideal + d
    offered = w.sender_bps
    longest = np.zeros(n)
    np.maximum.at(longest, w.flow, d)
    span = np.where(np.isfinite(routes.ideal_s), routes.ideal_s, 0.0) + longest
    t = (
        routes.start_s[w.flow][:, None]
        + span[w.flow][:, None] * ((np.arange(ROUNDS) + 0.5) / ROUNDS)[None, :]
    )
    load = np.zeros((len(w.flow), ROUNDS))
    for i in range(len(w.links)):
        r = w.rows(i)
        on = np.sort(begin[r])
        off_order = np.argsort(end[r])
        on_rate = np.concatenate([[0.0], np.cumsum(offered[r][np.argsort(begin[r])])])
        off_rate = np.concatenate([[0.0], np.cumsum(offered[r][off_order])])
        q = t[r]
        active = (
            on_rate[np.searchsorted(on, q, side="right")]
            - off_rate[np.searchsorted(end[r][off_order], q, side="right")]
        )
        # what arrives beside the flow itself: the contention it meets there
        load[r] = np.maximum(active - offered[r][:, None], 0.0) / max(float(rate_bps[i]), 1.0)
    best = np.full((n, ROUNDS), -np.inf)
    np.maximum.at(best, w.flow, load)
    top = load >= best[w.flow] * (1 - 1e-9)
    ties = np.zeros((n, ROUNDS))
    np.add.at(ties, w.flow, top.astype(float))
    counted = (top / np.maximum(ties[w.flow], 1.0) * load).sum(axis=1)
    total = load.sum(axis=1)
    return np.where(total > 0, counted / np.where(total > 0, total, 1.0), 1.0)


def scaled(routes: Routes, w: LinkWorkloads, ratios: np.ndarray) -> np.ndarray:
    """Per flow: its FCT in the routing run (the flow engine on the whole fabric) times the
    largest of its links' packet-over-fluid FCT ratios (a link where the flow has share ``c``
    of its bytes: ``1 + c (ratio - 1)``); NaN where a link simulation did not finish it.

    The flow engine sees every link's fair sharing at once, so the stretch a flow's slow links
    give its overlap with others elsewhere is in; each link simulation adds what its queues,
    losses and congestion control cost beyond fair sharing.  The largest counts: the packet
    effects of two links on one flow overlap as its sharing does.
    """
    n = len(routes.ideal_s)
    part = 1.0 + routes.coef[w.row] * (ratios - 1.0)
    factor = np.ones(n)
    np.maximum.at(factor, w.flow, np.nan_to_num(part, nan=1.0))
    lost = np.bincount(w.flow, weights=np.isnan(part).astype(float), minlength=n) > 0
    fct = (routes.flow_out.finish_s - routes.start_s) * factor
    fct[lost | ~np.isfinite(routes.ideal_s)] = np.nan
    return fct


def compose_flows(
    routes: Routes, w: LinkWorkloads, delays: np.ndarray, rate_bps: np.ndarray, aggregate: str
) -> np.ndarray:
    """Per flow: its FCT by ``aggregate`` (``bottleneck``, ``sum``, ``max``; ``scaled``
    takes the ratios of :func:`scaled` as ``delays``), s."""
    if aggregate == "sum":
        return compose(routes, w, delays)
    if aggregate == "scaled":
        return scaled(routes, w, delays)
    n = len(routes.ideal_s)
    weighted = delays * routes.coef[w.row]
    lost = np.bincount(w.flow, weights=np.isnan(weighted).astype(float), minlength=n) > 0
    if aggregate == "max":
        added = np.zeros(n)
        np.maximum.at(added, w.flow, np.nan_to_num(weighted, nan=0.0))
    else:
        share = bottleneck_shares(routes, w, delays, rate_bps)
        part = np.nan_to_num(delays, nan=0.0) * share
        added = np.bincount(w.flow, weights=part, minlength=n).astype(np.float64)
    fct = routes.ideal_s + added
    fct[lost | ~np.isfinite(routes.ideal_s)] = np.nan
    return fct
