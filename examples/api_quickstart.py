"""The Python API in a few lines: load, override, run on the flow engine, save.

Run: python examples/api_quickstart.py [OUT_DIR]
"""

import sys
import tempfile

import fabricsim


def main(out_dir: str) -> None:
    sc = fabricsim.load_scenario("ecmp-collision")
    for policy in ("ecmp", "ideal_spray"):
        res = fabricsim.run(sc.with_overrides({"lb.policy": policy, "seed": 3}), engine="flow")
        print(
            f"{policy:12s} step efficiency {res.summary['step_efficiency']:.3f}, "
            f"max FCT {res.summary['fct_max_s'] * 1e6:.1f} us"
        )
        res.save(f"{out_dir}/{policy}")
    print(res.flows[["flow_id", "src", "dst", "path", "fct_s"]].head(3).to_string(index=False))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
