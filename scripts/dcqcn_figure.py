"""The DCQCN figure of ``docs/dcqcn.md``: two flows on one 100 Gbps bottleneck, a third joins.

Runs ``examples/dcqcn_share.yaml`` (the scenario of ``tests/unit/test_roce.py``: RoCEv2, PFC,
DCQCN defaults) and plots each flow's sending rate (in 250 us windows) and the bottleneck queue
with the ECN thresholds.

Run: ``python scripts/dcqcn_figure.py [OUT.png]`` (default ``docs/dcqcn_convergence.png``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import fabricsim  # noqa: E402
from fabricsim.config.roce import dcqcn_ecn_bytes  # noqa: E402

WINDOW_S = 250e-6
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "dcqcn_share.yaml"


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/dcqcn_convergence.png")
    sc = fabricsim.load_scenario(EXAMPLE)
    res = fabricsim.run(sc)
    wire = sc.nic.rdma_data_mss + sc.nic.header_bytes
    sent = res.tables["uet_monitor"]
    win = (sent.time_s // WINDOW_S).astype(int)
    rate = sent.groupby([win, sent.flow_id]).size().unstack(fill_value=0) * wire * 8 / WINDOW_S
    tl = res.tables["timeline_links"]
    q = tl[tl.link == "leaf1->host4"]
    kmin, kmax = dcqcn_ecn_bytes(100e9)
    fig, (a, b) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for flow in rate.columns:
        a.plot(rate.index * WINDOW_S * 1e3, rate[flow] / 1e9, label=f"flow {flow}")
    a.axhline(50, color="grey", ls=":", lw=1)
    a.axhline(100 / 3, color="grey", ls=":", lw=1)
    a.set_ylabel("sending rate, Gbps (250 us)")
    a.legend(loc="upper right")
    a.set_title("DCQCN (defaults), RoCEv2 + PFC: two flows into one 100 Gbps port, a third at 4 ms")
    b.plot(q.time_s * 1e3, q.queue_bytes / 1e3, lw=0.8)
    for k, name in ((kmin, "ECN min"), (kmax, "ECN max")):
        b.axhline(k / 1e3, color="red", ls="--", lw=1)
        b.text(0.1, k / 1e3, name, color="red", va="bottom")
    b.set_ylabel("bottleneck queue, KB")
    b.set_xlabel("time, ms")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
