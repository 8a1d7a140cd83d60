"""The MoE exponential incast (``003_*.txt`` section 3): the paper's fluid forms, the exact ones.

The model: N senders, each sending ``D_ij = T / (j alpha)`` to receivers of Zipf rank
``j = 1..N`` (``alpha = H_N``, the N-th harmonic number; every row sums to T), all at line
rate 1 under round robin (each of a sender's ``k`` active flows drains at ``1/k``), with no
feedback; receivers serve at rate 1.  Time is in units of bytes at line rate (``T`` is both
a sender's volume and the time it needs).

The paper's closed forms (``paper_*``):

* active destinations ``k(t) = N e^(-alpha t / T)``,
* hot-receiver arrival rate ``lambda_1(t) = N / k(t) = e^(alpha t / T)``,
* backlog at T: ``Q_total(T) ~ N T (1 - (ln ln N + 1) / ln N)``.

Why they are off.  The paper differentiates ``int_0^t dtau / k(tau) = T / (alpha k(t))``, but
that equation does not hold at ``t = 0`` (the left side is 0, the right ``T/(alpha N) > 0``):
no flow ends before the smallest one, of size ``T/(alpha N)``, has been served at ``1/N``, i.e.
before ``t0 = T / alpha``.  Solving the same differential equation from the right boundary
condition ``k(t0) = N`` gives ``k(t) = N e^(1 - alpha t / T)`` for ``t >= T/alpha`` (and N before):
the paper's form is low by a factor ``e`` and starts decaying too early (``corrected_*``).

The exact fluid solution (``exact_*``) needs no continuum step.  Under round robin the flows
of a sender end in increasing size; when rank ``k`` ends, ranks ``k+1..N`` are done and the
``k`` still active have each received ``s_k``, so it ends at ``t_k = k s_k + sum_{m>k} s_m``;
for the Zipf row ``t_k = (T / alpha)(1 + H_N - H_k)`` (``t_N = T/alpha``, ``t_1 = T``), and
``k(t) = #{m : t_m > t}``.  Every receiver gets at least line rate while it has flows
(``N / k >= 1``), so it never idles: ``Q_j(t) = A_j(t) - t`` until its flows end, then it drains
at rate 1.  At ``T`` (every sender done) ``Q_j(T) = max(0, N T / (alpha j) - T)`` and
``Q_total(T) = T (N H_J / alpha - J)`` with ``J = floor(N / alpha)``; replacing the sum by the
paper's integral loses half the j = 1 term and ``H_N`` by ``ln N`` adds more error; the
continuum form with both fixed is ``(N T / alpha)(ln(N / alpha) + gamma - 1)``.

The figure of the simulation against these forms: :func:`fabricsim.report.plots.plot_incast`.

Examples
--------
>>> round(paper_backlog_at_end(64, 1.0) / 64, 4), round(exact_backlog_at_end(64, 1.0) / 64, 4)
(0.4169, 0.4672)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fabricsim._compat import pd

EULER_GAMMA = 0.5772156649015329


def harmonic(n: int | np.ndarray) -> Any:
    """The harmonic number ``H_n = sum_{m=1}^{n} 1/m`` (exact sum for ints up to 10^6).

    Examples
    --------
    >>> round(harmonic(4), 6)
    2.083333
    """
    arr = np.atleast_1d(np.asarray(n, dtype=np.int64))
    table = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, int(arr.max(initial=0)) + 1))])
    out = table[arr]
    return float(out[0]) if np.ndim(n) == 0 else out


# -- the paper's forms ------------------------------------------------------------------------
def paper_active_destinations(t: Any, n: int, total: float) -> Any:
    """``k(t) = N e^(-alpha t / T)`` (``alpha = H_N``)."""
    return n * np.exp(-harmonic(n) * np.asarray(t, dtype=float) / total)


def paper_hot_arrival_rate(t: Any, n: int, total: float) -> Any:
    """``lambda_1(t) = e^(alpha t / T)``, in units of the line rate."""
    return np.exp(harmonic(n) * np.asarray(t, dtype=float) / total)


def paper_backlog_at_end(n: int, total: float) -> float:
    """``Q_total(T) ~ N T (1 - (ln ln N + 1) / ln N)`` (bytes, with ``total`` = T in bytes)."""
    ln = math.log(n)
    return n * total * (1 - (math.log(ln) + 1) / ln)


# -- the same differential equation from the right boundary condition -------------------------
def corrected_active_destinations(t: Any, n: int, total: float) -> Any:
    """``k(t) = min(N, N e^(1 - alpha t / T))``: the paper's ODE started at ``k(T/alpha) = N``."""
    return np.minimum(n, n * np.exp(1 - harmonic(n) * np.asarray(t, dtype=float) / total))


