"""Round robin vs rate-based MoE senders on the packet engine (``003_*.txt``), in a few seconds.

The built-in ``moe`` scenario reduced to 32 GPUs and 64 tokens per GPU; for each load balancer,
both senders' CCT inflation (CCT over its 100 %-utilization lower bound), the hot receiver's
peak queue and utilization.  The full 64-GPU table: ``python scripts/verify_moe_packet.py``.

Run: python examples/moe_schedulers.py
"""

import fabricsim

LB = {
    "oblivious": {"nic.packet_spraying_type": "oblivious"},
    "reps": {"nic.packet_spraying_type": "reps"},
}


def main() -> None:
    base = fabricsim.load_scenario("moe").with_overrides(
        {"topology.leaves": 4, "workload.tokens_per_gpu": 64, "records.port_stats": True}
    )
    print("LB         sender       CCT us  inflation  hot peak KB  hot util  trims")
    for lb, keys in LB.items():
        for scheduler in ("round_robin", "rate_based"):
            res = fabricsim.run(base.with_overrides({**keys, "workload.scheduler": scheduler}))
            s = res.summary
            print(
                f"{lb:10s} {scheduler:11s} {s['cct_s'] * 1e6:7.1f}  {s['cct_inflation']:9.4f}  "
                f"{s['hot_receiver_peak_queue_bytes'] / 1e3:11.0f}  "
                f"{s['hot_receiver_utilization']:8.3f}  {s['packets_trimmed']:5d}"
            )


if __name__ == "__main__":
    main()
