"""fabricsim: how will this fabric, this load balancing and this scheduler treat my AI traffic?

Examples
--------
>>> import fabricsim
>>> sc = fabricsim.load_scenario("ecmp-collision").with_overrides({"seed": 3})
>>> res = fabricsim.run(sc, engine="flow")
>>> 0 < res.summary["step_efficiency"] <= 1
True
>>> import tempfile
>>> fabricsim.load_run(res.save(tempfile.mkdtemp() + "/run")).summary == res.summary
True
"""

import os as _os
import sys as _sys
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

if "numpy" not in _sys.modules:
    # perf: OpenBLAS (numpy's BLAS) starts its worker threads when numpy is imported and each
    # busy-waits 2^28 cycles (~0.1 s of a core) for work before it sleeps; fabricsim gives it
    # none on its start-up path, and on a busy 2-core machine that spinning took 55-70 ms of
    # CPU from every run.  The timeout only sets how long an idle worker spins before it
    # sleeps (2^4 cycles here): the number of threads, and so every BLAS result, is
    # unchanged.  A value the user set is kept.
    _os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

from fabricsim import _core_build

_core_build.install()  # before anything imports a compiled module (FABRICSIM_PURE, stale builds)

from fabricsim._compat import LazyModule as _LazyModule  # noqa: E402
from fabricsim.config import Scenario, builtin_names, load_scenario  # noqa: E402
from fabricsim.errors import ConfigError, EngineRefusal, FabricsimError  # noqa: E402
from fabricsim.experiments.runner import run  # noqa: E402
from fabricsim.metrics import Result, load_run  # noqa: E402

if _TYPE_CHECKING:
    from fabricsim.experiments.paired import study
    from fabricsim.experiments.sweep import sweep
else:
    # perf: ``study`` and ``sweep`` are imported when first read (``fabricsim.study``, ``from
    # fabricsim import sweep``): a single run needs neither their planner, nor their process
    # pool, nor the sweep store
    _LAZY = {
        "study": _LazyModule("fabricsim.experiments.paired"),
        "sweep": _LazyModule("fabricsim.experiments.sweep"),
    }

    def __getattr__(name: str) -> _Any:
        """``study`` and ``sweep``, imported on first use (PEP 562)."""
        if name not in _LAZY:
            raise AttributeError(f"module 'fabricsim' has no attribute {name!r}")
        value = globals()[name] = getattr(_LAZY[name], name)
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_LAZY})


__version__ = "0.1.0"
__all__ = [
    "ConfigError",
    "EngineRefusal",
    "FabricsimError",
    "Result",
    "Scenario",
    "builtin_names",
    "load_run",
    "load_scenario",
    "run",
    "study",
    "sweep",
]