def corrected_hot_arrival_rate(t: Any, n: int, total: float) -> Any:
    """``N / k(t)`` of :func:`corrected_active_destinations` (line-rate units)."""
    return n / corrected_active_destinations(t, n, total)


def corrected_backlog_at_end(n: int, total: float) -> float:
    """``(N T / alpha)(ln(N / alpha) + gamma - 1)``: the sum as a continuum, ``alpha = H_N``."""
    alpha = harmonic(n)
    return n * total / alpha * (math.log(n / alpha) + EULER_GAMMA - 1)


# -- the exact fluid solution -----------------------------------------------------------------
def end_times(sizes: np.ndarray) -> np.ndarray:
    """When each flow of a round-robin sender ends, all starting at 0 (line rate 1).

    ``t_k = k s_k + sum_{m>k} s_m`` with flows ranked by decreasing size; returned in the
    order of ``sizes``.

    Examples
    --------
    >>> end_times(np.array([3.0, 1.0, 2.0])).tolist()
    [6.0, 3.0, 5.0]
    """
    s = np.asarray(sizes, dtype=float)
    order = np.argsort(-s, kind="stable")
    desc = s[order]
    after = np.concatenate([np.cumsum(desc[::-1])[::-1][1:], [0.0]])
    out = np.empty(len(s))
    out[order] = np.arange(1, len(s) + 1) * desc + after
    return out


def zipf_end_times(n: int, total: float) -> np.ndarray:
    """``t_k = (T / alpha)(1 + H_N - H_k)`` for ranks ``k = 1..N`` (index ``k-1``)."""
    alpha = harmonic(n)
    return total / alpha * (1 + alpha - harmonic(np.arange(1, n + 1)))


def exact_active_destinations(t: Any, n: int, total: float, sizes: np.ndarray | None = None) -> Any:
    """``k(t) = #{flows still sending at t}`` (``sizes``: one sender's row; default the Zipf row)."""
    ends = np.sort(zipf_end_times(n, total) if sizes is None else end_times(sizes))
    return len(ends) - np.searchsorted(ends, np.asarray(t, dtype=float), side="right")


def exact_hot_arrival_rate(t: Any, n: int, total: float, sizes: np.ndarray | None = None) -> Any:
    """``lambda_1(t) = N / k(t)`` in line-rate units (0 once every sender is done)."""
    k = np.asarray(exact_active_destinations(t, n, total, sizes), dtype=float)
    return np.divide(n, k, out=np.zeros_like(k), where=k > 0)


def exact_backlog(t: Any, n: int, total: float, sizes: np.ndarray | None = None) -> Any:
    """Total backlog ``sum_j Q_j(t)`` (bytes) of N identical round-robin senders.

    Each flow's cumulative service is ``S(t)``, the same for all active flows;
    ``Q_j(t) = N S(min(t, t_j)) - t`` while positive (receivers never idle while fed).
    """
    s = pure_row(n, total) if sizes is None else np.asarray(sizes, dtype=float)
    ends = end_times(s)
    order = np.argsort(ends)
    knots_t = np.concatenate([[0.0], ends[order]])
    knots_s = np.concatenate([[0.0], s[order]])
    tt = np.atleast_1d(np.asarray(t, dtype=float))
    served = np.interp(np.minimum(tt[:, None], ends[None, :]), knots_t, knots_s)
    q = np.maximum(n * served - tt[:, None], 0.0).sum(axis=1)
    return float(q[0]) if np.ndim(t) == 0 else q


def exact_backlog_at_end(n: int, total: float) -> float:
    """``Q_total(T) = T (N H_J / alpha - J)``, ``J = floor(N / alpha)`` (bytes)."""
    alpha = harmonic(n)
    j = int(math.floor(n / alpha))
    return total * (n * harmonic(j) / alpha - j)


def pure_row(n: int, total: float) -> np.ndarray:
    """One sender's Zipf row ``T / (j alpha)``, ``j = 1..N``."""
    return total / (np.arange(1, n + 1) * harmonic(n))


# -- comparing with a simulation --------------------------------------------------------------
def measure(timeline: pd.DataFrame, times_s: np.ndarray) -> pd.DataFrame:
    """Read an open-loop ``timeline_backlog`` table at ``times_s`` (each row holds from its time
    until the next): active destinations per sender, hot arrival rate (line-rate units), backlog
    (bytes; linear between rows)."""
    tl = timeline.sort_values("time_s", kind="stable")
    tt = tl["time_s"].to_numpy()
    at = np.searchsorted(tt, times_s, side="right") - 1
    at = np.clip(at, 0, len(tl) - 1)
    return pd.DataFrame(
        {
            "time_s": times_s,
            "active_destinations": tl["mean_active_destinations"].to_numpy()[at],
            "hot_arrival_norm": tl["hot_arrival_norm"].to_numpy()[at],
            "backlog_bytes": np.interp(times_s, tt, tl["backlog_bytes"].to_numpy()),
        }
    )


