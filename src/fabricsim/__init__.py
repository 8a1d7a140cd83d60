"""fabricsim: how will this fabric, this load balancing and this scheduler treat my AI traffic?

Examples
--------
>>> import fabricsim
>>> sc = fabricsim.load_scenario("ecmp-collision").with_overrides({"seed": 3})
>>> res = fabricsim.run(sc, engine="flow")
>>> 0 < res.summary["step_efficiency"] <= 1
True
"""

from fabricsim.config import Scenario, builtin_names, load_scenario
from fabricsim.errors import ConfigError, EngineRefusal, FabricsimError
from fabricsim.metrics import Result
from fabricsim.runner import run

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
]
