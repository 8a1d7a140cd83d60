# C types of cc/dcqcn.py for the compiled build (setup.py; the .py is the implementation).
# Keep in step with dcqcn.py: every attribute the class sets, every method the hot path calls.
cimport cython
from fabricsim.cc.base cimport CongestionControl

cdef class Dcqcn(CongestionControl):
    cdef public bint clamp, held
    cdef public double rate_bps, line_bps, target_bps, alpha, g, ai_bps, hai_bps, min_bps
    cdef public long long alpha_ps, timer_ps, dec_ps, bytes_per_event, frs, alpha_at, timer_at
    cdef public long long dec_at, t_events, b_events, sent_bytes, cnps, decreases
    cdef public long long increase_events, hyper_events

    @cython.locals(alpha=cython.double)
    cpdef on_cnp(self, long long now_ps)
    cpdef on_send(self, long long now_ps, long long wire_bytes)
    cpdef on_ack(self, long long now_ps, long long acked_bytes, object rtt_ps, bint ecn,
                 long long inflight_bytes)
    cpdef on_timeout(self, long long now_ps)
    cpdef _catch_up(self, long long now_ps)
    @cython.locals(at=cython.longlong, n=cython.longlong)
    cpdef _decay_alpha(self, long long now_ps)
    @cython.locals(rate=cython.double)
    cpdef _cut(self, long long now_ps)
    @cython.locals(t=cython.longlong, b=cython.longlong)
    cpdef _increase(self, bint byte_event)
    @cython.locals(low=cython.longlong, line=cython.double)
    cpdef tuple _step(self, double rate, double target, long long t, long long b)
    @cython.locals(at=cython.longlong, t=cython.longlong, b=cython.longlong, bits=cython.double,
                   done=cython.double, spent=cython.double, need=cython.double)
    cpdef double _gap_rate(self, long long now_ps, long long wire_bytes)
