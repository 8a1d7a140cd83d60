"""Full verification of the MoE dispatch on the packet engine (``003_*.txt``, Figs. 2-4).

64 GPUs (8 servers x 8) on a non-blocking leaf-spine (8 leaves x 8 hosts, 8 spines) at
800 Gbps, 4,096 B payloads, 1 us links, one-BDP buffers with trimming, NSCC, a DeepSeek-V3
dispatch of ``--tokens`` tokens per GPU (M / line rate >= 100 us), Zipf s = 0.25 and 0.5,
each of oblivious spraying, REPS and switch adaptive routing (skipped, with the reason, while
the packet engine refuses ``switch.load_balancing_method: adaptive``):

1. the table: round robin vs rate-based CCT inflation, hot receiver's peak queue (exact, from
   ``records.port_stats``), trims, timeouts, the hot receiver's utilization and NSCC's window
   cuts (multiplicative decreases and quick adapts) of the paced flows.  PASS per cell:
   rate-based inflation <= 1.10 and below round robin's, rate-based hot peak <= 0.5 x round
   robin's, M / line rate >= 100 us;
2. Fig. 4: the hot receiver's downlink utilization and the bytes queued in the whole fabric
   over time (``timeline_backlog``), Zipf 0.5, oblivious, round robin vs rate-based
   (information);
3. ablation (``--ablation-tokens``, Zipf 0.5, oblivious): what each part of the rate-based
   sender does on a longer dispatch -- M from data alone (the paper's formula) vs with the
   ACKs the NICs send (``workload.pacing_acks``), and the paced window floor
   (``fabricsim.nic.pdc.PACED_WINDOW_BASE_RTTS``) -- with round robin for reference
   (information; PASS: the built sender's inflation <= 1.10 with no NSCC cut).

Run: ``python scripts/verify_moe_packet.py [--tokens N] [--seeds N] [--ablation-tokens N]``
(``--ablation-tokens 0`` skips part 3).  About 5 + 4 minutes on 2 cores.  Exit 1 on FAIL.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

import fabricsim
import fabricsim.nic.pdc as pdc_mod
from fabricsim.errors import ConfigError, EngineRefusal
from fabricsim.packetsim.engine import PacketEngine
from fabricsim.workloads.moe import wire_bytes_array

LB = {
    "oblivious": {"nic.packet_spraying_type": "oblivious"},
    "reps": {"nic.packet_spraying_type": "reps"},
    "adaptive": {"nic.packet_spraying_type": "none", "switch.load_balancing_method": "adaptive"},
}
ENGINES: list[PacketEngine] = []


def _capture_engines() -> None:
    """Keep each packet engine run by ``fabricsim.run`` (to read its PDCs' controllers)."""
    original = PacketEngine.run

    def run(self: PacketEngine) -> Any:
        ENGINES.append(self)
        return original(self)

    PacketEngine.run = run  # type: ignore[method-assign]


def scenario(zipf_s: float, lb: str, scheduler: str, tokens: int, seed: int) -> Any:
    """The built-in ``moe`` scenario (already 64 GPUs at 800 Gbps) with the cell's settings."""
    return fabricsim.load_scenario("moe").with_overrides(
        {
            "seed": seed,
            "workload.zipf_s": zipf_s,
            "workload.tokens_per_gpu": tokens,
            "workload.scheduler": scheduler,
            "records.timelines": False,
            "records.port_stats": True,
            **LB[lb],
        }
    )


def data_m_s(res: fabricsim.Result) -> float:
    """M / line rate from the data alone (wire bytes, every NIC at 800 Gbps), s."""
    f = res.flows
    wire = wire_bytes_array(f["size_bytes"].to_numpy(), 4096, 88)
    out = np.bincount(f["src"].str[4:].astype(int), weights=wire).max()
    into = np.bincount(f["dst"].str[4:].astype(int), weights=wire).max()
    return float(max(out, into)) * 8 / 800e9


def cell(sc: Any) -> dict[str, Any] | str:
    """One run's figures, or the reason it cannot run."""
    t0 = time.perf_counter()
    try:
        res = fabricsim.run(sc, engine="packet")
    except (EngineRefusal, ConfigError) as exc:
        return f"skipped: {exc}"
    eng = ENGINES.pop()
    s, ports = res.summary, res.tables["port_stats"]
    hot = s["hot_receiver"]
    pdcs = [p for ps in eng.pdcs for p in ps]
    paced = [p for p in pdcs if p.paced] or pdcs  # round robin: every flow's controller
    return {
        "m_us": data_m_s(res) * 1e6,
        "bound_us": s["cct_lower_bound_s"] * 1e6,
        "cct_us": (s["cct_s"] or float("nan")) * 1e6,
        "infl": s["cct_inflation"] or float("nan"),
        "peak": float(
            ports.loc[ports["link"].str.endswith("->" + hot), "peak_queue_bytes"].iloc[0]
        ),
        "trims": s["packets_trimmed"],
        "timeouts": s["timeouts"],
        "util": s["hot_receiver_utilization"] or float("nan"),
        "cuts": sum(
            getattr(p.cc, "decreases", 0) + getattr(p.cc, "quick_adapts", 0) for p in paced
        ),
        "wall": time.perf_counter() - t0,
    }


def table(tokens: int, seeds: int) -> bool:
    print(f"\n1. Round robin vs rate-based, 64 GPUs, {tokens} tokens/GPU, NSCC, trimming, 1 BDP")
    print(
        "| Zipf s | LB | seed | M/line us | bound us | RR CCT us | RR infl | RB CCT us | RB infl "
        "| RR hot peak KB | RB hot peak KB | RB/RR peak | RR trims | RB trims | RR hot util "
        "| RB hot util | RB NSCC cuts | check |"
    )
    print("|" + "---|" * 18)
    ok = True
    for zipf_s in (0.25, 0.5):
        for lb in LB:
            for seed in range(1, seeds + 1):
                rr = cell(scenario(zipf_s, lb, "round_robin", tokens, seed))
                rb = cell(scenario(zipf_s, lb, "rate_based", tokens, seed))
                if isinstance(rr, str) or isinstance(rb, str):
                    reason = rr if isinstance(rr, str) else rb
                    print(f"| {zipf_s} | {lb} | {seed} | " + "| " * 14 + f"{reason} |")
                    continue
                ratio = rb["peak"] / max(rr["peak"], 1.0)
                good = (
                    rb["infl"] <= 1.10
                    and rb["infl"] < rr["infl"]
                    and ratio <= 0.5
                    and rb["m_us"] >= 100
                )
                ok &= good
                print(
                    f"| {zipf_s} | {lb} | {seed} | {rb['m_us']:.1f} | {rb['bound_us']:.1f} "
                    f"| {rr['cct_us']:.1f} | {rr['infl']:.4f} | {rb['cct_us']:.1f} "
                    f"| {rb['infl']:.4f} | {rr['peak'] / 1e3:.0f} | {rb['peak'] / 1e3:.0f} "
                    f"| {ratio:.2f} | {rr['trims']} | {rb['trims']} | {rr['util']:.3f} "
                    f"| {rb['util']:.3f} | {rb['cuts']} | {'PASS' if good else 'FAIL'} |",
                    flush=True,
                )
    return ok


def over_time(tokens: int, bins: int = 10) -> None:
    print(f"\n2. Over time (Fig. 4): Zipf 0.5, oblivious, {tokens} tokens/GPU, 2 us samples")
    print(
        "| sender | time / bound | hot util (mean) | fabric backlog MB (max) | hot queue KB (max) |"
    )
    print("|---|---|---|---|---|")
    for scheduler in ("round_robin", "rate_based"):
        sc = scenario(0.5, "oblivious", scheduler, tokens, 1).with_overrides(
            {"records.timelines": True, "records.timeline_interval_us": 2.0}
        )
        res = fabricsim.run(sc, engine="packet")
        ENGINES.pop()
        tl = res.tables["timeline_backlog"]
        bound = res.summary["cct_lower_bound_s"]
        edges = np.linspace(0.0, max(tl["time_s"].max(), bound) * (1 + 1e-9), bins + 1)
        which = np.digitize(tl["time_s"], edges) - 1
        for b in range(bins):
            part = tl[which == b]
            if not len(part):
                continue
            print(
                f"| {scheduler} | {edges[b] / bound:.2f}-{edges[b + 1] / bound:.2f} "
                f"| {part['hot_utilization'].mean():.3f} | {part['backlog_bytes'].max() / 1e6:.2f} "
                f"| {part['hot_queue_bytes'].max() / 1e3:.0f} |",
                flush=True,
            )


def ablation(tokens: int) -> bool:
    print(
        f"\n3. Ablation: Zipf 0.5, oblivious, {tokens} tokens/GPU (information; RR: every flow's cuts)"
    )
    print("| sender | M from | window floor | CCT us | infl | hot peak KB | trims | NSCC cuts |")
    print("|---|---|---|---|---|---|---|---|")
    ok = True
    floor = pdc_mod.PACED_WINDOW_BASE_RTTS
    rows = [
        ("rate_based", "off", 0.0),
        ("rate_based", "off", floor),
        ("rate_based", "on", 0.0),
        ("rate_based", "on", floor),
        ("round_robin", "on", floor),
    ]
    for scheduler, acks, window in rows:
        pdc_mod.PACED_WINDOW_BASE_RTTS = window
        sc = scenario(0.5, "oblivious", scheduler, tokens, 1)
        r = cell(sc.with_overrides({"workload.pacing_acks": acks}))
        pdc_mod.PACED_WINDOW_BASE_RTTS = floor
        assert not isinstance(r, str), r
        m_from = "data + ACKs" if acks == "on" else "data (paper)"
        if scheduler == "round_robin":
            m_from, shown = "-", "-"
        else:
            shown = f"{window:g} base RTTs" if window else "off"
        print(
            f"| {scheduler} | {m_from} | {shown} | {r['cct_us']:.1f} | {r['infl']:.4f} "
            f"| {r['peak'] / 1e3:.0f} | {r['trims']} | {r['cuts']} |",
            flush=True,
        )
        if scheduler == "rate_based" and acks == "on" and window == floor:
            ok &= r["infl"] <= 1.10 and r["cuts"] == 0
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=160, help="tokens per GPU in the table")
    ap.add_argument("--seeds", type=int, default=1, help="seeds per cell")
    ap.add_argument("--ablation-tokens", type=int, default=512, help="0 skips the ablation")
    args = ap.parse_args(argv)
    _capture_engines()
    t0 = time.perf_counter()
    ok = table(args.tokens, args.seeds)
    over_time(args.tokens)
    if args.ablation_tokens:
        ok &= ablation(args.ablation_tokens)
    print(f"\n{'PASS' if ok else 'FAIL'} in {time.perf_counter() - t0:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
