"""qp_scaling's one-path warning is said exactly when a peer's QPs take one path (issue 37,
item 5): with ``lb.qp_field=dst_qp`` and ``dst_qp`` in ``switch.hash_fields`` the QPs of a PDC
group take their own paths, so no warning."""

import warnings

import pytest

import fabricsim

HASH_QP = ["src_ip", "dst_ip", "src_port", "dst_port", "proto", "dst_qp"]
QPS = {"lb.policy": "qp_scaling", "lb.qp_count": 4, "lb.qp_mode": "split",
       "workload.size_bytes": 100_000}  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ({"lb.qp_field": "src_port"}, "share their PDC group's source port"),
        ({"lb.qp_field": "src_port", "nic.pdc_groups_enabled": False}, None),
        ({"lb.qp_field": "dst_qp", "switch.hash_fields": HASH_QP}, None),
        ({"lb.qp_field": "dst_qp"}, "switch.hash_fields does not include"),
        ({"lb.qp_field": "dst_qp", "nic.pdc_groups_enabled": False}, "does not include"),
    ],
)
def test_the_warning_is_said_exactly_when_the_qps_share_one_path(extra, needle):
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides({**QPS, **extra})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fabricsim.run(sc, engine="packet")
    said = sorted({str(w.message) for w in caught if "one path" in str(w.message)})
    paths = (res.flows["path"].str.count(";") + 1).tolist()
    if needle is None:
        assert said == [] and min(paths) >= 2, (said, paths)  # several paths: nothing to warn
    else:
        assert len(said) == 1 and needle in said[0] and "\n" not in said[0]
        assert paths == [1] * len(paths)  # what it says is what happened
