"""Which UDP source ports put a flow on each spine (the inverse ECMP hash), and polarization.

Run: python examples/inverse_hash.py
"""

import numpy as np

import fabricsim
from fabricsim.experiments.runner import fabric_of, router_of


def main() -> None:
    for method in ("crc32WithSalt", "crc32"):
        sc = fabricsim.load_scenario("permutation").with_overrides({"switch.hash_method": method})
        fab = fabric_of(sc)
        router = router_of(sc, fab)
        per_path = router.ports_per_path(0, fab.num_hosts - 1)
        sizes = np.array([len(p) for p in per_path.values()])
        print(
            f"{method:14s} {len(sizes)} paths, ports per path min {sizes.min()} "
            f"max {sizes.max()}, unreachable paths {(sizes == 0).sum()}"
        )


if __name__ == "__main__":
    main()