def compare(
    timeline: pd.DataFrame,
    n: int,
    total_bytes: float,
    rate_bps: float,
    fractions: tuple[float, ...] = (0.25, 0.5, 0.75, 0.9),
) -> pd.DataFrame:
    """Measured vs paper vs exact at ``t = fraction x T`` (T = the senders' time) and at T.

    ``total_bytes`` is a sender's wire bytes, ``rate_bps`` the line rate; returns one row per
    quantity and time with ``measured``, ``paper``, ``exact``, ``corrected`` and relative errors.
    """
    t_end = total_bytes * 8 / rate_bps
    frac = np.asarray(fractions, dtype=float)
    got = measure(timeline, frac * t_end)
    u = frac * total_bytes  # the model's time unit: bytes at line rate
    rows = []
    for i, f in enumerate(frac):
        rows.append(
            (
                "active_destinations",
                f,
                got["active_destinations"][i],
                paper_active_destinations(u[i], n, total_bytes),
                exact_active_destinations(u[i], n, total_bytes),
                corrected_active_destinations(u[i], n, total_bytes),
            )
        )
        rows.append(
            (
                "hot_arrival_norm",
                f,
                got["hot_arrival_norm"][i],
                paper_hot_arrival_rate(u[i], n, total_bytes),
                exact_hot_arrival_rate(u[i], n, total_bytes),
                corrected_hot_arrival_rate(u[i], n, total_bytes),
            )
        )
    end = measure(timeline, np.array([t_end]))["backlog_bytes"][0]
    rows.append(
        (
            "backlog_at_T_bytes",
            1.0,
            end,
            paper_backlog_at_end(n, total_bytes),
            exact_backlog_at_end(n, total_bytes),
            corrected_backlog_at_end(n, total_bytes),
        )
    )
    df = pd.DataFrame(
        rows, columns=["quantity", "t_over_T", "measured", "paper", "exact", "corrected"]
    )
    for col in ("paper", "exact", "corrected"):
        df[f"err_{col}"] = (df["measured"] - df[col].astype(float)) / df[col].astype(float)
    return df


def mean_row(flows: pd.DataFrame) -> tuple[np.ndarray, int]:
    """A run's matrix as the model sees it: each sender's message sizes sorted large to small,
    averaged over senders (shorter rows padded with 0), and the number of senders."""
    rows = [np.sort(g.to_numpy(dtype=float))[::-1] for _, g in flows.groupby("src")["size_bytes"]]
    width = max((len(r) for r in rows), default=0)
    padded = np.zeros((len(rows), width))
    for i, r in enumerate(rows):
        padded[i, : len(r)] = r
    return padded.mean(axis=0) if len(rows) else np.zeros(0), len(rows)


def run_model(
    flows: pd.DataFrame, rate_bps: float, times_s: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The exact fluid model's k(t) and total backlog Q(t) (bytes) for a run's matrix
    (:func:`mean_row`; senders at ``rate_bps`` from the first message's start, round robin)."""
    row, n = mean_row(flows)
    row = row[row > 0]
    if n == 0 or len(row) == 0:
        return np.zeros(len(times_s)), np.zeros(len(times_s))
    start = float(flows["start_s"].min())
    u = np.maximum(np.asarray(times_s, dtype=float) - start, 0.0) * rate_bps / 8
    total = float(row.sum())
    k = exact_active_destinations(u, n, total, sizes=row)
    q = exact_backlog(u, n, total, sizes=row)
    return np.asarray(k, dtype=float), np.asarray(q, dtype=float)


def active_destinations(flows: pd.DataFrame, times_s: np.ndarray) -> np.ndarray:
    """Simulated k(t): each sender's messages started and not finished at each time, averaged
    over senders (an unfinished message counts until the end)."""
    start = np.sort(flows["start_s"].to_numpy(dtype=float))
    finish = flows["finish_s"].to_numpy(dtype=float)
    finish = np.sort(np.where(np.isfinite(finish), finish, np.inf))
    t = np.asarray(times_s, dtype=float)
    active = np.searchsorted(start, t, side="right") - np.searchsorted(finish, t, side="right")
    return active / max(flows["src"].nunique(), 1)
