"""UET delivery modes (``nic.delivery_mode``): each mode's receive rule, retransmission, paths.

Small packet runs (a 2 x 4 x 4 leaf-spine at 100 Gb/s) read through the records: the UET
monitor (every data packet sent, with its entropy), the NIC statistics and the summary.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import fabricsim
from fabricsim._core_build import core_mode
from fabricsim.experiments.runner import build_engine

BASE = {
    "name": "modes",
    "seed": 3,
    "engine": {"kind": "packet"},
    "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 4},
    "workload": {"kind": "incast", "senders": 7, "receiver": 0, "size_bytes": 150_000},
    "switch": {"buffer_bytes": 60_000},
    "records": {"uet_transport_stats": True},
}
PERMUTATION = {"kind": "permutation", "size_bytes": 400_000}


def _run(nic: dict, workload: dict | None = None, **sections: dict) -> fabricsim.Result:
    d = {**BASE, "nic": nic, **sections}
    if workload is not None:
        d["workload"] = workload
    for key, value in BASE.items():
        if isinstance(value, dict) and key in sections:
            d[key] = {**value, **sections[key]}
    return fabricsim.run(fabricsim.load_scenario(d))


def _stats(res: fabricsim.Result) -> dict:
    return res.json_records["uet_transport_stats"]["total"]


def test_the_default_mode_is_the_uet_that_ran_before_it():
    unset = _run({"packet_spraying_type": "oblivious"})
    rud = _run({"packet_spraying_type": "oblivious", "delivery_mode": "rud"})
    assert unset.flows.equals(rud.flows)
    drop = {"config_hash"}
    assert {k: v for k, v in unset.summary.items() if k not in drop} == {
        k: v for k, v in rud.summary.items() if k not in drop
    }
    assert unset.json_records == rud.json_records


def test_rod_places_in_order_only_and_goes_back_n_on_a_nack():
    res = _run({"delivery_mode": "rod"})
    s, st = res.summary, _stats(res)
    assert res.summary["flows_completed"] == 7
    assert st["max_out_of_order_on_flow"] == 0  # nothing is ever held beyond the expected PSN
    assert s["rod_ooo_dropped"] > 0 and s["rod_go_backs"] > 0
    # go-back-N resends what followed the loss too: more than was lost
    assert s["packets_retransmitted"] > s["packets_trimmed"] + s["packets_dropped"]
    rud = _run({"packet_spraying_type": "rod"}).summary  # same single path, RUD's rules
    assert rud["packets_retransmitted"] < s["packets_retransmitted"]


def test_rod_keeps_one_path_and_changes_it_at_most_every_reroute_rtts():
    rtt_us, rtts = 8.0, 3.0
    nic = {"delivery_mode": "rod", "reroute_rtts": rtts, "initial_base_rtt_us": rtt_us}
    marks = {"ecn_min_bytes": 2_000, "ecn_max_bytes": 20_000}
    res = _run(nic, switch=marks, records={"uet_monitor": True})
    assert res.summary["repaths"] > 0
    hold_s = rtts * rtt_us * 1e-6
    mon = res.tables["uet_monitor"].sort_values(["flow_id", "time_s"], kind="stable")
    changed = 0
    for _, rows in mon.groupby("flow_id"):
        ent, t = rows["entropy_value"].to_numpy(), rows["time_s"].to_numpy()
        change = np.flatnonzero(ent[1:] != ent[:-1]) + 1
        assert len(np.unique(ent)) == len(change) + 1  # one value at a time, never back
        # each change comes at least hold_s after the one before it (at the ACK that caused
        # it; the first packet on the new value may leave later, never earlier)
        assert len(change) <= 1 + (t[-1] - t[0]) / hold_s
        changed += len(change)
    assert changed > 0
    # the rule itself: every spraying state's changes, read off the engine after its run
    engine = build_engine(fabricsim.load_scenario({**BASE, "nic": nic, "switch": marks}), "packet")
    engine.run()
    states = {id(p.spray): p.spray for conns in engine.pdcs for p in conns}.values()
    hold_ps = int(rtts * engine.base_rtt_ps)
    gaps = [b - a for s in states for a, b in zip(s.changes, s.changes[1:], strict=False)]
    assert gaps and min(gaps) >= hold_ps


def test_rudi_acks_each_packet_for_itself_and_places_a_resent_copy_again():
    short = {"rto_us": 6.0, "ack_coalesce": 4, "packet_spraying_type": "oblivious"}
    rudi = _run({**short, "delivery_mode": "rudi"})
    rud = _run(short)
    s, st = rudi.summary, _stats(rudi)
    assert s["flows_completed"] == 7 and s["bytes_delivered"] == 7 * 150_000
    assert st["acks_sent"] == st["data_packets_received"]  # no coalescing without state
    assert _stats(rud)["acks_sent"] < _stats(rud)["data_packets_received"]
    # spurious timeouts resend packets that had arrived: placed again under rudi only
    assert s["rudi_duplicates_placed"] == st["duplicates_received"] > 0
    assert "rudi_duplicates_placed" not in rud.summary


def test_uud_sends_once_answers_nothing_and_counts_what_it_lost():
    with pytest.warns(UserWarning, match="did not complete"):
        res = _run({"delivery_mode": "uud", "packet_spraying_type": "oblivious"})
    s, st = res.summary, _stats(res)
    assert s["packets_sent"] == 7 * -(-150_000 // 4096)  # each PSN once
    assert s["packets_retransmitted"] == s["timeouts"] == 0
    assert st["acks_sent"] == st["nacks_sent"] == 0
    assert s["uud_packets_lost"] == s["packets_trimmed"] + s["packets_dropped"] > 0
    unfinished = res.flows[res.flows["finish_s"].isna()]
    assert len(unfinished) == s["flows_not_completed"] > 0
    assert s["not_completed_reason"] == "packets lost, not retransmitted (nic.delivery_mode uud)"


def test_uud_completes_what_loses_nothing_as_fast_as_rud():
    spray = {"packet_spraying_type": "oblivious"}
    uud = _run({**spray, "delivery_mode": "uud"}, PERMUTATION).summary
    rud = _run(spray, PERMUTATION).summary
    assert uud["flows_completed"] == uud["flows_total"] == rud["flows_completed"]
    assert uud["acks_sent"] == 0 < rud["acks_sent"]
    assert uud["fct_max_s"] <= rud["fct_max_s"] * 1.05


def test_rod_takes_its_spraying_type_and_the_others_keep_todays():
    load = fabricsim.load_scenario
    assert load({**BASE, "nic": {"delivery_mode": "rod"}}).nic.packet_spraying_type == "rod"
    ark = {**BASE, "lb": {"policy": "pinned"}, "nic": {"delivery_mode": "rod"}}
    assert load(ark).nic.packet_spraying_type == "rod"
    for mode in ("rud", "rudi", "uud"):
        got = load({**BASE, "nic": {"delivery_mode": mode}}).nic.packet_spraying_type
        assert got == load(BASE).nic.packet_spraying_type


def test_a_delivery_mode_under_roce_is_refused_in_one_line():
    from fabricsim.errors import EngineRefusal
    from fabricsim.experiments.engines import check_supported

    nic = {"transport": "roce", "delivery_mode": "rod"}
    sc = fabricsim.load_scenario({**BASE, "nic": nic, "switch": {"pfc": False}})
    with pytest.raises(EngineRefusal, match=r"nic.delivery_mode=rod is read only when") as exc:
        check_supported(sc, "packet")
    assert "\n" not in str(exc.value)


MODES_RUN = """
import json, warnings
import fabricsim
from fabricsim._core_build import core_mode
from fabricsim.experiments.runner import build_engine
warnings.simplefilter("ignore")
out = {"mode": core_mode()}
for mode in ("rud", "rod", "rudi", "uud"):
    spray = {} if mode == "rod" else {"packet_spraying_type": "oblivious"}
    sc = fabricsim.load_scenario({
        "name": "modes", "seed": 5, "engine": {"kind": "packet"},
        "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 4},
        "workload": {"kind": "incast", "senders": 7, "receiver": 0, "size_bytes": 150_000},
        "switch": {"buffer_bytes": 60_000}, "nic": {"delivery_mode": mode, "rto_us": 8, **spray},
        "records": {"uet_transport_stats": True}})
    res = fabricsim.run(sc)
    out[mode] = {"summary": res.summary, "flows": res.flows.astype(str).to_dict("list"),
                 "stats": res.json_records["uet_transport_stats"]}
print(json.dumps(out, sort_keys=True))
"""


@pytest.mark.full
@pytest.mark.skipif(core_mode() == "pure", reason="no compiled core in this install")
def test_every_mode_gives_the_same_results_compiled_and_pure():
    def run(pure: bool) -> dict:
        env = {**os.environ, "FABRICSIM_PURE": "1" if pure else ""}
        cmd = [sys.executable, "-c", MODES_RUN]
        return json.loads(
            subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
        )

    compiled, pure = run(False), run(True)
    assert compiled["mode"] == "compiled" and pure["mode"] == "pure"
    assert {**compiled, "mode": ""} == {**pure, "mode": ""}
