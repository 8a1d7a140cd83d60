"""The flow-level engine (max-min fair sharing, rate caps, multipath flows)."""

from fabricsim.flowsim.engine import FlowEngine
from fabricsim.flowsim.maxmin import maxmin_rates

__all__ = ["FlowEngine", "maxmin_rates"]
