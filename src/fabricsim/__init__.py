"""fabricsim: how will this fabric, this load balancing and this scheduler treat my AI traffic?

Examples
--------
>>> import fabricsim
>>> sc = fabricsim.load_scenario("ecmp-collision").with_overrides({"seed": 3})
>>> res = fabricsim.run(sc, engine="flow")
>>> 0 < res.summary["step_efficiency"] <= 1
True
"""

from fabricsim import _core_build

_core_build.install()  # before anything imports a compiled module (FABRICSIM_PURE, stale builds)

from fabricsim.config import Scenario, builtin_names, load_scenario  # noqa: E402
from fabricsim.errors import ConfigError, EngineRefusal, FabricsimError  # noqa: E402
from fabricsim.experiments.paired import study  # noqa: E402
from fabricsim.experiments.sweep import sweep  # noqa: E402
from fabricsim.metrics import Result  # noqa: E402
from fabricsim.runner import run  # noqa: E402

__version__ = "0.1.0"
__all__ = [
    "ConfigError",
    "EngineRefusal",
    "FabricsimError",
    "Result",
    "Scenario",
    "builtin_names",
    "load_scenario",
    "run",
    "study",
    "sweep",
]
