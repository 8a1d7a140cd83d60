# C types of cc/nscc.py for the compiled build (setup.py; the .py is the implementation).
# Keep in step with nscc.py: every attribute the class sets, every method the hot path calls.
cimport cython
from fabricsim.cc.base cimport CongestionControl

cdef class Nscc(CongestionControl):
    cdef public object nscc
    cdef public double avg_delay_ps, pending_increase_bytes, max_cwnd_bytes
    cdef public long long _samples, decreases, quick_adapts, fast_increases
    cdef public long long acked_in_period_bytes, _near_zero_bytes, _acked_since_apply
    cdef public object _apply_start_ps, _period_start_ps, _last_md_ps, qa_gate_bytes
    cdef public bint fast_increase, _qa_armed
    cdef public long long _hold_until_ps, _md_gap_ps, _additive_ps

    cpdef on_ack(self, long long now_ps, long long acked_bytes, object rtt_ps, bint ecn,
                 long long inflight_bytes)
    cpdef on_nack(self, long long now_ps, long long nacked_bytes, object rtt_ps=*)
    cpdef on_timeout(self, long long now_ps)
    cpdef _tick(self, long long now_ps)
    @cython.locals(achieved=cython.double)
    cpdef _quick_adapt(self, long long now_ps)
    @cython.locals(delay=cython.longlong)
    cpdef _on_sample(self, long long now_ps, long long acked_bytes, long long rtt_ps, bint ecn)
    @cython.locals(high=cython.bint)
    cpdef _act(self, long long now_ps, long long acked_bytes, long long delay, bint ecn)
    cpdef _lower_base_rtt(self, long long rtt_ps)
    cpdef _average(self, double delay_ps)
    cpdef _proportional_increase(self, long long acked_bytes, long long delay_ps)
    cpdef _multiplicative_decrease(self, long long now_ps, long long rtt_ps)
    cpdef _on_loss(self, long long now_ps, long long lost_bytes)
    cpdef _maybe_apply(self, long long now_ps)
    cpdef _restart_increase(self, long long now_ps)
    cpdef _stop_fast_increase(self)
    cpdef _clamp(self)
