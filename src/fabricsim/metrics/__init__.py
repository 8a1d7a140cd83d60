"""Output tables, summaries and workload-specific summary keys."""

from fabricsim.metrics.results import Result, dumps_json, load_run, percentiles

__all__ = ["Result", "dumps_json", "load_run", "percentiles"]
